import os from 'node:os';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { test } from 'node:test';
import { tempDir } from '../helpers/db.js';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

test('pier serve: healthz, security headers, one log line per request without secrets or bodies', async () => {
  const port = await freePort();
  const env = { ...process.env, PIER_DATA_DIR: tempDir(), PIER_HTTP_PORT: String(port), PIER_LOG_LEVEL: 'info' };
  const reg = spawnSync(process.execPath, ['bin/pier.js', 'staff', 'register', 'log-check', '--name', 'Log', '--json'], { env, encoding: 'utf8' });
  const { editToken } = JSON.parse(reg.stdout);
  const child = spawn(process.execPath, ['bin/pier.js', 'serve', '--only', 'web'], { env });
  let out = '';
  child.stdout.on('data', (c) => {
    out += c;
  });
  child.stderr.on('data', (c) => {
    out += c;
  });
  try {
    const base = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 100 && !/listening/.test(out); i++) await new Promise((r) => setTimeout(r, 100));
    const health = await fetch(`${base}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok' });
    assert.equal(health.headers.get('x-content-type-options'), 'nosniff');
    assert.match(String(health.headers.get('content-security-policy')), /default-src 'self'/);
    assert.ok(health.headers.get('strict-transport-security'));

    const secretText = 'SECRET-BODY-CONTENT-42';
    const ok = await fetch(`${base}/api/products/log-check?dryRun=true`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${editToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ description: secretText }),
    });
    assert.equal(ok.status, 200);
    const bad = await fetch(`${base}/api/products/log-check`, {
      method: 'PATCH',
      headers: { authorization: 'Bearer pier_et_guessed-token-value', 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(bad.status, 401);
    const notFound = await fetch(`${base}/nope`);
    assert.equal(notFound.status, 404);
    assert.match(String(notFound.headers.get('content-type')), /application\/problem\+json/);
    // The log lines are written after each answer: wait for the fourth, however slow the machine.
    for (let i = 0; i < 600 && (out.match(/"msg":"request"/g) ?? []).length < 4; i++) await new Promise((r) => setTimeout(r, 50));
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
  const requests = out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === 'request');
  assert.deepEqual(
    requests.map((r) => `${r.method} ${r.path} ${r.status}`),
    ['GET /healthz 200', 'PATCH /api/products/log-check 200', 'PATCH /api/products/log-check 401', 'GET /nope 404'],
  );
  assert.doesNotMatch(out, new RegExp(editToken));
  assert.doesNotMatch(out, /guessed-token-value|SECRET-BODY-CONTENT|dryRun|authorization/i);
});

test('npm start ends with where each part listens, what to open and what is left to set up', async () => {
  const [http, downloads, sftp, runner] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PIER_DATA_DIR: tempDir(),
    PIER_HTTP_PORT: String(http),
    PIER_DOWNLOAD_PORT: String(downloads),
    PIER_SFTP_PORT: String(sftp),
    RUNNER_PORT: String(runner),
    PIER_LOG_LEVEL: 'warn',
  };
  delete env.API_KEY;
  delete env.PIER_BASE_URL;
  delete env.PIER_DOWNLOAD_URL;
  delete env.RUNNER_URL;
  const startOnce = async (extra: NodeJS.ProcessEnv) => {
    const child = spawn(process.execPath, ['bin/pier.js', 'serve'], { env: { ...env, ...extra } });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    try {
      for (let i = 0; i < 300 && !/Next steps:[\s\S]*\n\n/.test(out) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 100));
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    return out;
  };
  const first = await startOnce({});
  assert.match(first, new RegExp(`publishing site +http://localhost:${http}/`));
  assert.match(first, new RegExp(`download host +http://localhost:${downloads}/`));
  assert.match(first, new RegExp(`SFTP +sftp -P ${sftp} <product-id>@localhost`));
  assert.match(first, new RegExp(`runner +http://localhost:${runner}/ \\(API docs: http://localhost:${runner}/api/docs\\)`));
  assert.match(first, /Next steps:/);
  assert.match(first, /npx pier staff register <product-id> --name/, 'no product yet');
  assert.match(first, /no admin key configured \(API_KEY is unset\)/);
  assert.match(first, /npx pier runner user add --email .* --admin/);
  // Once a product exists and the admin key is set, those steps are not repeated.
  assert.equal(spawnSync(process.execPath, ['bin/pier.js', 'staff', 'register', 'first-one', '--name', 'First'], { env }).status, 0);
  const second = await startOnce({ API_KEY: 'k'.repeat(40) });
  assert.doesNotMatch(second, /staff register <product-id>|no admin key configured/);
  assert.match(second, /runner admin key is set/);
});

test('beside other parts the download host runs in a process of its own, which ends with pier serve, even killed', async () => {
  const [http, downloads] = await Promise.all([freePort(), freePort()]);
  const dataDir = tempDir();
  const env = { ...process.env, PIER_DATA_DIR: dataDir, PIER_HTTP_PORT: String(http), PIER_DOWNLOAD_PORT: String(downloads), PIER_LOG_LEVEL: 'warn' };
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const child = spawn(process.execPath, ['bin/pier.js', 'serve', '--only', 'web,downloads'], { env });
  let out = '';
  child.stderr.on('data', (c) => {
    out += c;
  });
  const exited = new Promise((r) => child.once('exit', r));
  let own = 0;
  try {
    for (let i = 0; i < 600 && !/Next steps/.test(out); i++) await new Promise((r) => setTimeout(r, 100));
    const m = /pier: downloads listening on http:\/\/127\.0\.0\.1:(\d+) \(public URL [^)]*\) \(own process (\d+)\)/.exec(out);
    assert.ok(m, out);
    assert.equal(Number(m[1]), downloads);
    own = Number(m[2]);
    assert.notEqual(own, child.pid);
    assert.equal((out.match(/downloads listening/g) ?? []).length, 1, out);
    // The process answers downloads, and it is `pier serve --only downloads`.
    assert.equal((await fetch(`http://127.0.0.1:${downloads}/no-such-product/assets/x`)).status, 404);
    const { readFileSync } = await import('node:fs');
    assert.match(readFileSync(`/proc/${own}/cmdline`, 'utf8').split('\0').join(' '), /serve --only downloads/);
    // When the CPU is short, downloads come first: every thread of pier serve's own process
    // (those V8 started before our code ran too) runs nicer than the download host's process.
    const { readdirSync } = await import('node:fs');
    const nices = (pid: number) => readdirSync(`/proc/${pid}/task`).map((tid) => os.getPriority(Number(tid)));
    const base = os.getPriority();
    assert.deepEqual([...new Set(nices(own))], [base], 'the download host keeps the priority pier serve was started with');
    const serving = nices(child.pid as number);
    assert.ok(serving.length > 1 && serving.every((n) => n >= base + 5), `threads of pier serve at nice ${serving.join(', ')}`);
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
  for (let i = 0; i < 100 && alive(own); i++) await new Promise((r) => setTimeout(r, 100));
  const outlived = alive(own);
  if (outlived) process.kill(own, 'SIGKILL');
  assert.equal(outlived, false, 'the download host outlived pier serve');
});

test('beside the web part the SFTP server runs in a process of its own, at a lower priority than pages, and ends with pier serve', async () => {
  const [http, sftp] = await Promise.all([freePort(), freePort()]);
  const env = { ...process.env, PIER_DATA_DIR: tempDir(), PIER_HTTP_PORT: String(http), PIER_SFTP_PORT: String(sftp), PIER_LOG_LEVEL: 'warn' };
  const child = spawn(process.execPath, ['bin/pier.js', 'serve', '--only', 'web,sftp'], { env });
  let out = '';
  child.stderr.on('data', (c) => {
    out += c;
  });
  const exited = new Promise((r) => child.once('exit', r));
  let own = 0;
  try {
    for (let i = 0; i < 600 && !/Next steps/.test(out); i++) await new Promise((r) => setTimeout(r, 100));
    const m = /pier: sftp listening on sftp:\/\/[^:]+:(\d+) \(own process (\d+)\)/.exec(out);
    assert.ok(m, out);
    assert.equal(Number(m[1]), sftp);
    own = Number(m[2]);
    assert.notEqual(own, child.pid);
    // Its host key is still said once, for vendors to compare.
    assert.equal((out.match(/pier: sftp host key /g) ?? []).length >= 1, true, out);
    const { readFileSync, readdirSync } = await import('node:fs');
    assert.match(readFileSync(`/proc/${own}/cmdline`, 'utf8').split('\0').join(' '), /serve --only sftp/);
    // The SSH server answers there.
    const banner = await new Promise<string>((resolve, reject) => {
      const s = net.connect(sftp, '127.0.0.1');
      s.once('data', (d) => {
        resolve(d.toString());
        s.destroy();
      });
      s.once('error', reject);
    });
    assert.match(banner, /^SSH-2\.0-/);
    // Pages keep the priority pier serve started with; every thread of the SFTP process yields to them.
    const nices = (pid: number) => readdirSync(`/proc/${pid}/task`).map((tid) => os.getPriority(Number(tid)));
    const base = os.getPriority();
    assert.deepEqual([...new Set(nices(child.pid as number))], [base]);
    const sftpNices = nices(own);
    assert.ok(sftpNices.length > 1 && sftpNices.every((n) => n >= base + 10), `threads of the SFTP process at nice ${sftpNices.join(', ')}`);
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (let i = 0; i < 100 && alive(own); i++) await new Promise((r) => setTimeout(r, 100));
  const outlived = alive(own);
  if (outlived) process.kill(own, 'SIGKILL');
  assert.equal(outlived, false, 'the SFTP server outlived pier serve');
});

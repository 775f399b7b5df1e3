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
    await new Promise((r) => setTimeout(r, 200));
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

// SIGTERM drains: a 200 MB download and an SFTP upload in flight when `pier serve`'s process
// group gets SIGTERM both complete, byte for byte; for PIER_DRAIN_DELAY_SECONDS the listeners stay
// open and /readyz answers 503 on every HTTP listener (a balancer probing it sees that), then
// nothing new is taken; the process says when it starts draining and when it stopped.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/infra/config.js';
import { startDraining } from '../../src/infra/readiness.js';
import { createPublishingService } from '../../src/publishing/service.js';
import { freePort } from '../helpers/net.js';
import { tempDir } from '../helpers/db.js';
import { needsTool } from '../helpers/tools.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
/** PIER_DRAIN_DELAY_SECONDS of the served process. */
const DELAY_S = 3;

describe('pier serve drains on SIGTERM', () => {
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let child: ChildProcess;
  let out = '';
  let ports: { web: number; downloads: number; sftp: number };
  let creds: { username: string; password: string };
  const big = randomBytes(200 * 1024 * 1024);

  before(async () => {
    dataDir = tempDir('pier-drain-');
    ports = { web: await freePort(), downloads: await freePort(), sftp: await freePort() };
    env = {
      ...process.env,
      PIER_DATA_DIR: dataDir,
      PIER_HTTP_PORT: String(ports.web),
      PIER_DOWNLOAD_PORT: String(ports.downloads),
      PIER_SFTP_PORT: String(ports.sftp),
      PIER_LOG_LEVEL: 'info',
      PIER_DRAIN_SECONDS: '60',
      PIER_DRAIN_DELAY_SECONDS: String(DELAY_S),
    };
    const reg = spawnSync(process.execPath, ['bin/pier.js', 'staff', 'register', 'drain-ext', '--name', 'Drain', '--json'], { env, encoding: 'utf8' });
    assert.equal(reg.status, 0, reg.stderr);
    creds = JSON.parse(reg.stdout).sftp;
    const assets = path.join(dataDir, 'storage/drain-ext/assets');
    fs.mkdirSync(assets, { recursive: true });
    fs.writeFileSync(path.join(assets, 'big.zip'), big);
    // A process group of its own: SIGTERM goes to the whole group, as systemd sends it
    // (KillMode=control-group), so the download host's own process gets it twice.
    child = spawn(process.execPath, ['bin/pier.js', 'serve', '--only', 'web,downloads,sftp'], { env, detached: true });
    child.stdout!.on('data', (c) => {
      out += c;
    });
    child.stderr!.on('data', (c) => {
      out += c;
    });
    for (let i = 0; i < 300 && (out.match(/pier: \w+ listening on/g) ?? []).length < 3; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal((out.match(/pier: \w+ listening on/g) ?? []).length, 3, out);
  });

  after(() => {
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('a 200 MB download and an SFTP upload in flight both complete; then the process ends', { timeout: 120_000 }, async () => {
    needsTool('sshpass');
    needsTool('sftp');
    // The download: read slowly, so it is still running when SIGTERM comes.
    const downloaded: Promise<Buffer> = new Promise((resolve, reject) => {
      http
        .get(`http://127.0.0.1:${ports.downloads}/assets/drain-ext/big.zip`, { agent: false }, (res) => {
          assert.equal(res.statusCode, 200);
          const chunks: Buffer[] = [];
          let got = 0;
          res.on('data', (c: Buffer) => {
            chunks.push(c);
            got += c.length;
            // Slowly at first: pause 10 ms per MiB for the first 20 MiB.
            if (got < 20 * 1024 * 1024) {
              res.pause();
              setTimeout(() => res.resume(), 10);
            }
          });
          res.on('end', () => resolve(Buffer.concat(chunks)));
          res.on('error', reject);
        })
        .on('error', reject);
    });
    // The upload: a 60 MB file through OpenSSH's sftp, limited to 20 MB/s (-l is in Kbit/s).
    const upload = path.join(dataDir, 'upload.zip');
    const uploadBytes = randomBytes(60 * 1024 * 1024);
    fs.writeFileSync(upload, uploadBytes);
    const sftp = spawn(
      'sshpass',
      ['-e', 'sftp', '-oBatchMode=no', '-oStrictHostKeyChecking=no', '-oUserKnownHostsFile=/dev/null', '-l', '160000', '-P', String(ports.sftp), '-b', '-', `${creds.username}@127.0.0.1`],
      { env: { ...process.env, SSHPASS: creds.password }, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let sftpErr = '';
    sftp.stderr.on('data', (c) => {
      sftpErr += c;
    });
    sftp.stdin.end(`put ${upload} /update-site/5.4.zip\n`);
    const sftpDone = new Promise<number>((r) => sftp.once('exit', (code) => r(code ?? -1)));
    // Both under way (the upload's temporary file exists), then SIGTERM.
    const siteDir = path.join(dataDir, 'storage/drain-ext/update-site');
    for (let i = 0; i < 200; i++) {
      if (fs.existsSync(siteDir) && fs.readdirSync(siteDir).some((n) => n.startsWith('.'))) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const signalled = Date.now();
    process.kill(-child.pid!, 'SIGTERM');
    // For the drain delay both HTTP listeners (the download host runs in a process of its own)
    // still take connections: /readyz answers 503, everything else as usual.
    await new Promise((r) => setTimeout(r, 300));
    for (const port of [ports.web, ports.downloads]) {
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      assert.equal(ready.status, 503, `port ${port}`);
      assert.equal((await ready.json()).code, 'not_ready');
      assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
    }
    assert.ok(Date.now() - signalled < DELAY_S * 1000, 'probed within the delay');
    for (let i = 0; i < 50 && !/pier: draining \(SIGTERM/.test(out); i++) await new Promise((r) => setTimeout(r, 50));
    assert.match(out, /pier: draining \(SIGTERM; web, downloads, sftp\): \/readyz answers 503; listeners close in 3 s/);
    assert.match(out, /pier: draining \(SIGTERM; downloads\)/, "the download host's own process says so too");
    // Then new connections are refused while the transfers finish.
    await new Promise((r) => setTimeout(r, DELAY_S * 1000 + 500 - (Date.now() - signalled)));
    await assert.rejects(fetch(`http://127.0.0.1:${ports.web}/healthz`), 'the web listener takes no new connection after the delay');
    const [body, sftpCode, code] = await Promise.all([downloaded, sftpDone, exited]);
    assert.equal(body.length, big.length);
    assert.equal(sha(body), sha(big), 'the download completed byte for byte');
    assert.equal(sftpCode, 0, `the upload completed: ${sftpErr}\n${out.slice(-3000)}`);
    const stored = fs.readFileSync(path.join(siteDir, '5.4.zip'));
    assert.equal(sha(stored), sha(uploadBytes), 'the uploaded file is stored whole');
    assert.equal(code, 0, out.slice(-2000));
    assert.match(out, /pier: stopped \(web, downloads, sftp\)\n/);
  });
});

test('/readyz: 200 while the database answers, 503 with a reason once the process drains', async () => {
  const config = loadConfig({ PIER_DATA_DIR: tempDir('pier-readyz-'), PIER_LOG_LEVEL: 'silent' });
  const svc = await createPublishingService(config);
  try {
    const ready = await svc.app.inject({ url: '/readyz' });
    assert.equal(ready.statusCode, 200);
    assert.deepEqual(ready.json(), { status: 'ready' });
    startDraining();
    const draining = await svc.app.inject({ url: '/readyz' });
    assert.equal(draining.statusCode, 503);
    assert.equal(draining.json().code, 'not_ready');
    assert.match(draining.json().detail, /draining/);
    assert.equal(draining.headers['cache-control'], 'no-store');
    // Liveness is not readiness: the process still answers.
    assert.equal((await svc.app.inject({ url: '/healthz' })).statusCode, 200);
  } finally {
    await svc.close();
  }
});

// `pier serve` on its default SQLite file: the web part and the SFTP part write the same database
// from one process. With a handle each, a PATCH that came while an upload committed could wait
// synchronously for the write lock the other handle held while it waited for the event loop, and
// end with SQLITE_BUSY as a 500 (about one PATCH in six under an upload loop). Both parts share one
// handle now; every PATCH during a steady upload loop is answered 200.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { freePort } from '../helpers/net.js';
import { tempDir } from '../helpers/db.js';
import { hasTool } from '../helpers/tools.js';

test('PATCHes during an SFTP upload loop on one SQLite file: all 200, none 5xx', { timeout: 120_000 }, async (t) => {
  if (!hasTool('sshpass') || !hasTool('sftp')) return t.skip('sshpass and OpenSSH sftp are needed');
  const dataDir = tempDir('pier-sqlite-writers-');
  const [web, sftpPort] = [await freePort(), await freePort()];
  const env = { ...process.env, PIER_DATA_DIR: dataDir, PIER_HTTP_PORT: String(web), PIER_SFTP_PORT: String(sftpPort), PIER_LOG_LEVEL: 'warn', PIER_CRAWL_SETTLE_SECONDS: '0' };
  const reg = spawnSync(process.execPath, ['bin/pier.js', 'staff', 'register', 'writers', '--name', 'Writers', '--json'], { env, encoding: 'utf8' });
  assert.equal(reg.status, 0, reg.stderr);
  const { editToken, sftp: creds } = JSON.parse(reg.stdout) as { editToken: string; sftp: { username: string; password: string } };
  const child = spawn(process.execPath, ['bin/pier.js', 'serve', '--only', 'web,sftp'], { env });
  let out = '';
  child.stdout.on('data', (c) => {
    out += c;
  });
  child.stderr.on('data', (c) => {
    out += c;
  });
  try {
    for (let i = 0; i < 300 && (out.match(/pier: \w+ listening on/g) ?? []).length < 2; i++) await new Promise((r) => setTimeout(r, 100));
    const site = path.join(dataDir, 'site');
    fs.mkdirSync(path.join(site, 'plugins'), { recursive: true });
    for (let i = 0; i < 40; i++) fs.writeFileSync(path.join(site, 'plugins', `b${i}_1.0.jar`), Buffer.alloc(2048, i));
    let uploading = true;
    let rounds = 0;
    const uploads = (async () => {
      while (uploading) {
        // Not spawnSync: the PATCHes below run meanwhile on this event loop.
        const sftp = spawn(
          'sshpass',
          ['-e', 'sftp', '-oBatchMode=no', '-oStrictHostKeyChecking=no', '-oUserKnownHostsFile=/dev/null', '-oLogLevel=ERROR', '-P', String(sftpPort), '-b', '-', `${creds.username}@127.0.0.1`],
          { env: { ...process.env, SSHPASS: creds.password } },
        );
        let err = '';
        sftp.stderr.on('data', (c) => {
          err += c;
        });
        sftp.stdout.resume();
        sftp.stdin.end(`put -r ${site} /update-site/5.4\n`);
        const code = await new Promise<number | null>((r) => sftp.once('exit', r));
        assert.equal(code, 0, err);
        rounds++;
      }
    })();
    const statuses = new Map<number, number>();
    const deadline = Date.now() + 8000;
    let n = 0;
    while (Date.now() < deadline || rounds < 2) {
      const res = await fetch(`http://127.0.0.1:${web}/api/products/writers`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${editToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ description: `Edited while uploading, ${n++}` }),
      });
      await res.arrayBuffer();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    }
    uploading = false;
    await uploads;
    assert.ok(rounds >= 2 && n > 50, `both ran: ${rounds} upload rounds, ${n} PATCHes`);
    assert.deepEqual(Object.fromEntries(statuses), { 200: n }, out.slice(-2000));
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

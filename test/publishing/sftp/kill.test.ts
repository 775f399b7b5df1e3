import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../../helpers/db.js';
import { needsTool } from '../../helpers/tools.js';
import { fetchBytes, openSshSftp } from './stack.js';

interface Served {
  child: ChildProcess;
  sftpPort: number;
  downloadUrl: string;
  output: () => string;
}

/** `pier serve --only sftp,downloads` as a user runs it, in its own process (so it can be killed). */
async function serve(env: NodeJS.ProcessEnv): Promise<Served> {
  const child = spawn(process.execPath, ['bin/pier.js', 'serve', '--only', 'sftp,downloads'], { env });
  let out = '';
  child.stdout?.on('data', (c) => {
    out += c;
  });
  child.stderr?.on('data', (c) => {
    out += c;
  });
  for (let i = 0; i < 200; i++) {
    const sftp = /sftp listening on sftp:\/\/[^:]+:(\d+)/.exec(out);
    const dl = /downloads listening on (http:\/\/[^ ]+)/.exec(out);
    if (sftp && dl) return { child, sftpPort: Number(sftp[1]), downloadUrl: dl[1] as string, output: () => out };
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`pier serve did not start: ${out}`);
}

function temporaryFiles(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((n) => path.basename(n).startsWith('.pier-tmp-'));
}

test('SIGKILL during an upload: after restart the previous file is served intact and no temporary file is visible', { ...needsTool('sshpass'), timeout: 120_000 }, async () => {
  const dataDir = tempDir('pier-kill-');
  const env = { ...process.env, PIER_DATA_DIR: dataDir, PIER_SFTP_PORT: '0', PIER_DOWNLOAD_PORT: '0', PIER_LOG_LEVEL: 'info' };
  const reg = spawnSync(process.execPath, ['bin/pier.js', 'staff', 'register', 'kill-ext', '--name', 'Kill', '--json'], { env, encoding: 'utf8' });
  assert.equal(reg.status, 0, reg.stderr);
  const creds = JSON.parse(reg.stdout).sftp as { username: string; password: string };
  const v1 = path.join(dataDir, 'v1.zip');
  const v2 = path.join(dataDir, 'v2.zip');
  fs.writeFileSync(v1, randomBytes(1_000_000));
  fs.writeFileSync(v2, randomBytes(96 * 1024 * 1024));
  const storage = path.join(dataDir, 'storage', 'kill-ext', 'update-site');

  let first = await serve(env);
  try {
    const put = await openSshSftp(first.sftpPort, creds, [`put ${v1} /update-site/5.4.zip`]);
    assert.equal(put.code, 0, put.stderr);
    // A failed login is logged with the username, never the password.
    const wrong = await openSshSftp(first.sftpPort, { username: creds.username, password: 'Wrong-Password-123' }, ['ls']);
    assert.notEqual(wrong.code, 0);

    const upload = openSshSftp(first.sftpPort, creds, [`put ${v2} /update-site/5.4.zip`]);
    // Kill the server once part of the new version sits in its temporary file.
    for (let i = 0; i < 2000; i++) {
      const temps = temporaryFiles(storage);
      if (temps.length && fs.statSync(path.join(storage, temps[0] as string)).size > 1_000_000) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.equal(temporaryFiles(storage).length, 1, 'the upload was caught in the middle');
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));
    assert.notEqual((await upload).code, 0, 'the client saw the upload fail');
    const out = first.output();
    assert.match(out, /"msg":"sftp login"/);
    assert.match(out, /"username":"kill-ext","msg":"sftp login failed"/);
    assert.doesNotMatch(out, new RegExp(creds.password));
    assert.doesNotMatch(out, /Wrong-Password-123/);

    first = await serve(env);
    const served = await fetchBytes(`${first.downloadUrl}/kill-ext/5.4.zip`);
    assert.equal(served.status, 200);
    assert.ok(served.body.equals(fs.readFileSync(v1)), 'the previous archive, byte for byte');
    const temp = temporaryFiles(storage)[0];
    if (temp) assert.equal((await fetchBytes(`${first.downloadUrl}/kill-ext/${temp}`)).status, 404);
    const ls = await openSshSftp(first.sftpPort, creds, ['ls -la /update-site']);
    assert.equal(ls.code, 0, ls.stderr);
    assert.match(ls.stdout, /5\.4\.zip/);
    assert.doesNotMatch(ls.stdout, /pier-tmp/);
    assert.match(ls.stdout, /1000000/);
  } finally {
    first.child.kill('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

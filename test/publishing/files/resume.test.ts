import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dialects, tempDir } from '../../helpers/db.js';
import { needsTool } from '../../helpers/tools.js';
import { fetchBytes, lftp, openSshSftp, type Stack, startStack } from '../sftp/stack.js';

const SSH_OPTS = ['-oStrictHostKeyChecking=no', '-oUserKnownHostsFile=/dev/null', '-oLogLevel=ERROR', '-oPreferredAuthentications=password'];

function temporaryBytes(dir: string): number {
  let total = 0;
  for (const n of fs.readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    if (path.basename(n).startsWith('.pier-tmp-')) total += fs.statSync(path.join(dir, n), { throwIfNoEntry: false })?.size ?? 0;
  }
  return total;
}

/** OpenSSH `put` killed (the client, with its ssh) once part of the file reached the server. */
async function killedPut(port: number, creds: { username: string; password: string }, local: string, remote: string, storage: string) {
  const child = spawn('sshpass', ['-e', 'sftp', '-oBatchMode=no', ...SSH_OPTS, '-P', String(port), '-b', '-', `${creds.username}@127.0.0.1`], {
    env: { ...process.env, SSHPASS: creds.password },
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  child.stdin.end(`put ${local} ${remote}\n`);
  const exited = new Promise((r) => child.once('exit', r));
  for (let i = 0; i < 4000 && temporaryBytes(storage) < 2_000_000; i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(temporaryBytes(storage) >= 2_000_000, 'the upload was caught in the middle');
  process.kill(-(child.pid as number), 'SIGKILL');
  await exited;
}

for (const target of dialects()) {
  describe(`reput after an interrupted put on ${target.name}`, { ...needsTool('sshpass') }, () => {
    let created: { url: string; drop(): Promise<void> };
    let stack: Stack;
    let work: string;
    before(async () => {
      created = await target.create();
      stack = await startStack(created.url);
      work = tempDir('pier-reput-');
    });
    after(async () => {
      await stack.close();
      await created.drop();
      fs.rmSync(work, { recursive: true, force: true });
    });

    test('OpenSSH reput never stitches the previous version with the new one: it fails clearly and the stored file stays', { timeout: 120_000 }, async () => {
      const creds = (await stack.register('reput-ext')).sftp;
      const v1 = path.join(work, 'v1.zip');
      const v2 = path.join(work, 'v2.zip');
      fs.writeFileSync(v1, randomBytes(1_000_000));
      fs.writeFileSync(v2, randomBytes(32 * 1024 * 1024));
      const first = await openSshSftp(stack.sftp.port, creds, [`put ${v1} /update-site/5.4.zip`]);
      assert.equal(first.code, 0, first.stderr);

      await killedPut(stack.sftp.port, creds, v2, '/update-site/5.4.zip', stack.storageDir);
      const reput = await openSshSftp(stack.sftp.port, creds, [`reput ${v2} /update-site/5.4.zip`]);
      const url = `${stack.downloads.url}/reput-ext/5.4.zip`;
      const served = await fetchBytes(url);
      if (reput.code === 0) {
        assert.ok(served.body.equals(fs.readFileSync(v2)), 'a resumed upload is the new file, byte for byte');
      } else {
        assert.match(reput.stderr, /unsupported/i, reput.stderr);
        assert.ok(served.body.equals(fs.readFileSync(v1)), 'the previous file, intact');
        // A whole upload still replaces it.
        const put = await openSshSftp(stack.sftp.port, creds, [`put ${v2} /update-site/5.4.zip`]);
        assert.equal(put.code, 0, put.stderr);
        assert.ok((await fetchBytes(url)).body.equals(fs.readFileSync(v2)));
      }
    });

    test('lftp put -c (continue) after an interrupted put is refused the same way', { ...needsTool('lftp'), timeout: 120_000 }, async () => {
      const creds = (await stack.register('lftp-resume')).sftp;
      const v1 = path.join(work, 'w1.zip');
      const v2 = path.join(work, 'w2.zip');
      fs.writeFileSync(v1, randomBytes(1_000_000));
      fs.writeFileSync(v2, randomBytes(32 * 1024 * 1024));
      const first = await openSshSftp(stack.sftp.port, creds, [`put ${v1} /update-site/5.4.zip`]);
      assert.equal(first.code, 0, first.stderr);
      await killedPut(stack.sftp.port, creds, v2, '/update-site/5.4.zip', stack.storageDir);
      const resumed = await lftp(stack.sftp.port, creds, `put -c ${v2} -o /update-site/5.4.zip`, work);
      assert.notEqual(resumed.code, 0, resumed.stdout);
      const served = await fetchBytes(`${stack.downloads.url}/lftp-resume/5.4.zip`);
      assert.ok(served.body.equals(fs.readFileSync(v1)), 'the previous file, intact');
      // The server drops the refused upload's temporary copy when lftp's session ends, which
      // may be just after lftp exits.
      for (let i = 0; i < 200 && temporaryBytes(stack.storageDir) > 0; i++) await new Promise((r) => setTimeout(r, 50));
      assert.equal(temporaryBytes(stack.storageDir), 0);
    });
  });
}

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import ssh2 from 'ssh2';
import { dialects } from '../../helpers/db.js';
import { ssh2Sftp, startStack } from './stack.js';

type Sftp = ssh2.SFTPWrapper;

/**
 * A request's result, or "closed" once the channel is gone (ssh2's client never answers a
 * request sent after the server ended the session).
 */
function outcomeOn(sftp: Sftp) {
  const closed = new Promise<string>((r) => sftp.once('close', () => r('closed')));
  return (start: (cb: (err: Error | null | undefined) => void) => void) =>
    Promise.race([closed, new Promise<string>((resolve) => start((e) => resolve(e ? e.message : 'ok')))]);
}

for (const target of dialects()) {
  describe(`SFTP password rotation on ${target.name}`, () => {
    test('rotating the password ends the sessions opened with the old one: no upload lands afterwards', { timeout: 60_000 }, async () => {
      const db = await target.create();
      const stack = await startStack(db.url, { sftp: { credentialCheckMs: 50 } });
      try {
        const creds = (await stack.register('rotate-ext')).sftp;
        const writer = await ssh2Sftp(stack.sftp.port, creds.username, creds.password);
        const idle = new ssh2.Client();
        const idleClosed = new Promise<void>((r) => idle.once('close', () => r()));
        await new Promise<void>((resolve, reject) => {
          idle.on('ready', () => resolve());
          idle.on('error', reject);
          idle.connect({ host: '127.0.0.1', port: stack.sftp.port, username: creds.username, password: creds.password, tryKeyboard: false });
        });
        const s: Sftp = writer.sftp;
        const outcome = outcomeOn(s);
        const handle = await new Promise<Buffer>((resolve, reject) => s.open('/assets/before.bin', 'w', (e, h) => (e ? reject(e) : resolve(h))));
        assert.equal(await outcome((cb) => s.write(handle, Buffer.from('open before'), 0, 11, 0, cb)), 'ok');

        // What `pier staff rotate-sftp-password` does, through its own database connection.
        await stack.products.rotateSftpPassword('rotate-ext');

        assert.notEqual(await outcome((cb) => s.writeFile('/assets/after.bin', 'written after', cb)), 'ok', 'a new upload is refused');
        assert.notEqual(await outcome((cb) => s.close(handle, cb)), 'ok', 'an upload opened before does not land');
        assert.notEqual(await outcome((cb) => s.mkdir('/assets/folder', cb)), 'ok');
        await idleClosed;
        const assets = path.join(stack.storageDir, 'rotate-ext', 'assets');
        const stored = () => fs.readdirSync(assets).filter((n) => !n.startsWith('.pier-tmp-'));
        assert.deepEqual(stored(), [], 'nothing stored');
        writer.end();
        // The ended session's unfinished upload is deleted as the server notices the close.
        for (let i = 0; i < 50 && fs.readdirSync(assets).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
        assert.deepEqual(fs.readdirSync(assets), [], 'no temporary file left');
      } finally {
        await stack.close();
        await db.drop();
      }
    });
  });
}

import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type ssh2 from 'ssh2';
import { dialects } from '../../helpers/db.js';
import { snapshot, ssh2Sftp, type Stack, startStack } from './stack.js';

// A remove racing a commit, over the wire: a REMOVE from a second session landing while the first
// session's CLOSE commits an upload stored files the quota did not count (10 files of 100,000 bytes
// stored under a 300,000-byte quota, 1 recorded).

const call = <T>(fn: (cb: (err: Error | null | undefined, value?: T) => void) => void) =>
  new Promise<T>((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value as T))));

for (const target of dialects()) {
  describe(`SFTP: REMOVE racing CLOSE of an upload on ${target.name}`, () => {
    let stack: Stack;
    let drop: () => Promise<void>;
    before(async () => {
      const db = await target.create();
      drop = db.drop;
      stack = await startStack(db.url);
    });
    after(async () => {
      await stack.close();
      await drop();
    });

    test('two sessions of one product cannot store more than the quota counts', async () => {
      const creds = (await stack.register('race-ext')).sftp;
      await stack.fileStore.setLimits('race-ext', { quotaBytes: 300_000 });
      const first = await ssh2Sftp(stack.sftp.port, creds.username, creds.password);
      const second = await ssh2Sftp(stack.sftp.port, creds.username, creds.password);
      const data = Buffer.alloc(100_000, 7);
      try {
        const usage = async () => {
          const stored = Object.entries(snapshot(path.join(stack.storageDir, 'race-ext/assets'))).filter(([, v]) => v !== 'dir');
          const listing = await call<ssh2.FileEntry[]>((cb) => first.sftp.readdir('/assets', cb));
          assert.equal(listing.length, stored.length, 'the listing shows what is stored');
          const summary = await stack.fileStore.summary('race-ext');
          return { stored: [stored.length, stored.length * 100_000], recorded: [summary.files, summary.bytes] };
        };
        for (let i = 0; i < 30; i++) {
          const p = `/assets/f${i}.bin`;
          const handle = await call<Buffer>((cb) => first.sftp.open(p, 'w', cb));
          await call<void>((cb) => first.sftp.write(handle, data, 0, data.length, 0, cb));
          // CLOSE on one session and REMOVE on the other, back to back (either sent first).
          const close = () => call<void>((cb) => first.sftp.close(handle, cb));
          const remove = () => call<void>((cb) => second.sftp.unlink(p, cb));
          const outcomes = await Promise.allSettled(i % 2 ? [remove(), close()] : [close(), remove()]);
          // The REMOVE may come before the file exists: fine.
          for (const o of outcomes) if (o.status === 'rejected') assert.match(String(o.reason), /No such file/i);
          // Whichever came first, the record matches what is stored (the file and its row, or
          // neither); a file stored without its row would be downloadable yet uncounted.
          const { stored, recorded } = await usage();
          assert.deepEqual(recorded, stored, `round ${i}: usage counts every stored file`);
          await call<void>((cb) => first.sftp.unlink(p, cb)).catch(() => {});
        }
        const { stored, recorded } = await usage();
        assert.deepEqual([stored, recorded], [[0, 0], [0, 0]]);
      } finally {
        first.end();
        second.end();
      }
    });
  });
}

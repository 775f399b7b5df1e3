import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { localStorage } from '../../../src/infra/storage-local.js';
import type { Storage } from '../../../src/infra/storage.js';
import { tempDir } from '../../helpers/db.js';

/**
 * Occupies every thread-pool thread for a while, so file operations started next stay queued
 * until after what the test does synchronously (closing, opening other files).
 */
function busyThreadPool(): Promise<unknown> {
  const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
  return Promise.all(Array.from({ length: threads }, () => new Promise((resolve) => crypto.pbkdf2('x', 'y', 100_000, 32, 'sha256', resolve))));
}

describe('local storage descriptors', () => {
  let root: string;
  let storage: Storage;

  before(() => {
    root = tempDir('pier-storage-');
    storage = localStorage(root);
    fs.mkdirSync(path.join(root, 'p/assets'), { recursive: true });
    fs.writeFileSync(path.join(root, 'p/assets/a'), Buffer.alloc(64 * 1024, 'a'));
    fs.writeFileSync(path.join(root, 'p/assets/b'), Buffer.alloc(64 * 1024, 'b'));
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  test('a reader closed while its reads run never returns bytes of a file opened after it', async () => {
    for (let round = 0; round < 3; round++) {
      const a = await storage.openRead('p/assets/a');
      assert.ok(a);
      // Reads in flight, then close at once (an SFTP client may send CLOSE behind its READs),
      // then other files opened, which would get the same descriptor number if it were free.
      const pool = busyThreadPool();
      const reads = Array.from({ length: 8 }, (_, i) => {
        const buf = Buffer.alloc(4096);
        return a.read(buf, 0, buf.length, i * 4096).then((n) => buf.subarray(0, n));
      });
      const closed = a.close();
      const others = await Promise.all(Array.from({ length: 4 }, () => storage.openRead('p/assets/b')));
      await closed;
      await pool;
      for (const got of await Promise.all(reads)) assert.ok(got.every((byte) => byte === 0x61), 'only bytes of a');
      await assert.rejects(a.read(Buffer.alloc(1), 0, 1, 0), /after close/);
      for (const o of others) await o?.close();
    }
  });

  test('an upload aborted while its writes run never writes into a file opened after it', async () => {
    for (let round = 0; round < 3; round++) {
      const w = await storage.beginWrite('p/assets/c');
      const pool = busyThreadPool();
      const writes = Array.from({ length: 8 }, (_, i) => w.write(Buffer.alloc(4096, 'x'), 0, 4096, i * 4096).then(
        () => 'written',
        (e: Error) => e.message,
      ));
      // New uploads opened right behind the abort would get a freed descriptor number.
      const aborted = w.abort();
      const others = await Promise.all(Array.from({ length: 4 }, (_, i) => storage.beginWrite(`p/assets/d${i}`)));
      await aborted;
      await pool;
      await Promise.all(writes);
      for (const o of others) {
        const buf = Buffer.alloc(64 * 1024);
        assert.equal(await o.read(buf, 0, buf.length, 0), 0, 'nothing written into another upload');
        await o.abort();
      }
    }
    assert.deepEqual(fs.readdirSync(path.join(root, 'p/assets')).sort(), ['a', 'b'], 'no temporary file left');
  });

  test('a new file is created while its upload starts: written, committed, or aborted with nothing left', async () => {
    // The creation runs on the thread pool, not waited for by beginWrite: keep it queued.
    const pool = busyThreadPool();
    const w = await storage.beginWrite('p/assets/new');
    const gone = await storage.beginWrite('p/assets/gone');
    await w.write(Buffer.from('new bytes'), 0, 9, 0);
    await w.commit();
    await gone.abort();
    await pool;
    assert.equal(fs.readFileSync(path.join(root, 'p/assets/new'), 'utf8'), 'new bytes');
    // A missing folder is refused at once, as the creation would be.
    await assert.rejects(storage.beginWrite('p/nothing-here/x'), { code: 'ENOENT' });
    await assert.rejects(storage.beginWrite('p/assets/a/x'), { code: 'ENOTDIR' });
    fs.rmSync(path.join(root, 'p/assets/new'));
    assert.deepEqual(fs.readdirSync(path.join(root, 'p/assets')).sort(), ['a', 'b'], 'no temporary file left');
  });

  test('an empty stored file kept for a rewrite is opened, not created again', async () => {
    fs.writeFileSync(path.join(root, 'p/assets/empty'), '');
    const w = await storage.beginWrite('p/assets/empty', { keepExisting: true });
    await w.write(Buffer.from('now filled'), 0, 10, 0);
    await w.commit();
    assert.equal(fs.readFileSync(path.join(root, 'p/assets/empty'), 'utf8'), 'now filled');
    fs.rmSync(path.join(root, 'p/assets/empty'));
  });
});

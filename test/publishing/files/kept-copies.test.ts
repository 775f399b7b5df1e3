import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_LIMITS } from '../../../src/infra/config.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { type FilesService, filesService, QuotaExceededError, type Upload } from '../../../src/publishing/files/service.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { dialects, tempDir } from '../../helpers/db.js';

type Db = Awaited<ReturnType<typeof openPublishingDatabase>>;
const MiB = 1024 * 1024;

async function addProduct(db: Db, id: string): Promise<void> {
  const at = new Date().toISOString();
  await productsRepository(db.db, db.dialect).insert({
    id,
    name: id,
    state: 'hidden',
    fields: '{}',
    edit_token_hash: `hash-${id}`,
    edit_token_id: 'tok',
    sftp_username: id,
    sftp_password_hash: 'x',
    created_at: at,
    updated_at: at,
  });
}

/** Bytes of every temporary file under `dir`: what kept copies take on disk. */
function temporaryBytes(dir: string): number {
  let total = 0;
  for (const n of fs.readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    if (path.basename(n).startsWith('.pier-tmp-')) total += fs.statSync(path.join(dir, n)).size;
  }
  return total;
}

for (const target of dialects()) {
  describe(`copies of files opened for rewriting on ${target.name}`, () => {
    let created: { url: string; drop(): Promise<void> };
    let db: Db;
    let root: string;
    let files: FilesService;

    before(async () => {
      created = await target.create();
      db = await openPublishingDatabase(created.url);
      root = tempDir('pier-storage-');
      files = filesService({ storage: localStorage(root), repo: filesRepository(db.db), limits: { ...DEFAULT_LIMITS, quotaBytes: 10 * MiB } });
      await addProduct(db, 'copy-ext');
      await files.ensureTree('copy-ext');
      const upload = await files.beginUpload('copy-ext', 'assets/big.bin');
      const data = Buffer.alloc(4 * MiB, 7);
      await upload.write(data, 0, data.length, 0);
      await upload.commit();
    });
    after(async () => {
      await db.close();
      await created.drop();
      fs.rmSync(root, { recursive: true, force: true });
    });

    test('copies kept for rewriting fit the room the quota leaves, together; each is released on abort and commit', async () => {
      const opened = await Promise.allSettled(
        Array.from({ length: 128 }, () => files.beginUpload('copy-ext', 'assets/big.bin', { keepExisting: true })),
      );
      const kept = opened.filter((r): r is PromiseFulfilledResult<Upload> => r.status === 'fulfilled').map((r) => r.value);
      const refused = opened.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason);
      // 10 MiB quota, 4 MiB stored (replaced by each of these uploads): room for two copies.
      assert.equal(kept.length, 2);
      assert.equal(refused.length, 126);
      for (const e of refused) {
        assert.ok(e instanceof QuotaExceededError, String(e));
        assert.match(e.message, /storage quota exceeded/);
      }
      assert.ok(temporaryBytes(root) <= 10 * MiB, `${temporaryBytes(root)} bytes of temporary copies`);
      for (const u of kept) assert.equal(u.size, 4 * MiB);

      // Released on abort: a new copy fits again.
      await kept[0]?.abort();
      const again = await files.beginUpload('copy-ext', 'assets/big.bin', { keepExisting: true });
      await assert.rejects(files.beginUpload('copy-ext', 'assets/big.bin', { keepExisting: true }), QuotaExceededError);
      // Released on commit too, and the committed copy keeps the old bytes it did not rewrite.
      await again.write(Buffer.from('new'), 0, 3, 0);
      await again.commit();
      const stored = fs.readFileSync(path.join(root, 'copy-ext/assets/big.bin'));
      assert.equal(stored.length, 4 * MiB);
      assert.equal(stored.subarray(0, 4).toString('latin1'), 'new\u0007');
      await kept[1]?.abort();
      const last = await Promise.all([1, 2].map(() => files.beginUpload('copy-ext', 'assets/big.bin', { keepExisting: true })));
      for (const u of last) await u.abort();
      assert.equal(temporaryBytes(root), 0);
    });

    test('a file larger than the room its quota leaves is not copied at all', async () => {
      await files.setLimits('copy-ext', { quotaBytes: 3 * MiB });
      try {
        await assert.rejects(files.beginUpload('copy-ext', 'assets/big.bin', { keepExisting: true }), /storage quota exceeded/);
        assert.equal(temporaryBytes(root), 0);
      } finally {
        await files.setLimits('copy-ext', { quotaBytes: null });
      }
    });

    test('new files written at once share the room the quota leaves: parallel uploads cannot each fill it', async () => {
      // 10 MiB quota, 4 MiB stored: 6 MiB of room for all uploads open at once.
      const uploads = await Promise.all(Array.from({ length: 8 }, (_, i) => files.beginUpload('copy-ext', `assets/new-${i}.bin`)));
      const chunk = Buffer.alloc(MiB, 1);
      const written = await Promise.all(
        uploads.map(async (u) => {
          let n = 0;
          try {
            for (let at = 0; at < 2 * MiB; at += MiB) {
              await u.write(chunk, 0, chunk.length, at);
              n += MiB;
            }
          } catch (e) {
            assert.ok(e instanceof QuotaExceededError, String(e));
            assert.match(e.message, /uploads open now hold/);
          }
          return n;
        }),
      );
      assert.equal(
        written.reduce((a, b) => a + b, 0),
        6 * MiB,
        `written: ${written.join(', ')}`,
      );
      assert.ok(temporaryBytes(root) <= 6 * MiB, `${temporaryBytes(root)} bytes of temporary files`);
      // Room comes back as uploads end: aborted ones at once, committed ones as stored bytes.
      for (const u of uploads.slice(1)) await u.abort();
      await uploads[0]!.commit();
      const next = await files.beginUpload('copy-ext', 'assets/next.bin');
      const room = 10 * MiB - 4 * MiB - written[0]!;
      await next.write(Buffer.alloc(room, 2), 0, room, 0);
      await assert.rejects(next.write(Buffer.alloc(1), 0, 1, room), QuotaExceededError);
      await next.abort();
      await files.remove('copy-ext', 'assets/new-0.bin');
    });
  });
}

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_LIMITS } from '../../../src/infra/config.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { type FilesService, filesService } from '../../../src/publishing/files/service.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { dialects, tempDir } from '../../helpers/db.js';

// A commit records its row and renames the file into place; a remove or rename of
// the same path (or its folder) landing in between made the records drift from the disk, so
// files were stored and downloadable but not counted against the quota (or counted but gone).

type Db = Awaited<ReturnType<typeof openPublishingDatabase>>;

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

/** Stored files (temporary files included: they hold bytes too) as `path:size`, sorted. */
function onDisk(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((n) => fs.lstatSync(path.join(dir, n)).isFile())
    .map((n) => `${n.split(path.sep).join('/')}:${fs.statSync(path.join(dir, n)).size}`)
    .sort();
}

for (const target of dialects()) {
  describe(`file changes racing a commit on ${target.name}`, () => {
    let created: { url: string; drop(): Promise<void> };
    let db: Db;
    let root: string;
    let files: FilesService;

    before(async () => {
      created = await target.create();
      db = await openPublishingDatabase(created.url);
      root = tempDir('pier-race-');
      files = filesService({ storage: localStorage(root), repo: filesRepository(db.db), limits: DEFAULT_LIMITS });
    });
    after(async () => {
      await db.close();
      await created.drop();
      fs.rmSync(root, { recursive: true, force: true });
    });

    async function recorded(productId: string): Promise<string[]> {
      const rows = await filesRepository(db.db).listUnder(productId, '');
      return rows.map((r) => `${r.path}:${r.size}`).sort();
    }

    test('a remove sent while an upload commits leaves the record and the disk the same', async () => {
      await addProduct(db, 'remove-race');
      await files.ensureTree('remove-race');
      // Room for all eight: when the remove comes first, the file stays, so up to eight may pile
      // up (a quota of 1000 failed the seventh commit whenever six removes had come first).
      await files.setLimits('remove-race', { quotaBytes: 8 * 150, quotaFiles: 10 });
      for (let i = 0; i < 8; i++) {
        const p = `assets/f${i}`;
        const upload = await files.beginUpload('remove-race', p);
        await upload.write(Buffer.alloc(150, i), 0, 150, 0);
        // Both at once, as two SFTP sessions (or one pipelining client) may send them.
        const [committed, removed] = await Promise.allSettled([upload.commit(), files.remove('remove-race', p)]);
        assert.equal(committed.status, 'fulfilled', String((committed as PromiseRejectedResult).reason));
        assert.equal(removed.status, 'fulfilled');
        // One of them came wholly first: removed before the commit (the file stays, counted)
        // or after it (no file, no row). Never a file on disk without its row, or the reverse.
        assert.deepEqual(onDisk(path.join(root, 'remove-race')), await recorded('remove-race'), `round ${i}`);
      }
      const summary = await files.summary('remove-race');
      const disk = onDisk(path.join(root, 'remove-race'));
      assert.deepEqual([summary.files, summary.bytes], [disk.length, disk.length * 150], 'usage counts what is stored');
      const context = await filesRepository(db.db).uploadContext('remove-race', 'assets/none');
      assert.deepEqual([context.files, context.bytes], [summary.files, summary.bytes], 'the quota totals too');
    });

    test('a folder rename sent while an upload into it commits leaves the record and the disk the same', async () => {
      await addProduct(db, 'rename-race');
      await files.ensureTree('rename-race');
      for (let i = 0; i < 6; i++) {
        await files.makeDir('rename-race', `update-site/${i}.0`);
        const upload = await files.beginUpload('rename-race', `update-site/${i}.0/a.jar`);
        await upload.write(Buffer.alloc(100, i), 0, 100, 0);
        const [committed, renamed] = await Promise.allSettled([
          upload.commit(),
          files.rename('rename-race', `update-site/${i}.0`, `update-site/${i}.1`),
        ]);
        assert.equal(renamed.status, 'fulfilled', String((renamed as PromiseRejectedResult).reason));
        // Either order is fine: committed then moved along, or refused (its folder moved away).
        if (committed.status === 'rejected') assert.match(String(committed.reason), /ENOENT/);
        // A refused commit leaves no temporary file behind in the moved folder either.
        assert.deepEqual(onDisk(path.join(root, 'rename-race')), await recorded('rename-race'), `round ${i}`);
        for (const row of await recorded('rename-race')) {
          const [p] = row.split(':');
          assert.ok(await files.storage.stat(files.key('rename-race', p as string)), `${p} is recorded and stored`);
        }
      }
    });

    test('an upload whose folder was renamed before it commits is refused and leaves no bytes behind', async () => {
      await addProduct(db, 'moved-ext');
      await files.ensureTree('moved-ext');
      await files.makeDir('moved-ext', 'update-site/1.0');
      const upload = await files.beginUpload('moved-ext', 'update-site/1.0/a.jar');
      await upload.write(Buffer.alloc(500, 1), 0, 500, 0);
      await files.rename('moved-ext', 'update-site/1.0', 'update-site/2.0');
      await assert.rejects(upload.commit(), /ENOENT/);
      // Its temporary file moved with the folder; it is not left there uncounted.
      assert.deepEqual(onDisk(path.join(root, 'moved-ext')), []);
      assert.deepEqual(await recorded('moved-ext'), []);
    });
  });
}

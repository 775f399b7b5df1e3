import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_LIMITS } from '../../../src/infra/config.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { type FilesService, filesService, QuotaExceededError } from '../../../src/publishing/files/service.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { startPublishing } from '../../helpers/publishing.js';

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

async function put(files: FilesService, productId: string, p: string, content: string | Buffer): Promise<void> {
  const upload = await files.beginUpload(productId, p);
  const buf = Buffer.from(content);
  await upload.write(buf, 0, buf.length, 0);
  await upload.commit();
}

/** Every name in the storage folder, temporary files included (what `ls -a` would show). */
function allNames(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
}

for (const target of dialects()) {
  describe(`files record and reader on ${target.name}`, () => {
    let created: { url: string; drop(): Promise<void> };
    let db: Db;
    let other: Db;
    let root: string;
    let files: FilesService;

    before(async () => {
      created = await target.create();
      db = await openPublishingDatabase(created.url);
      // A second connection stands in for another instance sharing the database.
      other = await openPublishingDatabase(created.url);
      root = tempDir('pier-storage-');
      files = filesService({ storage: localStorage(root), repo: filesRepository(db.db), limits: DEFAULT_LIMITS });
      await addProduct(db, 'csv-nodes');
      await addProduct(db, 'quota-ext');
      await files.ensureTree('csv-nodes');
    });
    after(async () => {
      await other.close();
      await db.close();
      await created.drop();
      fs.rmSync(root, { recursive: true, force: true });
    });

    test('labels, files and the change stamp follow uploads, replacements, renames and removals', async () => {
      const reader = (await import('../../../src/publishing/files/reader.js')).productFilesReader(filesRepository(other.db));
      assert.equal(await reader.changeStamp('csv-nodes'), null);
      assert.deepEqual(await reader.listLabels('csv-nodes'), []);

      await files.makeDir('csv-nodes', 'update-site/5.4');
      await files.makeDir('csv-nodes', 'update-site/5.4/plugins');
      await put(files, 'csv-nodes', 'update-site/5.4/content.jar', 'content');
      await put(files, 'csv-nodes', 'update-site/5.4/plugins/a_1.0.jar', 'a-jar!');
      await put(files, 'csv-nodes', 'update-site/5.4.zip', 'zipzip');
      await put(files, 'csv-nodes', 'update-site/5.5.zip', 'z');
      await files.makeDir('csv-nodes', 'assets/img');
      await put(files, 'csv-nodes', 'assets/img/logo.png', 'png');
      await put(files, 'csv-nodes', 'assets/a.svg', '<svg/>');
      await put(files, 'csv-nodes', 'workflows/Demo.knwf', 'knwf');
      const s1 = await reader.changeStamp('csv-nodes');
      assert.ok(s1);

      const labels = await reader.listLabels('csv-nodes');
      assert.deepEqual(
        labels.map(({ lastUploadAt, ...l }) => {
          assert.ok(lastUploadAt);
          return l;
        }),
        [
          { label: '5.4', files: 2, bytes: 13, hasArchive: true, archiveBytes: 6 },
          { label: '5.5', files: 0, bytes: 0, hasArchive: true, archiveBytes: 1 },
        ],
      );
      assert.deepEqual(
        (await reader.listFiles('csv-nodes', 'assets')).map((f) => [f.path, f.size]),
        [
          ['a.svg', 6],
          ['img/logo.png', 3],
        ],
      );
      assert.deepEqual((await reader.listFiles('csv-nodes', 'workflows')).map((f) => f.path), ['Demo.knwf']);
      assert.deepEqual(await reader.listFiles('quota-ext', 'assets'), []);

      // Replacing a file changes the stamp, not the counts.
      await put(files, 'csv-nodes', 'update-site/5.4/content.jar', 'CONTENT');
      const s2 = await reader.changeStamp('csv-nodes');
      assert.notEqual(s2, s1);
      assert.equal((await reader.listLabels('csv-nodes'))[0]?.files, 2);

      // Renaming a label folder moves its files; a case-different prefix is left alone.
      await files.makeDir('csv-nodes', 'update-site/5.4-RC');
      await put(files, 'csv-nodes', 'update-site/5.4-RC/x.jar', 'x');
      await files.rename('csv-nodes', 'update-site/5.4', 'update-site/5.6');
      assert.deepEqual(
        (await reader.listLabels('csv-nodes')).map((l) => [l.label, l.files, l.hasArchive]),
        [
          ['5.4', 0, true],
          ['5.4-RC', 1, false],
          ['5.5', 0, true],
          ['5.6', 2, false],
        ],
      );
      assert.equal(fs.readFileSync(path.join(root, 'csv-nodes/update-site/5.6/content.jar'), 'utf8'), 'CONTENT');
      const s3 = await reader.changeStamp('csv-nodes');
      assert.notEqual(s3, s2);

      assert.equal(await files.remove('csv-nodes', 'update-site/5.5.zip'), true);
      assert.notEqual(await reader.changeStamp('csv-nodes'), s3);
      assert.deepEqual(
        (await reader.listLabels('csv-nodes')).map((l) => l.label),
        ['5.4', '5.4-RC', '5.6'],
      );
      const summary = await files.summary('csv-nodes');
      assert.equal(summary.files, 7);
      assert.equal(summary.bytes, 7 + 6 + 6 + 1 + 3 + 6 + 4);
      assert.ok(summary.lastUploadAt);
    });

    test('an upload is invisible until commit; abort keeps the previous file and leaves no temporary file', async () => {
      await put(files, 'csv-nodes', 'assets/keep.txt', 'version 1');
      const upload = await files.beginUpload('csv-nodes', 'assets/keep.txt');
      const b = Buffer.from('version 2, longer');
      // Pipelined writes arrive out of order; positional writes put them in place.
      await upload.write(b, 8, b.length - 8, 8);
      await upload.write(b, 0, 8, 0);
      assert.equal(fs.readFileSync(path.join(root, 'csv-nodes/assets/keep.txt'), 'utf8'), 'version 1');
      await upload.abort();
      assert.equal(fs.readFileSync(path.join(root, 'csv-nodes/assets/keep.txt'), 'utf8'), 'version 1');
      assert.ok(!allNames(root).some((n) => n.includes('.pier-tmp-')), allNames(root).join(','));

      const again = await files.beginUpload('csv-nodes', 'assets/keep.txt');
      await again.write(b, 8, b.length - 8, 8);
      await again.write(b, 0, 8, 0);
      await again.commit({ atimeMs: 1_600_000_000_000, mtimeMs: 1_600_000_000_000 });
      assert.equal(fs.readFileSync(path.join(root, 'csv-nodes/assets/keep.txt'), 'utf8'), 'version 2, longer');
      const listed = (await files.storage.list('csv-nodes/assets'))?.find((e) => e.name === 'keep.txt');
      assert.equal(listed?.mtimeMs, 1_600_000_000_000);
    });

    test('limits: file size, storage quota and file count refuse the write and keep the tree unchanged', async () => {
      await files.ensureTree('quota-ext');
      await files.setLimits('quota-ext', { quotaBytes: 100, quotaFiles: 3, maxFileBytes: 60 });
      assert.deepEqual((await files.limitsFor('quota-ext')).custom, { quotaBytes: 100, quotaFiles: 3, maxFileBytes: 60 });
      await put(files, 'quota-ext', 'assets/a', Buffer.alloc(50));
      const before = allNames(root);

      const big = await files.beginUpload('quota-ext', 'assets/big');
      await assert.rejects(big.write(Buffer.alloc(61), 0, 61, 0), (e: Error) => e instanceof QuotaExceededError && /too large/.test(e.message));
      await big.abort();
      const over = await files.beginUpload('quota-ext', 'assets/b');
      await over.write(Buffer.alloc(40), 0, 40, 0);
      await assert.rejects(over.write(Buffer.alloc(20), 0, 20, 40), (e: Error) => e instanceof QuotaExceededError && /storage quota/.test(e.message));
      await over.abort();
      // Replacing a file counts its old size as free.
      await put(files, 'quota-ext', 'assets/a', Buffer.alloc(60));
      await put(files, 'quota-ext', 'assets/b', Buffer.alloc(10));
      await put(files, 'quota-ext', 'assets/c', Buffer.alloc(10));
      await assert.rejects(files.beginUpload('quota-ext', 'assets/d'), /file-count quota/);
      assert.deepEqual(allNames(root).filter((n) => n.startsWith('quota-ext')), [...before.filter((n) => n.startsWith('quota-ext')), 'quota-ext/assets/b', 'quota-ext/assets/c'].sort());
      assert.deepEqual(await files.summary('quota-ext').then((s) => [s.files, s.bytes]), [3, 80]);

      await files.setLimits('quota-ext', { quotaFiles: null });
      assert.deepEqual((await files.limitsFor('quota-ext')).custom, { quotaBytes: 100, maxFileBytes: 60 });
    });

    test('parallel uploads of one product cannot together exceed the storage or file-count quota', async () => {
      await addProduct(db, 'race-ext');
      await files.ensureTree('race-ext');
      await files.setLimits('race-ext', { quotaBytes: 100, quotaFiles: 3 });
      await put(files, 'race-ext', 'assets/keep', 'previous');
      const before = allNames(root).filter((n) => n.startsWith('race-ext'));

      // On one instance the second write is refused at once: open uploads share the room.
      const one = await files.beginUpload('race-ext', 'assets/one');
      const two = await files.beginUpload('race-ext', 'assets/two');
      await one.write(Buffer.alloc(60, 1), 0, 60, 0);
      await assert.rejects(two.write(Buffer.alloc(60, 2), 0, 60, 0), (e: Error) => e instanceof QuotaExceededError && /uploads open now hold 60 bytes/.test(e.message));
      await one.abort();
      await two.abort();

      // Two instances (they share the database and storage, not their memory): both start while
      // 92 bytes are free, and each alone fits: only one may be committed.
      const second = filesService({ storage: localStorage(root), repo: filesRepository(db.db), limits: DEFAULT_LIMITS });
      const a = await files.beginUpload('race-ext', 'assets/a');
      const b = await second.beginUpload('race-ext', 'assets/keep');
      await a.write(Buffer.alloc(60, 1), 0, 60, 0);
      await b.write(Buffer.alloc(60, 2), 0, 60, 0);
      await a.commit();
      await assert.rejects(b.commit(), (e: Error) => e instanceof QuotaExceededError && /storage quota exceeded/.test(e.message));
      // The refused replacement left the previous file and no temporary file.
      assert.equal(fs.readFileSync(path.join(root, 'race-ext/assets/keep'), 'utf8'), 'previous');
      assert.deepEqual(allNames(root).filter((n) => n.startsWith('race-ext')), [...before, 'race-ext/assets/a'].sort());
      assert.deepEqual(await files.summary('race-ext').then((s) => [s.files, s.bytes]), [2, 68]);
      await b.abort();

      // Two new files while one slot is free: the second commit is refused.
      const c = await files.beginUpload('race-ext', 'assets/c');
      const d = await second.beginUpload('race-ext', 'assets/d');
      await c.write(Buffer.alloc(1), 0, 1, 0);
      await d.write(Buffer.alloc(1), 0, 1, 0);
      await c.commit();
      await assert.rejects(d.commit(), (e: Error) => e instanceof QuotaExceededError && /file-count quota exceeded/.test(e.message));
      assert.equal(fs.existsSync(path.join(root, 'race-ext/assets/d')), false);
      assert.deepEqual(await files.summary('race-ext').then((s) => [s.files, s.bytes]), [3, 69]);
    });

    test('without limits of its own, a product is held to the configured ones at commit too', async () => {
      // The commit's statement is compiled once and takes the configured limits as parameters:
      // two instances that each began while the upload fit must still not both land.
      await addProduct(db, 'default-quota');
      await files.ensureTree('default-quota');
      const limits = { ...DEFAULT_LIMITS, quotaBytes: 100, quotaFiles: 3 };
      const first = filesService({ storage: localStorage(root), repo: filesRepository(db.db), limits });
      const second = filesService({ storage: localStorage(root), repo: filesRepository(db.db), limits });
      const a = await first.beginUpload('default-quota', 'assets/a');
      const b = await second.beginUpload('default-quota', 'assets/b');
      await a.write(Buffer.alloc(60, 1), 0, 60, 0);
      await b.write(Buffer.alloc(60, 2), 0, 60, 0);
      await a.commit();
      await assert.rejects(b.commit(), (e: Error) => e instanceof QuotaExceededError && /storage quota exceeded: this product may store 100 bytes/.test(e.message));
      assert.equal(fs.existsSync(path.join(root, 'default-quota/assets/b')), false);

      await put(first, 'default-quota', 'assets/c', 'c');
      const d = await first.beginUpload('default-quota', 'assets/d');
      const e = await second.beginUpload('default-quota', 'assets/e');
      await d.write(Buffer.alloc(1), 0, 1, 0);
      await e.write(Buffer.alloc(1), 0, 1, 0);
      await d.commit();
      await assert.rejects(e.commit(), (err: Error) => err instanceof QuotaExceededError && /file-count quota exceeded: this product may store 3 files/.test(err.message));
      assert.deepEqual(await first.summary('default-quota').then((s) => [s.files, s.bytes]), [3, 62]);
      assert.deepEqual((await first.limitsFor('default-quota')).custom, {});
    });

    test('the usage totals read at OPEN follow uploads, replacements, renames, removals and time changes', async () => {
      await addProduct(db, 'totals-ext');
      await files.ensureTree('totals-ext');
      await files.makeDir('totals-ext', 'update-site/1.0');
      const repo = filesRepository(db.db);
      const check = async (files: number, bytes: number) => {
        assert.deepEqual(await repo.usage('totals-ext'), { files, bytes }, 'the rows');
        const context = await repo.uploadContext('totals-ext', 'assets/none');
        assert.deepEqual([context.files, context.bytes], [files, bytes], 'the running totals');
      };
      await put(files, 'totals-ext', 'update-site/1.0/a.jar', Buffer.alloc(10));
      await put(files, 'totals-ext', 'update-site/1.0/b.jar', Buffer.alloc(20));
      await put(files, 'totals-ext', 'assets/x', Buffer.alloc(5));
      await check(3, 35);
      await put(files, 'totals-ext', 'assets/x', Buffer.alloc(7));
      await check(3, 37);
      await files.makeDir('totals-ext', 'update-site/2.0');
      await files.rename('totals-ext', 'update-site/1.0/a.jar', 'update-site/1.0/b.jar');
      await check(2, 17);
      await files.rename('totals-ext', 'update-site/1.0', 'update-site/3.0');
      await files.setTimes('totals-ext', 'assets/x', 1_600_000_000_000, 1_600_000_000_000);
      await check(2, 17);
      assert.equal(await files.remove('totals-ext', 'assets/x'), true);
      await check(1, 10);
    });

    test('a commit whose rename fails (its folder was removed meanwhile) leaves no record behind', async () => {
      await addProduct(db, 'gone-ext');
      await files.ensureTree('gone-ext');
      await files.makeDir('gone-ext', 'assets/sub');
      const upload = await files.beginUpload('gone-ext', 'assets/sub/x');
      await upload.write(Buffer.from('data'), 0, 4, 0);
      // An empty folder (its only entry is the temporary file) may be removed by the client.
      await files.removeDir('gone-ext', 'assets/sub');
      await assert.rejects(upload.commit(), /ENOENT/);
      assert.equal(await filesRepository(db.db).find('gone-ext', 'assets/sub/x'), undefined);
      assert.deepEqual(await files.summary('gone-ext').then((s) => [s.files, s.bytes]), [0, 0]);
      const context = await filesRepository(db.db).uploadContext('gone-ext', 'assets/none');
      assert.deepEqual([context.files, context.bytes], [0, 0]);
    });

    test('uploads, time changes, renames and removals of the same files at once from two instances all complete', async () => {
      await addProduct(db, 'busy-ext');
      await files.ensureTree('busy-ext');
      const second = filesService({ storage: localStorage(root), repo: filesRepository(other.db), limits: DEFAULT_LIMITS });
      for (let round = 0; round < 10; round++) {
        await Promise.all([0, 1, 2].map((i) => put(files, 'busy-ext', `assets/f${i}`, `r${round}`)));
        // Each kind of change of the same rows, interleaved across the two database handles.
        const results = await Promise.allSettled([
          ...[0, 1, 2].map((i) => put(i % 2 ? second : files, 'busy-ext', `assets/f${i}`, `again ${round}`)),
          ...[0, 1, 2].map((i) => (i % 2 ? files : second).setTimes('busy-ext', `assets/f${i}`, 1_600_000_000_000, 1_600_000_000_000)),
          second.rename('busy-ext', 'assets/f1', 'assets/g1'),
          files.remove('busy-ext', 'assets/f2'),
        ]);
        // Files may be gone when a later change comes (ENOENT); the database must never refuse.
        for (const r of results) if (r.status === 'rejected') assert.match(String(r.reason), /ENOENT/);
        await files.remove('busy-ext', 'assets/g1').catch(() => {});
      }
      const repo = filesRepository(db.db);
      const context = await repo.uploadContext('busy-ext', 'assets/none');
      assert.deepEqual([context.files, context.bytes], Object.values(await repo.usage('busy-ext')), 'totals match the rows');
    });

    test('concurrent commits from two instances sharing the database stay within the quota', async () => {
      await addProduct(db, 'burst-ext');
      await files.ensureTree('burst-ext');
      await files.setLimits('burst-ext', { quotaBytes: 1000, quotaFiles: 1000 });
      const second = filesService({ storage: localStorage(root), repo: filesRepository(other.db), limits: DEFAULT_LIMITS });
      // 20 uploads of 100 bytes, all begun before any commit, committed at once through both
      // instances: exactly 10 fit.
      const uploads = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? second : files).beginUpload('burst-ext', `assets/f${i}`)),
      );
      await Promise.all(uploads.map((u) => u.write(Buffer.alloc(100), 0, 100, 0)));
      const results = await Promise.allSettled(uploads.map((u) => u.commit()));
      const refused = results.filter((r) => r.status === 'rejected');
      assert.equal(refused.length, 10);
      for (const r of refused) assert.ok((r as PromiseRejectedResult).reason instanceof QuotaExceededError);
      await Promise.all(uploads.map((u) => u.abort()));
      assert.deepEqual(await files.summary('burst-ext').then((s) => [s.files, s.bytes]), [10, 1000]);
      assert.equal(allNames(path.join(root, 'burst-ext/assets')).length, 10, 'refused uploads left no file behind');
    });
  });

  describe(`createPublishingService exposes files on ${target.name}`, () => {
    test('service.files reads what the files service recorded, on the same database', async () => {
      const created = await target.create();
      const server = await startPublishing(created.url);
      const db = await openPublishingDatabase(created.url);
      const root = tempDir('pier-storage-');
      try {
        await addProduct(db, 'via-service');
        const files = filesService({ storage: localStorage(root), repo: filesRepository(db.db), limits: DEFAULT_LIMITS });
        await files.ensureTree('via-service');
        assert.equal(await server.service.files.changeStamp('via-service'), null);
        await put(files, 'via-service', 'update-site/1.0.0.zip', 'zip');
        assert.deepEqual((await server.service.files.listLabels('via-service')).map((l) => l.label), ['1.0.0']);
        assert.ok(await server.service.files.changeStamp('via-service'));
      } finally {
        await db.close();
        await server.close();
        await created.drop();
        fs.rmSync(root, { recursive: true, force: true });
      }
    });
  });
}

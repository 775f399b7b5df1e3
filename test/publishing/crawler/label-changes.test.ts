import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { type Database, migrate, openDatabase } from '../../../src/infra/database/index.js';
import { crawlsRepository } from '../../../src/publishing/crawler/repository.js';
import { type PublishingDB, publishingMigrations } from '../../../src/publishing/db.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { dialects } from '../../helpers/db.js';

/** label_changes (migration 0005): which changes of a product's files count for which label, and the backfill. */
const LIMITS = { quotaBytes: 1e12, quotaFiles: 1e6 };
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function addProduct(db: Kysely<PublishingDB>, id: string): Promise<void> {
  const at = '2026-01-01T00:00:00.000Z';
  await db
    .insertInto('products')
    .values({ id, name: id, state: 'hidden', fields: '{}', edit_token_hash: `h-${id}`, edit_token_id: `t-${id}`, sftp_username: id, sftp_password_hash: 'x', created_at: at, updated_at: at })
    .execute();
}

for (const target of dialects()) {
  describe(`label changes on ${target.name}`, () => {
    let handle: { url: string; drop(): Promise<void> };
    let database: Database<PublishingDB>;
    before(async () => {
      handle = await target.create();
      database = openDatabase<PublishingDB>(handle.url);
    });
    after(async () => {
      await database.close();
      await handle.drop();
    });

    test('backfill: labels changed since their crawl (or never crawled, or removed since) are due, up-to-date ones are not', async () => {
      const { db } = database;
      const upTo4 = Object.fromEntries(Object.entries(publishingMigrations).filter(([name]) => name < '0005'));
      await migrate(db, 'pier', upTo4);
      await addProduct(db, 'p');
      const put = (path: string, at: string) =>
        db.insertInto('product_files').values({ product_id: 'p', path, size: 10, modified_at: at, uploaded_at: at }).execute();
      await put('update-site/5.1/content.jar', '2026-02-01T00:00:00.000Z');
      await put('update-site/5.3/content.jar', '2026-03-01T00:00:00.000Z');
      await put('update-site/5.4/content.jar', '2026-02-01T00:00:00.000Z');
      await put('update-site/5.4.zip', '2026-02-01T00:00:00.000Z');
      const seq = Number((await db.selectFrom('product_storage').select('change_seq').where('product_id', '=', 'p').executeTakeFirstOrThrow()).change_seq);
      const crawl = (label: string, startedAt: string, filesSeq: number) =>
        db
          .insertInto('crawls')
          .values({ product_id: 'p', label, status: 'finished', url: 'u', started_at: startedAt, finished_at: startedAt, files_seq: filesSeq, summary: '{}', problems: '[]', units: '[]' })
          .execute();
      await crawl('5.4', '2026-02-02T00:00:00.000Z', seq); // crawled after its last upload
      await crawl('5.3', '2026-02-15T00:00:00.000Z', seq - 1); // uploaded to after its crawl
      await crawl('5.2', '2026-01-15T00:00:00.000Z', 0); // its files were removed after its crawl

      await migrate(db, 'pier', publishingMigrations);
      const repo = crawlsRepository(db, target.name);
      const due = await repo.dueLabels('9999-01-01T00:00:00.000Z', '0000-01-01T00:00:00.000Z');
      assert.deepEqual(due.map((d) => d.label), ['5.1', '5.2', '5.3']);
      for (const d of due) assert.equal(d.changed_seq, seq);
      assert.deepEqual([...(await repo.labelChanges('p')).keys()].sort(), ['5.1', '5.2', '5.3', '5.4'], 'archives are no label change');
      // Only settled changes: 5.3's last upload is at 2026-03-01.
      assert.deepEqual((await repo.dueLabels('2026-02-20T00:00:00.000Z', '0000-01-01T00:00:00.000Z')).map((d) => d.label), ['5.1', '5.2']);
    });

    test('triggers: add, replace, remove, rename in and out count for their labels; archives, assets and SETSTAT do not', async () => {
      const { db } = database;
      await migrate(db, 'pier', publishingMigrations);
      await addProduct(db, 'q');
      const files = filesRepository(db);
      const repo = crawlsRepository(db, target.name);
      const changes = async () => Object.fromEntries(await repo.labelChanges('q'));
      const row = async (label: string) =>
        db.selectFrom('label_changes').selectAll().where('product_id', '=', 'q').where('label', '=', label).executeTakeFirstOrThrow();
      const productSeq = async () => Number((await files.state('q'))!.change_seq);
      const upload = (path: string, at: string, size = 10) =>
        files.inProductLock('q', (rows) => rows.recordUploadWithin({ path, size, modified_at: at, uploaded_at: at }, LIMITS));

      assert.equal(await upload('update-site/5.4/content.jar', '2020-01-01T00:00:00.000Z'), true);
      const added = await productSeq();
      assert.deepEqual(await changes(), { '5.4': added });
      assert.equal((await row('5.4')).changed_at, '2020-01-01T00:00:00.000Z');

      await upload('update-site/5.4.zip', '2020-01-02T00:00:00.000Z');
      await upload('assets/logo.png', '2020-01-02T00:00:00.000Z');
      await files.inProductLock('q', (rows) => rows.setModifiedAt('update-site/5.4/content.jar', '2019-01-01T00:00:00.000Z'));
      assert.deepEqual(await changes(), { '5.4': added }, 'no change to the folder');

      await upload('update-site/5.4/content.jar', '2020-01-03T00:00:00.000Z', 20);
      const replaced = (await changes())['5.4']!;
      assert.ok(replaced > added && replaced <= (await productSeq()));
      assert.equal((await row('5.4')).changed_at, '2020-01-03T00:00:00.000Z');

      await upload('update-site/5.4/plugins/b.jar', '2020-01-04T00:00:00.000Z');
      await files.inProductLock('q', (rows) => rows.removeFile('update-site/5.4/plugins/b.jar'));
      const removed = await row('5.4');
      assert.ok(Number(removed.changed_seq) > replaced && Number(removed.changed_seq) <= (await productSeq()));
      assert.match(removed.changed_at, ISO);
      assert.ok(removed.changed_at > '2020-01-04T00:00:00.000Z', 'a removal counts at the time it happens');

      // A file renamed out of 5.4 into 5.5: both labels changed.
      await files.inProductLock('q', (rows) => rows.move('update-site/5.4/content.jar', 'update-site/5.5/content.jar', '2020-02-01T00:00:00.000Z'));
      const out = await changes();
      assert.ok(out['5.4']! > Number(removed.changed_seq) && out['5.5']! > Number(removed.changed_seq));

      // The whole folder renamed: the old label keeps its row (its nodes must go), the new one is new.
      await upload('update-site/5.5/p2.index', '2020-02-02T00:00:00.000Z');
      const before = await changes();
      await files.inProductLock('q', (rows) => rows.move('update-site/5.5', 'update-site/6.0', '2020-03-01T00:00:00.000Z'));
      const after = await changes();
      assert.ok(after['5.5']! > before['5.5']! && after['6.0']! > before['5.5']!);
      assert.deepEqual(Object.keys(after).sort(), ['5.4', '5.5', '6.0']);
      for (const v of Object.values(after)) assert.ok(v <= (await productSeq()), 'never ahead of the counter a crawl reads');
    });
  });
}

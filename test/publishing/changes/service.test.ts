/**
 * The changes service's choice of sides (changes/service.ts): defaults for `to` (the platform
 * release's label, else the highest) and `from` (the release of `to` before it — also after a
 * rollback — else the next lower label), and which values name nothing (404 naming the
 * parameter). Real database (SQLite and PostgreSQL), real label pointers on disk.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { localStorage } from '../../../src/infra/storage-local.js';
import { releaseNodesRepository } from '../../../src/publishing/changes/repository.js';
import { changesService } from '../../../src/publishing/changes/service.js';
import type { NodeSignature } from '../../../src/publishing/changes/signature.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { productFilesReader } from '../../../src/publishing/files/reader.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { releasesRepository } from '../../../src/publishing/releases/repository.js';
import { releaseKeys, releasesService } from '../../../src/publishing/releases/service.js';
import { dialects, tempDir } from '../../helpers/db.js';

const sig = (factoryClass: string): NodeSignature => ({
  factoryClass,
  name: factoryClass,
  categoryNames: [],
  deprecated: false,
  inPorts: [],
  outPorts: [],
  options: [],
  descriptionHash: null,
});

for (const dialect of dialects()) {
  test(`changes service: default sides, rollbacks, unknown labels and releases (${dialect.name})`, async () => {
    const target = await dialect.create();
    const database = await openPublishingDatabase(target.url);
    const storage = localStorage(tempDir('pier-changes-store-'));
    try {
      const { db } = database;
      const now = '2026-11-27T00:00:00.000Z';
      await db
        .insertInto('products')
        .values({ id: 'p', name: 'P', state: 'live', fields: '{}', edit_token_hash: 'x', edit_token_id: 'x', sftp_username: 'p', sftp_password_hash: 'x', created_at: now, updated_at: now })
        .execute();
      const files = productFilesReader(filesRepository(db));
      const products = productsRepository(db, database.dialect);
      const snapshots = releaseNodesRepository(db);
      const releases = releasesService({ storage, repo: releasesRepository(db), keep: 5 });
      const service = changesService({ snapshots, files, products, current: releases.current });
      const upload = (label: string) =>
        db.insertInto('product_files').values({ product_id: 'p', path: `update-site/${label}/content.jar`, size: 1, modified_at: now, uploaded_at: now }).execute();
      const crawled = (label: string, classes: string[]) =>
        db
          .insertInto('crawl_nodes')
          .values(
            classes.map((c) => ({
              product_id: 'p',
              label,
              factory_class: c,
              name: c,
              product_name: 'P',
              bundle: 'b',
              category_path: '/',
              category_names: '',
              short_description: '',
              deprecated: 0,
              data: '{}',
              icon_type: null,
              icon: null,
              sanitized: 1,
            })),
          )
          .execute();
      const release = async (label: string, classes: string[]) => {
        const rows = releasesRepository(db);
        const n = await rows.allocate('p', label, now, 1);
        await rows.markReleased('p', label, n, now, null);
        await snapshots.save('p', label, n, classes.map(sig), now);
        await storage.setPointer(releaseKeys.pointer('p', label), String(n));
        return n;
      };
      const sides = async (query: { from?: string; to?: string }) => {
        const r = await service.compare('p', query);
        return 'comparison' in r ? [r.comparison.from.value, r.comparison.to.value] : r.missing;
      };

      assert.equal(await sides({}), 'to', 'nothing uploaded: nothing to compare');
      assert.equal(await service.comparable('p'), false);

      await upload('5.9');
      await crawled('5.9', ['a.A']);
      assert.equal(await sides({}), 'from', 'one label, no releases');
      await release('5.9', ['a.A']);
      assert.equal(await sides({}), 'from', 'one label, one release: still nothing earlier');
      assert.equal(await service.comparable('p'), false);

      // "5.10" is above "5.9" (numeric order), as the product page orders labels.
      await upload('5.10');
      await crawled('5.10', ['a.A', 'a.B']);
      assert.deepEqual(await sides({}), ['5.9', '5.10']);
      assert.equal(await service.comparable('p'), true);
      const r = await service.compare('p', {});
      assert.ok('comparison' in r && r.comparison.diff.added[0]?.factoryClass === 'a.B');

      // The platform release names the recommended label: it is the default `to`.
      await products.putSetting('platform_release', '5.9');
      assert.equal(await sides({}), 'from', '5.9 has nothing earlier: no lower label, no earlier release');
      assert.deepEqual(await sides({ to: '5.10' }), ['5.9', '5.10']);
      await db.deleteFrom('settings').where('key', '=', 'platform_release').execute();

      // Releases of 5.10: the default `from` is the one before the current, also after a rollback.
      await release('5.10', ['a.A']);
      await release('5.10', ['a.A', 'a.B']);
      assert.deepEqual(await sides({}), ['5.10@1', '5.10']);
      assert.deepEqual(await sides({ to: '5.10@2' }), ['5.10@1', '5.10@2']);
      assert.deepEqual(await sides({ to: '5.10@1' }), ['5.9', '5.10@1'], 'no release before 1: the next lower label');
      await release('5.10', ['a.C']);
      await releases.rollback('p', '5.10', 2);
      assert.deepEqual(await sides({}), ['5.10@1', '5.10'], 'current is 2 after the rollback: 1 is the one before');
      assert.deepEqual(await sides({ to: '5.10@3' }), ['5.10@2', '5.10@3']);

      // A label whose folder is gone keeps its releases, but is no default and has no "now".
      await db.deleteFrom('product_files').where('path', '=', 'update-site/5.9/content.jar').execute();
      assert.deepEqual(await sides({ to: '5.10@1' }), 'from');
      assert.deepEqual(await sides({ from: '5.9@1', to: '5.10@1' }), ['5.9@1', '5.10@1']);

      // Values naming nothing: 404 naming the parameter.
      for (const [query, field] of [
        [{ to: '6.0' }, 'to'],
        [{ from: '5.9', to: '5.10' }, 'from'],
        [{ from: '5.10@9' }, 'from'],
        [{ to: '5.10@4' }, 'to'],
      ] as const) {
        await assert.rejects(
          service.compare('p', query),
          (e: { status?: number; errors?: { field: string }[] }) => e.status === 404 && e.errors?.[0]?.field === field,
          JSON.stringify(query),
        );
      }
      // A malformed value is a 400 before anything is read.
      await assert.rejects(service.compare('nothing', { to: '../x' }), (e: { status?: number }) => e.status === 400);
    } finally {
      await database.close();
      await target.drop();
    }
  });
}

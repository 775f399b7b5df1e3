/**
 * Release node snapshots (changes/repository.ts, migration 0013): stored per release, read only
 * for a kept, released release, gone with their release or product, and every write moves the
 * page change counter (pages built from them are never served stale). SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { releaseNodesRepository } from '../../../src/publishing/changes/repository.js';
import type { NodeSignature } from '../../../src/publishing/changes/signature.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { releasesRepository } from '../../../src/publishing/releases/repository.js';
import { pageChangesRepository } from '../../../src/publishing/web/changes-repository.js';
import { dialects } from '../../helpers/db.js';

const node = (factoryClass: string): NodeSignature => ({
  factoryClass,
  name: factoryClass,
  categoryNames: ['Ä / ü'],
  deprecated: false,
  inPorts: [{ index: 0, name: 'Table', type: null, group: null }],
  outPorts: [],
  options: [{ tab: 'Settings', names: ['Column'] }],
  descriptionHash: 'h',
  itemHashes: { 'option:Column': 'abcdefgh' },
});

for (const dialect of dialects()) {
  test(`release node snapshots: kept per released release, gone with it, counted as page changes (${dialect.name})`, async () => {
    const target = await dialect.create();
    const database = await openPublishingDatabase(target.url);
    try {
      const { db } = database;
      const now = '2026-11-27T00:00:00.000Z';
      await db
        .insertInto('products')
        .values({ id: 'p', name: 'P', state: 'hidden', fields: '{}', edit_token_hash: 'x', edit_token_id: 'x', sftp_username: 'p', sftp_password_hash: 'x', created_at: now, updated_at: now })
        .execute();
      const releases = releasesRepository(db);
      const snapshots = releaseNodesRepository(db);
      const counter = pageChangesRepository(db);
      const seq = async () => Number(await counter.seq());

      const one = await releases.allocate('p', '5.4', now, 1);
      const two = await releases.allocate('p', '5.4', now, 2);
      await releases.markReleased('p', '5.4', one, now, null);
      let before = await seq();
      await snapshots.save('p', '5.4', one, [node('a.A'), node('a.B')], now);
      assert.ok((await seq()) > before, 'a snapshot written moves the counter');
      await snapshots.save('p', '5.4', two, [node('a.A')], now);
      assert.deepEqual(await snapshots.find('p', '5.4', one), [node('a.A'), node('a.B')]);
      assert.equal(await snapshots.find('p', '5.4', two), undefined, 'a candidate is never compared');
      assert.deepEqual(await snapshots.list('p'), [{ label: '5.4', number: 1 }]);
      before = await seq();
      await releases.markReleased('p', '5.4', two, now, null);
      assert.ok((await seq()) > before, 'a release made moves the counter');
      assert.deepEqual(await snapshots.list('p'), [
        { label: '5.4', number: 2 },
        { label: '5.4', number: 1 },
      ]);
      await releases.markRefused('p', '5.4', two);
      assert.equal(await snapshots.find('p', '5.4', two), undefined, 'a refused copy is never compared');

      // Saving again replaces (a crawl of the same release run twice).
      await snapshots.save('p', '5.4', one, [node('a.C')], now);
      assert.deepEqual((await snapshots.find('p', '5.4', one))?.map((n) => n.factoryClass), ['a.C']);

      // A pruned release takes its snapshot along; so does a deleted product.
      before = await seq();
      await releases.remove('p', '5.4', one);
      assert.ok((await seq()) > before, 'a pruned release moves the counter');
      assert.equal(await snapshots.find('p', '5.4', one), undefined);
      assert.equal((await db.selectFrom('release_nodes').select('number').where('number', '=', one).execute()).length, 0);
      await db.deleteFrom('products').where('id', '=', 'p').execute();
      assert.equal((await db.selectFrom('release_nodes').selectAll().execute()).length, 0);

      // A snapshot of a release with no row is refused (nothing orphaned).
      await assert.rejects(snapshots.save('p', '6.0', 1, [], now));
    } finally {
      await database.close();
      await target.drop();
    }
  });
}

/**
 * The byte budget of a product's release node snapshots (changes/snapshot-budget.ts,
 * PIER_RELEASE_SNAPSHOT_BYTES): a vendor releasing big node catalogs under ever new labels grew
 * the database without bound (63 MB for one vendor). However many releases pass, the product's
 * snapshots stay within the budget, the oldest going first; one larger than the budget is not
 * kept; other products' snapshots are untouched. SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../../src/infra/config.js';
import { releaseNodesRepository } from '../../../src/publishing/changes/repository.js';
import type { NodeSignature } from '../../../src/publishing/changes/signature.js';
import { boundedSnapshots } from '../../../src/publishing/changes/snapshot-budget.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { releasesRepository } from '../../../src/publishing/releases/repository.js';
import { dialects } from '../../helpers/db.js';

/** `count` nodes whose signatures take about 300 bytes each. */
const nodes = (count: number, tag: string): NodeSignature[] =>
  Array.from({ length: count }, (_, i) => ({
    factoryClass: `org.example.${tag}.Node${i}Factory`,
    name: `Node ${i} — ${tag}`,
    categoryNames: ['Ä / ü'],
    deprecated: false,
    inPorts: [{ index: 0, name: 'Table', type: null, group: null }],
    outPorts: [],
    options: [{ tab: 'Settings', names: ['Column', 'Threads'] }],
    descriptionHash: 'x'.repeat(22),
    itemHashes: { 'option:Column': 'abcdefgh', 'option:Threads': 'ijklmnop' },
  }));

const BUDGET = 64 * 1024;

test('PIER_RELEASE_SNAPSHOT_BYTES is read as a size, 32 MiB by default', () => {
  assert.equal(loadConfig({}).publishing.releaseSnapshotBytes, 32 * 1024 ** 2);
  assert.equal(loadConfig({ PIER_RELEASE_SNAPSHOT_BYTES: '1M' }).publishing.releaseSnapshotBytes, 1024 ** 2);
  assert.throws(() => loadConfig({ PIER_RELEASE_SNAPSHOT_BYTES: 'lots' }), /PIER_RELEASE_SNAPSHOT_BYTES/);
});

for (const dialect of dialects()) {
  test(`a product's release node snapshots stay within their byte budget, oldest first (${dialect.name})`, async () => {
    const target = await dialect.create();
    const database = await openPublishingDatabase(target.url);
    try {
      const { db } = database;
      const at = (i: number) => new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString();
      for (const id of ['big', 'other']) {
        await db
          .insertInto('products')
          .values({ id, name: id, state: 'hidden', fields: '{}', edit_token_hash: id, edit_token_id: id, sftp_username: id, sftp_password_hash: 'x', created_at: at(0), updated_at: at(0) })
          .execute();
      }
      const releases = releasesRepository(db);
      const repo = releaseNodesRepository(db);
      const store = boundedSnapshots(repo, BUDGET);
      const released = async (product: string, label: string) => {
        const n = await releases.allocate(product, label, at(0), 1);
        await releases.markReleased(product, label, n, at(0), null);
        return n;
      };
      const other = await released('other', '1.0');
      await store.save('other', '1.0', other, nodes(150, 'other'), at(0));
      const otherBytes = (await repo.sizes('other'))[0]!.bytes;
      assert.ok(otherBytes > BUDGET / 2, `${otherBytes} bytes`);

      // 30 labels of 60 nodes (about 20 KB each): 600 KB unbounded, for a 64 KB budget.
      for (let i = 1; i <= 30; i++) {
        const label = `l${i}`;
        await store.save('big', label, await released('big', label), nodes(60, label), at(i));
        const sizes = await repo.sizes('big');
        const total = sizes.reduce((n, s) => n + s.bytes, 0);
        assert.ok(total <= BUDGET, `after ${i} releases the snapshots take ${total} bytes`);
        assert.equal(sizes.at(-1)?.label, label, 'the newest is kept');
      }
      // The newest that fit together, the oldest gone (each takes about the same room).
      const sizes = await repo.sizes('big');
      const each = Math.max(...sizes.map((s) => s.bytes));
      const kept = sizes.map((s) => s.label);
      assert.ok(kept.length >= 2 && (kept.length + 1) * (each - 100) > BUDGET, `kept ${kept.join(', ')} of ${each} bytes each`);
      assert.deepEqual(kept, Array.from({ length: kept.length }, (_, i) => `l${31 - kept.length + i}`));
      assert.equal(await repo.find('big', 'l1', 1), undefined);
      assert.equal((await repo.find('big', 'l30', 1))?.length, 60);

      // Saved again (a release crawled again): replaced, not counted twice.
      await store.save('big', 'l30', 1, nodes(60, 'l30b'), at(40));
      assert.deepEqual((await repo.sizes('big')).map((s) => s.label), kept);

      // Larger than the whole budget: not kept (and nothing else dropped for it).
      await store.save('big', 'huge', await released('big', 'huge'), nodes(400, 'huge'), at(50));
      assert.equal(await repo.find('big', 'huge', 1), undefined);
      assert.deepEqual((await repo.sizes('big')).map((s) => s.label), kept);
      // Another product's snapshots are its own budget.
      assert.equal((await repo.sizes('other'))[0]?.bytes, otherBytes);
    } finally {
      await database.close();
      await target.drop();
    }
  });
}

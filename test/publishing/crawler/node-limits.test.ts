// Node data counts against the product that causes it (crawler/node-limits.ts): a crawl lists at
// most PIER_CRAWL_MAX_NODES nodes of a label and keeps the product's node data within
// PIER_NODE_DATA_QUOTA, says so in the crawl report (a warning: the update site installs as
// uploaded), and records what it stored (crawls.node_count / node_bytes). Real uploads crawled
// through the real download host, on SQLite and PostgreSQL; the rule itself as a property.
import { localStorage } from '../../../src/infra/storage-local.js';
import { releasesRepository } from '../../../src/publishing/releases/repository.js';
import { releasesService } from '../../../src/publishing/releases/service.js';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { Database } from '../../../src/infra/database/index.js';
import { limitNodes, nodeBytes } from '../../../src/publishing/crawler/node-limits.js';
import { type CrawlNodeRow, crawlsRepository } from '../../../src/publishing/crawler/repository.js';
import { type CrawlerService, crawlerService } from '../../../src/publishing/crawler/service.js';
import { openPublishingDatabase, type PublishingDB } from '../../../src/publishing/db.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { buildSite, exampleSpec } from '../../helpers/p2-fixtures.js';
import { type Stack, startStack } from '../sftp/stack.js';

const row = (i: number, size: number): CrawlNodeRow => ({
  product_id: 'p',
  label: '1.0',
  factory_class: `a.N${i}`,
  name: `N${i}`,
  product_name: 'P',
  bundle: 'a',
  category_path: '/',
  category_names: '',
  short_description: '',
  deprecated: 0,
  data: 'x'.repeat(size),
  icon_type: null,
  icon: null,
  sanitized: 1,
});

test('the nodes kept: a prefix in the crawl order, within both limits, a warning for each limit that left nodes out', () => {
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: 0, max: 500 }), { maxLength: 40 }),
      fc.integer({ min: 1, max: 50 }),
      fc.integer({ min: 0, max: 20_000 }),
      fc.integer({ min: 0, max: 20_000 }),
      (sizes, perLabel, productBytes, other) => {
        const rows = sizes.map((s, i) => row(i, s));
        const r = limitNodes(rows, { perLabel, productBytes }, other, 'http://dl/p/1.0/');
        assert.ok(r.rows.length <= perLabel);
        assert.deepEqual(r.rows, rows.slice(0, r.rows.length), 'a prefix');
        assert.equal(r.bytes, r.rows.reduce((n, x) => n + nodeBytes(x), 0));
        assert.ok(r.rows.length === 0 || other + r.bytes <= productBytes);
        const codes = r.problems.map((p) => p.code);
        assert.equal(codes.includes('node_limit_exceeded'), rows.length > perLabel);
        assert.equal(codes.includes('node_data_quota_exceeded'), r.rows.length < Math.min(rows.length, perLabel));
        assert.ok(r.problems.every((p) => p.severity === 'warning'));
        // Nothing left out that would have fit: the next row is over a limit.
        const next = rows[r.rows.length];
        if (next) assert.ok(r.rows.length === perLabel || other + r.bytes + nodeBytes(next) > productBytes);
      },
    ),
  );
});

/** Uploads every file under `dir` to `<prefix>/…` of the product through the files service. */
async function upload(stack: Stack, productId: string, dir: string, prefix: string): Promise<void> {
  await stack.fileStore.ensureTree(productId);
  await stack.fileStore.makeDir(productId, prefix);
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isDirectory()) await stack.fileStore.makeDir(productId, `${prefix}/${path.relative(dir, path.join(entry.parentPath, entry.name)).split(path.sep).join('/')}`);
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    const bytes = fs.readFileSync(file);
    const u = await stack.fileStore.beginUpload(productId, `${prefix}/${path.relative(dir, file).split(path.sep).join('/')}`);
    await u.write(bytes, 0, bytes.length, 0);
    await u.commit();
  }
}

for (const target of dialects()) {
  describe(`node limits of a crawl on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let stack: Stack;
    let database: Database<PublishingDB>;
    let work: string;
    const crawlers: CrawlerService[] = [];
    const crawlerWith = (perLabel: number, productBytes: number) => {
      const c = crawlerService({
        crawls: crawlsRepository(database.db, database.dialect),
        products: productsRepository(database.db, database.dialect),
        files: stack.files,
        downloadUrl: stack.downloads.url,
        releases: releasesService({ storage: localStorage(stack.storageDir), repo: releasesRepository(database.db), keep: 3 }),
        nodeLimits: { perLabel, productBytes },
      });
      crawlers.push(c);
      return c;
    };
    const stored = async (productId: string, label: string) => {
      const nodes = await database.db.selectFrom('crawl_nodes').select('factory_class').where('product_id', '=', productId).where('label', '=', label).execute();
      const crawl = await database.db.selectFrom('crawls').select(['node_count', 'node_bytes']).where('product_id', '=', productId).where('label', '=', label).executeTakeFirstOrThrow();
      return { nodes: nodes.length, count: Number(crawl.node_count), bytes: Number(crawl.node_bytes) };
    };

    before(async () => {
      db = await target.create();
      stack = await startStack(db.url);
      database = await openPublishingDatabase(db.url);
      work = tempDir('pier-node-limits-');
      buildSite(path.join(work, 'site'), exampleSpec('jar', 'org.limits'));
    });
    after(async () => {
      for (const c of crawlers) await c.close();
      await database.close();
      await stack.close();
      await db.drop();
      fs.rmSync(work, { recursive: true, force: true });
    });

    test('a label lists at most the nodes per label; the report says how many were left out; the label is still released', async () => {
      await stack.register('many');
      await upload(stack, 'many', path.join(work, 'site'), 'update-site/5.4');
      const [crawl] = await crawlerWith(3, 64 * 1024 * 1024).crawl('many');
      assert.equal(crawl?.summary?.nodes, 4, 'the crawl found four nodes');
      assert.equal(crawl?.summary?.fatal, false);
      const warning = crawl?.problems.find((p) => p.code === 'node_limit_exceeded');
      assert.equal(warning?.severity, 'warning');
      assert.match(warning?.message ?? '', /has 4 nodes; the node catalog lists at most 3 nodes per label, so 1 are not listed/);
      assert.ok(!crawl?.problems.some((p) => p.severity !== 'warning'), JSON.stringify(crawl?.problems));
      const s = await stored('many', '5.4');
      assert.deepEqual([s.nodes, s.count], [3, 3]);
      assert.ok(s.bytes > 0);
    });

    test("the product's node data stays within its quota, every label together; a label crawled again is weighed without its own previous data", async () => {
      await stack.register('heavy');
      await upload(stack, 'heavy', path.join(work, 'site'), 'update-site/5.3');
      // The first label alone: its bytes measured with a roomy quota.
      const roomy = crawlerWith(100, 64 * 1024 * 1024);
      await roomy.crawl('heavy', '5.3');
      const first = await stored('heavy', '5.3');
      assert.equal(first.nodes, 4);
      // A quota with room for the first label and about half of a second one.
      const quota = first.bytes + Math.floor(first.bytes / 2);
      await upload(stack, 'heavy', path.join(work, 'site'), 'update-site/5.4');
      const [second] = await crawlerWith(100, quota).crawl('heavy', '5.4');
      const warning = second?.problems.find((p) => p.code === 'node_data_quota_exceeded');
      assert.equal(warning?.severity, 'warning', JSON.stringify(second?.problems));
      assert.match(warning?.message ?? '', /a product's node catalog holds at most/);
      const s = await stored('heavy', '5.4');
      assert.ok(s.nodes >= 1 && s.nodes < 4, `${s.nodes} nodes kept`);
      assert.equal(s.count, s.nodes);
      assert.ok(first.bytes + s.bytes <= quota);
      // Under the same quota, the first label crawled again keeps its own room (its old bytes do not count twice).
      const [again] = await crawlerWith(100, quota).crawl('heavy', '5.3');
      assert.ok(!again?.problems.some((p) => p.code === 'node_data_quota_exceeded'), JSON.stringify(again?.problems));
      assert.equal((await stored('heavy', '5.3')).nodes, 4);
    });
  });
}

// What of a crawl reaches the serving loop (the crawl itself runs in a worker): the worker hands
// over each node already in the form it is stored (its description serialized there), the whole
// result bounded (CrawlLimits.maxResultBytes, else a fatal `crawl_result_too_large`), and the
// serving process checks it by lengths alone and writes its rows in batches, letting the event
// loop serve between them.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_CRAWL_LIMITS } from '../../../src/publishing/crawler/crawl.js';
import { isolatedCrawler } from '../../../src/publishing/crawler/isolated.js';
import { crawlsRepository } from '../../../src/publishing/crawler/repository.js';
import { checkCrawlResult, InvalidCrawlResult } from '../../../src/publishing/crawler/result.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { buildSite, exampleSpec } from '../../helpers/p2-fixtures.js';
import { startPublishing } from '../../helpers/publishing.js';
import { serveDir } from './serve.js';

describe('crawl results handed to the serving process', () => {
  let root: string;
  let server: { url: string; close(): Promise<void> };
  before(async () => {
    root = tempDir('pier-result-bound-');
    buildSite(path.join(root, 'site'), exampleSpec('jar'));
    server = await serveDir(root);
  });
  after(async () => {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  test('nodes arrive as stored rows: the description serialized in the worker, no description object to copy or walk', async () => {
    const crawler = isolatedCrawler(DEFAULT_CRAWL_LIMITS);
    try {
      const r = await crawler.crawl(`${server.url}/site/`, `${server.url}/`);
      assert.equal(r.nodes.length, 4);
      for (const n of r.nodes) {
        assert.ok(!('description' in n), 'no description object crosses to the serving thread');
        assert.equal(typeof n.data, 'string');
        const data = JSON.parse(n.data);
        assert.equal(data.description.name, n.name);
        assert.equal(data.description.shortDescription, n.shortDescription);
        assert.deepEqual(Object.keys(data), ['bundleVersion', 'hidden', 'after', 'categoryNames', 'description', 'platforms']);
      }
    } finally {
      await crawler.close();
    }
  });

  test('a result over maxResultBytes ends the crawl as fatal crawl_result_too_large; none of it is handed over', async () => {
    const crawler = isolatedCrawler({ ...DEFAULT_CRAWL_LIMITS, maxResultBytes: 4096 });
    try {
      const r = await crawler.crawl(`${server.url}/site/`, `${server.url}/`);
      assert.deepEqual([r.nodes.length, r.units.length, r.categories.length], [0, 0, 0]);
      const p = r.problems.find((x) => x.code === 'crawl_result_too_large');
      assert.equal(p?.severity, 'fatal');
      assert.match(p?.message ?? '', /4 nodes .* over the limit/);
      assert.equal(r.summary.fatal, true);
      assert.ok(JSON.stringify(r).length < 4096 + 1024, 'what crossed is small');
    } finally {
      await crawler.close();
    }
  });

  test('the check refuses an oversized result by lengths alone', () => {
    const node = (i: number, data: string) => ({ factoryClass: `x.N${i}`, bundle: 'b', categoryPath: '/c', categoryNames: ['c'], deprecated: false, name: 'n', shortDescription: '', data, icon: null });
    const result = (nodes: unknown[]) => ({ url: 'http://x/', units: [], nodes, categories: [], nodeSets: [], problems: [], platformRange: null, summary: {} });
    const limits = { ...DEFAULT_CRAWL_LIMITS, maxResultBytes: 100_000 };
    assert.equal(checkCrawlResult(result([node(1, 'x'.repeat(50_000))]), limits).nodes.length, 1);
    assert.throws(() => checkCrawlResult(result([node(1, 'x'.repeat(50_000)), node(2, 'x'.repeat(50_000))]), limits), InvalidCrawlResult);
    assert.throws(() => checkCrawlResult(result([{ ...node(1, 'x'), data: { description: {} } }]), limits), /node\.data is not a string/);
  });
});

for (const target of dialects()) {
  test(`storing a crawl's nodes leaves the event loop free between batches (${target.name})`, async () => {
    const db = await target.create();
    const web = await startPublishing(db.url);
    const database = await openPublishingDatabase(db.url);
    try {
      await web.service.products.register('rows-ext', { name: 'Rows' });
      const repo = crawlsRepository(database.db, database.dialect);
      const row = { product_id: 'rows-ext', label: '5.4', url: 'http://x/', started_at: new Date().toISOString(), files_seq: 1 };
      await repo.start(row);
      const nodes = Array.from({ length: 1000 }, (_, i) => ({
        product_id: 'rows-ext',
        label: '5.4',
        factory_class: `org.rows.N${i}NodeFactory`,
        name: `N${i}`,
        product_name: 'Rows',
        bundle: 'org.rows',
        category_path: '/community',
        category_names: 'Community Nodes',
        short_description: 'x',
        deprecated: 0,
        data: JSON.stringify({ description: { intro: 'y'.repeat(2000) } }),
        icon_type: null,
        icon: null,
        sanitized: 1,
      }));
      // A heartbeat on the macrotask queue: it can only beat while the loop is free.
      let beats = 0;
      let on = true;
      const beat = () => {
        beats++;
        if (on) setImmediate(beat);
      };
      setImmediate(beat);
      const before = beats;
      await repo.finish({ ...row, status: 'finished', finished_at: new Date().toISOString(), summary: '{}', problems: '[]', units: '[]', platform_range: null }, nodes);
      on = false;
      assert.ok(beats - before >= 4, `${beats - before} heartbeats while 5 batches of 200 rows were written`);
      assert.equal((await repo.nodes('rows-ext', '5.4')).length, 1000);
    } finally {
      await database.close();
      await web.close();
      await db.drop();
    }
  });
}

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import type { Database } from '../../../src/infra/database/index.js';
import { crawlsRepository } from '../../../src/publishing/crawler/repository.js';
import { type CrawlerService, crawlerService } from '../../../src/publishing/crawler/service.js';
import { openPublishingDatabase, type PublishingDB } from '../../../src/publishing/db.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { releasesRepository } from '../../../src/publishing/releases/repository.js';
import { releasesService } from '../../../src/publishing/releases/service.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { buildComposite, buildSite, exampleSpec } from '../../helpers/p2-fixtures.js';
import { type Stack, startStack } from '../sftp/stack.js';

// Crawls of real uploads through the real download host: a failure of one label ends its crawl
// record (never "running") and never stops the others; errors block going live.

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
  describe(`crawl failures on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let stack: Stack;
    let database: Database<PublishingDB>;
    let crawler: CrawlerService;
    let work: string;
    const logged: object[] = [];
    /** Makes the database refuse rows of `table` for one product (a fault of ours, injected). */
    const refuse = async (table: 'crawls' | 'crawl_nodes', productId: string) => {
      if (target.name === 'postgres') await sql.raw(`ALTER TABLE ${table} ADD CONSTRAINT refuse_${productId} CHECK (product_id <> '${productId}') NOT VALID`).execute(database.db);
      else await sql.raw(`CREATE TRIGGER refuse_${productId} BEFORE INSERT ON ${table} WHEN new.product_id = '${productId}' BEGIN SELECT RAISE(ABORT, 'refused'); END`).execute(database.db);
    };
    const allow = async (table: 'crawls' | 'crawl_nodes', productId: string) => {
      if (target.name === 'postgres') await sql.raw(`ALTER TABLE ${table} DROP CONSTRAINT refuse_${productId}`).execute(database.db);
      else await sql.raw(`DROP TRIGGER refuse_${productId}`).execute(database.db);
    };

    before(async () => {
      db = await target.create();
      stack = await startStack(db.url);
      database = await openPublishingDatabase(db.url);
      crawler = crawlerService({
        crawls: crawlsRepository(database.db, database.dialect),
        products: productsRepository(database.db, database.dialect),
        files: stack.files,
        releases: releasesService({ storage: localStorage(stack.storageDir), repo: releasesRepository(database.db), keep: 3 }),
        downloadUrl: stack.downloads.url,
        log: { error: (o) => void logged.push(o) },
      });
      work = tempDir('pier-crawl-fail-');
    });
    after(async () => {
      await crawler.close();
      await database.close();
      await stack.close();
      await db.drop();
      fs.rmSync(work, { recursive: true, force: true });
    });

    test('a 100-character label is crawled, and one product failing never stops the automatic pass for the others', async () => {
      const long = `5.4.0-${'l'.repeat(94)}`;
      await stack.register('alpha');
      await stack.register('beta');
      buildSite(path.join(work, 'alpha'), exampleSpec('jar', 'org.alpha'));
      buildSite(path.join(work, 'beta'), exampleSpec('xz', 'org.beta'));
      await upload(stack, 'alpha', path.join(work, 'alpha'), `update-site/${long}`);
      await upload(stack, 'beta', path.join(work, 'beta'), 'update-site/5.4');

      // alpha comes first in the pass; the database refuses its crawl record.
      await refuse('crawls', 'alpha');
      const errors: string[] = [];
      assert.deepEqual(await crawler.crawlSettled(0, (label) => errors.push(label)), ['beta/5.4']);
      assert.deepEqual(errors, [`alpha/${long}`]);
      assert.equal((await crawler.report('beta'))[0]?.summary?.nodes, 4);
      await allow('crawls', 'alpha');

      assert.deepEqual(await crawler.crawlSettled(0, (label, e) => errors.push(`${label}: ${(e as Error).message}`)), [`alpha/${long}`]);
      assert.equal(errors.length, 1, errors.join('\n'));
      const [report] = await crawler.report('alpha');
      assert.equal(report?.label, long);
      assert.equal(report?.summary?.nodes, 4);
      assert.deepEqual(await crawler.liveBlockers('alpha'), []);
    });

    test('two versions of one bundle: the crawl finishes with the highest version\'s nodes and a warning', async () => {
      await stack.register('gamma');
      const spec = exampleSpec('jar', 'org.gamma');
      const nodes = spec.bundles.find((b) => b.id === 'org.gamma.nodes')!;
      spec.bundles.push({ ...nodes, version: '1.3.0.v20260301' });
      buildSite(path.join(work, 'gamma'), spec);
      await upload(stack, 'gamma', path.join(work, 'gamma'), 'update-site/5.4');
      const [c] = await crawler.crawl('gamma');
      assert.equal(c?.status, 'finished');
      assert.equal(c?.summary?.fatal, false);
      assert.equal(c?.summary?.nodes, 4);
      const dup = c!.problems.filter((p) => p.code === 'node_duplicate');
      assert.equal(dup.length, 4, JSON.stringify(c!.problems));
      assert.match(dup[0]!.message, /org\.gamma\.nodes 1\.3\.0\.v20260301, org\.gamma\.nodes 1\.2\.0\.v20260101: the node catalog lists the one in org\.gamma\.nodes 1\.3\.0\.v20260301$/);
      const rows = await crawlsRepository(database.db, database.dialect).nodes('gamma', '5.4');
      assert.deepEqual([...new Set(rows.map((r) => JSON.parse(r.data).bundleVersion))], ['1.3.0.v20260301']);
      assert.deepEqual(await crawler.liveBlockers('gamma'), []);
    });

    test('a result that cannot be stored ends the crawl as fatal (not running), keeps the last nodes and blocks enable', async () => {
      await refuse('crawl_nodes', 'gamma');
      try {
        const [c] = await crawler.crawl('gamma');
        assert.equal(c?.status, 'finished');
        assert.equal(c?.summary?.fatal, true);
        assert.deepEqual(c?.problems.map((p) => [p.severity, p.code, p.message]), [['fatal', 'crawl_failed', 'the crawl failed: its result could not be stored (the error is in the server log)']]);
        assert.equal(logged.length, 1, 'the database error is logged for operators');
      } finally {
        await allow('crawl_nodes', 'gamma');
      }
      assert.equal((await crawlsRepository(database.db, database.dialect).nodes('gamma', '5.4')).length, 4, 'the last good nodes stay');
      const blockers = await crawler.liveBlockers('gamma');
      assert.equal(blockers.length, 1);
      assert.match(blockers[0]!, /^the latest crawl of label 5\.4 has fatal problems: the crawl failed: its result could not be stored/);
    });

    test('a crawl with error problems (a missing artifact) blocks enable; --force goes live and lists what it overrode', async () => {
      await stack.register('delta');
      const spec = exampleSpec('jar', 'org.delta');
      spec.bundles.find((b) => b.id === 'org.delta.core')!.missing = true;
      buildSite(path.join(work, 'delta'), spec);
      await upload(stack, 'delta', path.join(work, 'delta'), 'update-site/5.4');
      const [c] = await crawler.crawl('delta');
      assert.equal(c?.summary?.fatal, false);
      assert.ok(c?.problems.some((p) => p.severity === 'error' && p.code === 'artifact_missing'), JSON.stringify(c?.problems));
      const expected = /^the latest crawl of label 5\.4 has 1 error \(installs from it may fail\): bundle org\.delta\.core 1\.2\.0\.v20260101 not found$/;
      await assert.rejects(crawler.enable('delta'), (e: Error) => {
        assert.match(e.message, /cannot go live: the latest crawl of label 5\.4 has 1 error/);
        assert.match(e.message, /--force/);
        return true;
      });
      assert.equal((await stack.products.show('delta')).state, 'hidden');
      const forced = await crawler.enable('delta', true);
      assert.equal(forced.forced, true);
      assert.equal(forced.blockers.length, 1);
      assert.match(forced.blockers[0]!, expected);
      assert.equal((await stack.products.show('delta')).state, 'live');
    });

    test("a composite child in another product's folder is refused, naming it; only the product's own label is indexed", async () => {
      await stack.register('victim');
      await stack.register('evil');
      buildSite(path.join(work, 'victim'), exampleSpec('jar', 'org.victim'));
      await upload(stack, 'victim', path.join(work, 'victim'), 'update-site/1.0');
      buildSite(path.join(work, 'evil-1.0'), exampleSpec('jar', 'org.evil'));
      buildComposite(path.join(work, 'evil-latest'), ['../1.0/', '../../victim/1.0/']);
      await upload(stack, 'evil', path.join(work, 'evil-1.0'), 'update-site/1.0');
      await upload(stack, 'evil', path.join(work, 'evil-latest'), 'update-site/latest');
      const latest = (await crawler.crawl('evil')).find((c) => c.label === 'latest')!;
      const refused = latest.problems.filter((p) => p.code === 'composite_child_refused');
      assert.equal(refused.length, 1, JSON.stringify(latest.problems));
      assert.equal(refused[0]!.message, `composite child "../../victim/1.0/" (${stack.downloads.url}/victim/1.0/) is outside this product's folder ${stack.downloads.url}/evil/: not read`);
      // A refused child is an error (installs from the composite would fail): not released, so
      // nothing of it is indexed; the product's own label 1.0 is, and nothing of the victim anywhere.
      assert.equal(latest.release.outcome, 'refused', latest.release.message);
      const repo = crawlsRepository(database.db, database.dialect);
      assert.equal((await repo.nodes('evil', 'latest')).length, 0);
      const own = await repo.nodes('evil', '1.0');
      assert.equal(own.length, 4);
      assert.deepEqual(own.filter((r) => !r.factory_class.startsWith('org.evil.')), []);
    });
  });
}

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { crawlsRepository } from '../../../src/publishing/crawler/repository.js';
import { crawlerService } from '../../../src/publishing/crawler/service.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { productFilesReader } from '../../../src/publishing/files/reader.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { releasesRepository } from '../../../src/publishing/releases/repository.js';
import { releasesService } from '../../../src/publishing/releases/service.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { buildSite, exampleSpec, PNG } from '../../helpers/p2-fixtures.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';
import { needsTool } from '../../helpers/tools.js';
import { openSshSftp, type Stack, startStack } from '../sftp/stack.js';

for (const target of dialects()) {
  describe(`crawl, report and going live on ${target.name}`, needsTool('sshpass'), () => {
    let db: { url: string; drop(): Promise<void> };
    let stack: Stack;
    let web: RunningPublishing;
    let work: string;
    let env: NodeJS.ProcessEnv;
    let token: string;
    let sftp: { username: string; password: string };
    const pier = (...args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        // Asynchronous: the download host the CLI crawls runs in this process.
        const child = spawn(process.execPath, ['bin/pier.js', ...args], { env });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c) => (stdout += c));
        child.stderr.on('data', (c) => (stderr += c));
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });

    before(async () => {
      db = await target.create();
      stack = await startStack(db.url);
      // The automatic loop is off: the test runs its passes itself, deterministically.
      web = await startPublishing(db.url, {}, { PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_CRAWL_SETTLE_SECONDS: '0' });
      work = tempDir('pier-crawl-svc-');
      env = { ...process.env, PIER_DATA_DIR: stack.dataDir, PIER_DATABASE_URL: db.url, PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_LOG_LEVEL: 'silent' };
      const creds = await stack.register('widgets');
      token = creds.editToken;
      sftp = creds.sftp;
      buildSite(path.join(work, 'site'), exampleSpec('xz'));
      const put = await openSshSftp(stack.sftp.port, sftp, [`put -r ${path.join(work, 'site')} /update-site/5.4`]);
      assert.equal(put.code, 0, put.stderr);
    });
    after(async () => {
      await web.close();
      await stack.close();
      await db.drop();
      fs.rmSync(work, { recursive: true, force: true });
    });

    test('enable is refused before a crawl; uploading alone never changes the state', async () => {
      const r = await pier('staff', 'enable', 'widgets');
      assert.equal(r.code, 1);
      assert.match(r.stderr, /cannot go live: label 5\.4 has not been crawled/);
      assert.equal((await stack.products.show('widgets')).state, 'hidden');
      // Rendered and cached before any crawl: no node list yet, and the label, with no release
      // yet, offers no URL (the next test sees both appear).
      const page = await (await fetch(`${web.url}/product/widgets`)).text();
      assert.ok(!page.includes('/widgets/5.4</code>') && page.includes('Not released yet') && !page.includes('id="nodes"'));
    });

    test('pier staff crawl reads the site from the download host and prints the summary; the report is in show and the API', async () => {
      const database = await openPublishingDatabase(db.url);
      const before = await productsRepository(database.db, database.dialect).pageStamp('widgets');
      assert.equal(before?.crawled, null);

      const human = await pier('staff', 'crawl', 'widgets');
      assert.equal(human.code, 0, human.stderr);
      assert.match(human.stdout, /crawl of 5\.4: finished .*\n +9 units, 2 features, 4 bundles, 1 category, 4 nodes, 1 node set, 0 problems/);
      const json = await pier('staff', 'crawl', 'widgets', '--label', '5.4', '--json');
      assert.equal(json.code, 0, json.stderr);
      const out = JSON.parse(json.stdout);
      assert.equal(out.labels.length, 1);
      assert.equal(out.labels[0].url, `${stack.downloads.url}/widgets/5.4/`);
      assert.deepEqual(out.labels[0].summary, { units: 9, features: 2, bundles: 4, categories: 1, nodes: 4, nodeSets: 1, problems: 0, fatal: false });
      assert.equal(out.labels[0].stale, false);
      const missing = await pier('staff', 'crawl', 'widgets', '--label', '9.9');
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /no uploaded update-site label "9\.9"/);

      // A finished crawl changes the page cache key.
      const after = await productsRepository(database.db, database.dialect).pageStamp('widgets');
      assert.equal(after?.crawled, out.labels[0].finishedAt);
      await database.close();

      // The download host unreachable: refused before anything is read or recorded; the last
      // good crawl and its nodes stay.
      const down = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ['bin/pier.js', 'staff', 'crawl', 'widgets', '--label', '5.4'], { env: { ...env, PIER_DOWNLOAD_URL: 'http://127.0.0.1:1' } });
        let stderr = '';
        child.stderr.on('data', (d) => {
          stderr += d;
        });
        child.on('close', (code) => resolve({ code, stderr }));
      });
      assert.equal(down.code, 1);
      assert.match(down.stderr, /the download host http:\/\/127\.0\.0\.1:1 does not answer \(bad port\).*Nothing was crawled\./s);
      const check = await openPublishingDatabase(db.url);
      const { crawlsRepository: repoOf } = await import('../../../src/publishing/crawler/repository.js');
      assert.equal((await repoOf(check.db, check.dialect).nodes('widgets', '5.4')).length, 4);
      await check.close();
      const kept = (await pier('staff', 'show', 'widgets')).stdout;
      assert.match(kept, /crawl of 5\.4: finished .*\n +9 units/);
      assert.doesNotMatch(kept, /FATAL/);
      assert.equal((await pier('staff', 'crawl', 'widgets', '--label', '5.4')).code, 0);

      const show = await pier('staff', 'show', 'widgets');
      assert.match(show.stdout, /crawl of 5\.4: finished/);
      // /community is the platform's own category (PIER_PLATFORM_CATEGORIES): no warning.
      assert.doesNotMatch(show.stdout, /category_undeclared/);

      const api = await fetch(`${web.url}/api/products/widgets/crawl`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(api.status, 200);
      const body = (await api.json()) as { labels: { label: string; summary: { nodes: number }; problems: unknown[] }[] };
      assert.equal(body.labels[0]?.label, '5.4');
      assert.equal(body.labels[0]?.summary.nodes, 4);
      const anon = await fetch(`${web.url}/api/products/widgets/crawl`);
      assert.equal(anon.status, 401);
      const wrong = await fetch(`${web.url}/api/products/widgets/crawl`, { headers: { authorization: 'Bearer pier_et_nope' } });
      assert.equal(wrong.status, 401);
    });

    test('node catalog: product page groups nodes by category while hidden; node pages; /nodes and the catalog only once live', async () => {
      const text = async (p: string) => {
        const r = await fetch(`${web.url}${p}`);
        return { status: r.status, type: r.headers.get('content-type'), body: await r.text() };
      };
      const page = await text('/product/widgets');
      assert.equal(page.status, 200);
      const nodes = page.body.slice(page.body.indexOf('id="nodes"'), page.body.indexOf('</section>', page.body.indexOf('id="nodes"')));
      // Groups by named category path, sorted; the DTD node sits one level deeper.
      assert.deepEqual([...nodes.matchAll(/<h3>([^<]*)<\/h3>/g)].map((m) => m[1]), ['Community Nodes / Example', 'Community Nodes / Example / Input/Output']);
      assert.deepEqual([...nodes.matchAll(/<a href="(\/product\/[^"]*)">([^<]*)<\/a>/g)].map((m) => [m[2], m[1]]), [
        ['Widget Joiner', '/product/widgets/nodes/org.example.nodes.JoinerNodeFactory'],
        ['Widget Learner', '/product/widgets/nodes/org.example.nodes.LearnerNodeFactory'],
        ['Widget Predictor', '/product/widgets/nodes/org.example.nodes.PredictorNodeFactory'],
        ['CSV Frobnicator Reader', '/product/widgets/nodes/org.example.nodes.CsvReaderNodeFactory'],
      ]);

      const node = await text('/product/widgets/nodes/org.example.nodes.LearnerNodeFactory');
      assert.equal(node.status, 200);
      for (const want of [
        '<h1>Widget Learner</h1>',
        'Widget Learner does v3.1 things.',
        'Widget Learner intro paragraph.',
        '<dt>Column</dt><dd class="node-markup">The column to use.</dd>',
        '<span class="port-name">Additional tables</span> <span class="pill muted port-group">Dynamic port group “Inputs”</span>',
        '<dt><span class="port-index">0</span><span class="port-name">Output table</span></dt>',
        '<dt>Category</dt><dd>Community Nodes / Example</dd>',
        `value="${stack.downloads.url}/widgets/5.4"`,
        '<a href="/product/widgets">widgets</a>',
        'src="/product/widgets/nodes/org.example.nodes.LearnerNodeFactory/icon"',
      ]) assert.ok(node.body.includes(want), `node page shows ${want}`);
      const icon = await fetch(`${web.url}/product/widgets/nodes/org.example.nodes.LearnerNodeFactory/icon`);
      assert.equal(icon.headers.get('content-type'), 'image/png');
      assert.ok(Buffer.from(await icon.arrayBuffer()).equals(PNG));
      assert.equal((await text('/product/widgets/nodes/org.example.Nope')).status, 404);

      const hits = async (q: string) => [...(await text(`/nodes?q=${encodeURIComponent(q)}`)).body.matchAll(/<a class="node-hit-name" href="([^"]*)">/g)].map((m) => m[1]);
      assert.deepEqual(await hits('frobnicator'), [], 'hidden products are not searched');
      assert.equal((await pier('staff', 'enable', 'widgets')).code, 0);
      assert.deepEqual(await hits('frobnicator'), ['/product/widgets/nodes/org.example.nodes.CsvReaderNodeFactory']);
      assert.deepEqual(await hits('FROBNIC'), ['/product/widgets/nodes/org.example.nodes.CsvReaderNodeFactory'], 'prefix, any case');
      assert.deepEqual(await hits('widget predictor'), ['/product/widgets/nodes/org.example.nodes.PredictorNodeFactory']);
      assert.equal((await hits('input/output')).length, 1, 'category names are searched');
      assert.equal((await hits('widgets')).length, 4, 'the product is searched');
      assert.deepEqual(await hits('"* OR NEAR( -- \''), [], 'query syntax is never passed through');
      // The catalog finds the product by a node's name.
      assert.match((await text('/?q=Frobnicator')).body, /href="\/product\/widgets"/);
      assert.equal((await pier('staff', 'disable', 'widgets')).code, 0);
      assert.deepEqual(await hits('frobnicator'), []);
      assert.doesNotMatch((await text('/?q=Frobnicator')).body, /href="\/product\/widgets"/);
    });

    test('enable after a clean crawl, disable back; a label with fatal problems blocks until --force', async () => {
      const on = await pier('staff', 'enable', 'widgets', '--json');
      assert.equal(on.code, 0, on.stderr);
      assert.deepEqual(JSON.parse(on.stdout), { productId: 'widgets', state: 'live', forced: false, blockers: [] });
      const off = await pier('staff', 'disable', 'widgets');
      assert.equal(off.code, 0, off.stderr);
      assert.equal((await stack.products.show('widgets')).state, 'hidden');

      // A label whose folder holds no P2 metadata: its crawl is fatal.
      fs.writeFileSync(path.join(work, 'readme.txt'), 'not a repository');
      const put = await openSshSftp(stack.sftp.port, sftp, ['mkdir /update-site/broken', `put ${path.join(work, 'readme.txt')} /update-site/broken/readme.txt`]);
      assert.equal(put.code, 0, put.stderr);
      const crawl = await pier('staff', 'crawl', 'widgets', '--label', 'broken');
      assert.equal(crawl.code, 1);
      assert.match(crawl.stdout, /FATAL/);
      const refused = await pier('staff', 'enable', 'widgets');
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /latest crawl of label broken has fatal problems/);
      assert.equal((await stack.products.show('widgets')).state, 'hidden');
      const forced = await pier('staff', 'enable', 'widgets', '--force');
      assert.equal(forced.code, 0, forced.stderr);
      assert.match(forced.stdout, /is live\.\nForced past: the latest crawl of label broken has fatal problems/);
      assert.equal((await stack.products.show('widgets')).state, 'live');
    });

    test('automatic re-crawl: a label is crawled once its upload has settled, also while live, by exactly one instance', async () => {
      assert.equal((await stack.products.show('widgets')).state, 'live');
      const spec = exampleSpec('jar');
      spec.bundles[1]!.nodes!.push({ factoryClass: 'org.example.nodes.GizmoNodeFactory', categoryPath: '/community/example', name: 'Gizmo Sorter', shortDescription: 'Sorts gizmos.', schema: 'v4.1' });
      buildSite(path.join(work, 'next'), spec);
      const put = await openSshSftp(stack.sftp.port, sftp, [`put -r ${path.join(work, 'next')} /update-site/5.5`]);
      assert.equal(put.code, 0, put.stderr);

      const crawler = web.service.crawler;
      assert.deepEqual(await crawler.crawlSettled(3_600_000), [], 'not settled yet: uploaded just now');
      assert.deepEqual(await crawler.crawlSettled(0), ['widgets/5.5'], 'only the label uploaded to since its last crawl');
      assert.deepEqual(await crawler.crawlSettled(0), [], 'nothing new');
      const search = await (await fetch(`${web.url}/nodes?q=gizmo`)).text();
      assert.match(search, /href="\/product\/widgets\/nodes\/org\.example\.nodes\.GizmoNodeFactory"/);

      // Two instances see the same settled upload: the claim lets one of them crawl it.
      const put2 = await openSshSftp(stack.sftp.port, sftp, [`put ${path.join(work, 'next', 'p2.index')} /update-site/5.5/p2.index`]);
      assert.equal(put2.code, 0, put2.stderr);
      const database = await openPublishingDatabase(db.url);
      try {
        const other = crawlerService({
          crawls: crawlsRepository(database.db, database.dialect),
          products: productsRepository(database.db, database.dialect),
          files: productFilesReader(filesRepository(database.db)),
          releases: releasesService({ storage: localStorage(stack.storageDir), repo: releasesRepository(database.db), keep: 3 }),
          downloadUrl: stack.downloads.url,
        });
        const [a, b] = await Promise.all([crawler.crawlSettled(0), other.crawlSettled(0)]);
        assert.deepEqual([...a, ...b], ['widgets/5.5']);
        // An instance that read the labels before the other one's crawl finished still loses:
        // the claim only replaces a crawl that started before the change it is for.
        const repo = crawlsRepository(database.db, database.dialect);
        const changed = (await repo.labelChanges('widgets')).get('5.5')!;
        const late = { product_id: 'widgets', label: '5.5', url: 'http://x/', started_at: new Date().toISOString(), files_seq: 0 };
        assert.equal(await repo.claim(late, { changedSeq: changed, staleBefore: '2000-01-01T00:00:00.000Z' }), false);
        assert.equal(await repo.claim(late, { changedSeq: changed + 1_000_000, staleBefore: '2000-01-01T00:00:00.000Z' }), true);
      } finally {
        await database.close();
      }
    });
  });
}

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
import { localStorage } from '../../../src/infra/storage-local.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { releasesRepository } from '../../../src/publishing/releases/repository.js';
import { releasesService } from '../../../src/publishing/releases/service.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { buildSite, exampleSpec } from '../../helpers/p2-fixtures.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';
import { needsTool } from '../../helpers/tools.js';
import { lftp, openSshSftp, type Stack, startStack } from '../sftp/stack.js';

/**
 * The catalog follows removals and renames, not only uploads: every change to a label's files
 * makes it due for re-crawl, a label with no files left loses its nodes, and going live needs
 * every label crawled after its last change.
 */
for (const target of dialects()) {
  describe(`re-crawl after removals and renames on ${target.name}`, { skip: needsTool('sshpass').skip || needsTool('lftp').skip }, () => {
    let db: { url: string; drop(): Promise<void> };
    let stack: Stack;
    let web: RunningPublishing;
    let work: string;
    let env: NodeJS.ProcessEnv;
    let sftp: { username: string; password: string };
    const GIZMO = '/product/gadgets/nodes/org.example.gizmos.GizmoNodeFactory';
    const CSV = '/product/gadgets/nodes/org.example.nodes.CsvReaderNodeFactory';
    const LEGACY_CSV = '/product/gadgets/nodes/org.legacy.nodes.CsvReaderNodeFactory';

    const pier = (...args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ['bin/pier.js', ...args], { env });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c) => (stdout += c));
        child.stderr.on('data', (c) => (stderr += c));
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });
    const hits = async (q: string) =>
      [...(await (await fetch(`${web.url}/nodes?q=${encodeURIComponent(q)}`)).text()).matchAll(/<a class="node-hit-name" href="([^"]*)">/g)].map((m) => m[1]).sort();
    const page = async () => (await fetch(`${web.url}/product/gadgets`)).text();
    const nodesOf = async (label: string) => {
      const database = await openPublishingDatabase(db.url);
      try {
        return (await crawlsRepository(database.db, database.dialect).nodes('gadgets', label)).map((n) => n.factory_class).sort();
      } finally {
        await database.close();
      }
    };
    const sftpRun = async (...commands: string[]) => {
      const r = await openSshSftp(stack.sftp.port, sftp, commands);
      assert.equal(r.code, 0, r.stderr);
    };

    before(async () => {
      db = await target.create();
      stack = await startStack(db.url);
      // The automatic loop is off: the test runs its passes itself, deterministically.
      web = await startPublishing(db.url, {}, { PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_CRAWL_SETTLE_SECONDS: '0' });
      work = tempDir('pier-crawl-changes-');
      env = { ...process.env, PIER_DATA_DIR: stack.dataDir, PIER_DATABASE_URL: db.url, PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_LOG_LEVEL: 'silent' };
      sftp = (await stack.register('gadgets')).sftp;
      // 5.4: the example nodes plus a bundle of its own with one node (its jar is removed later).
      const spec = exampleSpec('jar');
      spec.bundles.push({
        id: 'org.example.gizmos',
        version: '1.2.0.v20260101',
        nodes: [{ factoryClass: 'org.example.gizmos.GizmoNodeFactory', categoryPath: '/community/example', name: 'Gizmo Sorter', shortDescription: 'Sorts gizmos.', schema: 'v4.1' }],
      });
      spec.features[0]!.bundles.push('org.example.gizmos');
      buildSite(path.join(work, 'current'), spec);
      buildSite(path.join(work, 'legacy'), exampleSpec('jar', 'org.legacy'));
      fs.writeFileSync(path.join(work, 'readme.txt'), 'notes');
      await sftpRun(`put -r ${path.join(work, 'current')} /update-site/5.4`, `put -r ${path.join(work, 'legacy')} /update-site/5.3`, `put ${path.join(work, 'readme.txt')} /update-site/5.3/readme.txt`);
      const crawl = await pier('staff', 'crawl', 'gadgets');
      assert.equal(crawl.code, 0, crawl.stderr);
      assert.equal((await pier('staff', 'enable', 'gadgets')).code, 0);
    });
    after(async () => {
      await web?.close();
      await stack?.close();
      await db?.drop();
      fs.rmSync(work, { recursive: true, force: true });
    });

    test('a bundle jar removed over OpenSSH sftp: the next crawl pass refuses that upload as a release; downloaders and the catalog keep the release that has the jar', async () => {
      assert.deepEqual(await hits('gizmo'), [GIZMO]);
      assert.ok((await page()).includes('Gizmo Sorter'));
      const lastUpload = (await stack.fileStore.summary('gadgets')).lastUploadAt;

      await sftpRun('rm /update-site/5.4/plugins/org.example.gizmos_1.2.0.v20260101.jar');
      const crawler = web.service.crawler;
      assert.deepEqual(await crawler.crawlSettled(3_600_000), [], 'not settled yet: removed just now');
      // Two instances see the same settled removal: the claim lets exactly one of them crawl it.
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
        assert.deepEqual([...a, ...b], ['gadgets/5.4'], 'only the label whose files changed, by one instance');
        assert.deepEqual([...(await crawler.crawlSettled(0)), ...(await other.crawlSettled(0))], [], 'nothing new');
      } finally {
        await database.close();
      }

      // The upload lacks a jar its metadata names: installs from it would fail, so it was not
      // released: downloaders still get the release that has the jar, and the
      // catalog still lists what they get.
      assert.deepEqual(await hits('gizmo'), [GIZMO]);
      const html = await page();
      assert.ok(html.includes('Gizmo Sorter') && html.includes('Widget Joiner'), 'the page lists the released nodes');
      const jar = await fetch(`${stack.downloads.url}/gadgets/5.4/plugins/org.example.gizmos_1.2.0.v20260101.jar`);
      assert.equal(jar.status, 200, 'the current release still has the jar');
      assert.deepEqual(await hits('frobnicator'), [CSV, LEGACY_CSV]);
      const report = (await crawler.report('gadgets')).find((c) => c.label === '5.4')!;
      assert.equal(report.stale, false);
      assert.ok(report.problems.some((p) => p.code === 'artifact_missing' && p.message.includes('org.example.gizmos')));
      // "Last upload" still means the last upload: a removal is no upload.
      assert.equal((await stack.fileStore.summary('gadgets')).lastUploadAt, lastUpload);
    });

    // 5.4 lacks the jar removed above: installs from it fail, so its error blocks going live too.
    const MISSING_GIZMO = 'the latest crawl of label 5.4 has 1 error (installs from it may fail): bundle org.example.gizmos 1.2.0.v20260101 not found';

    test('enable is refused after a change until the label is crawled again; --force overrides and says so', async () => {
      assert.equal((await pier('staff', 'disable', 'gadgets')).code, 0);
      await sftpRun('rm /update-site/5.3/readme.txt');
      const show = await pier('staff', 'show', 'gadgets');
      assert.match(show.stdout, /crawl of 5\.3: finished \S+ \(files changed since\)/);
      assert.doesNotMatch(show.stdout, /crawl of 5\.4: finished \S+ \(files changed since\)/);

      const refused = await pier('staff', 'enable', 'gadgets');
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /cannot go live: the files of label 5\.3 changed after its latest crawl began \(\S+\): run `pier staff crawl gadgets` or wait for the automatic crawl/);
      assert.doesNotMatch(refused.stderr, /files of label 5\.4/);
      assert.ok(refused.stderr.includes(MISSING_GIZMO), refused.stderr);
      assert.equal((await stack.products.show('gadgets')).state, 'hidden');

      const forced = await pier('staff', 'enable', 'gadgets', '--force');
      assert.equal(forced.code, 0, forced.stderr);
      assert.match(forced.stdout, /is live\.\nForced past: the files of label 5\.3 changed after its latest crawl began/);
      assert.equal((await pier('staff', 'disable', 'gadgets')).code, 0);

      assert.equal((await pier('staff', 'crawl', 'gadgets', '--label', '5.3')).code, 0);
      const on = await pier('staff', 'enable', 'gadgets', '--force', '--json');
      assert.equal(on.code, 0, on.stderr);
      assert.deepEqual(JSON.parse(on.stdout), { productId: 'gadgets', state: 'live', forced: true, blockers: [MISSING_GIZMO] });
    });

    test('a label folder renamed: the new label is crawled, the old one loses its nodes and says why', async () => {
      await sftpRun('rename /update-site/5.3 /update-site/5.2');
      // Renamed away, not yet crawled: its nodes are still indexed, so going live would be stale.
      const blockers = await web.service.crawler.liveBlockers('gadgets');
      assert.deepEqual(blockers.map((b) => b.replace(/\(\S+\)/, '(…)')), [
        'label 5.2 has not been crawled',
        MISSING_GIZMO,
        'label 5.3 was removed after its latest crawl began (…) and its nodes are still listed: run `pier staff crawl gadgets` or wait for the automatic crawl',
      ]);
      assert.deepEqual(await web.service.crawler.crawlSettled(0), ['gadgets/5.2', 'gadgets/5.3']);
      assert.deepEqual(await nodesOf('5.3'), []);
      assert.equal((await nodesOf('5.2')).length, 4);
      assert.deepEqual(await web.service.crawler.liveBlockers('gadgets'), [MISSING_GIZMO]);

      const show = await pier('staff', 'show', 'gadgets');
      assert.match(show.stdout, /crawl of 5\.3: finished \S+\n +0 units, 0 features, 0 bundles, 0 categories, 0 nodes, 0 node sets, 1 problem\n +warning +label_removed +\S+\/gadgets\/5\.3\/ +update-site\/5\.3\/ holds no files: its nodes were removed from the node catalog/);
      assert.deepEqual(await hits('frobnicator'), [CSV, LEGACY_CSV], 'the legacy nodes now come from 5.2');
    });

    test('a whole label removed with lftp mirror -R --delete: its nodes leave /nodes and the page no longer lists it', async () => {
      const html = await page();
      assert.ok(html.includes('/gadgets/5.4</code>') && html.includes('org.example.nodes.JoinerNodeFactory'));
      const empty = path.join(work, 'empty');
      fs.mkdirSync(empty);
      const r = await lftp(stack.sftp.port, sftp, 'mirror -R --delete . /update-site/5.4', empty);
      assert.equal(r.code, 0, r.stderr);
      assert.equal((await stack.files.listLabels('gadgets')).find((l) => l.label === '5.4'), undefined);

      // The manual crawl of the product takes the removed label along (its nodes go too).
      const crawl = await pier('staff', 'crawl', 'gadgets');
      assert.equal(crawl.code, 0, crawl.stderr);
      assert.match(crawl.stdout, /crawl of 5\.4: finished \S+\n +0 units, [^\n]*0 nodes, 0 node sets, 1 problem\n +warning +label_removed/);
      assert.deepEqual(await web.service.crawler.crawlSettled(0), []);

      assert.deepEqual(await nodesOf('5.4'), []);
      assert.deepEqual(await hits('frobnicator'), [LEGACY_CSV]);
      const after = await page();
      assert.ok(!after.includes('/gadgets/5.4</code>') && !after.includes('org.example.nodes.JoinerNodeFactory'));
      assert.ok(after.includes('/gadgets/5.2</code>') && after.includes('org.legacy.nodes.JoinerNodeFactory'), 'the page shows the remaining label');
      assert.equal((await pier('staff', 'enable', 'gadgets')).code, 0, 'a removed label blocks nothing once crawled');
    });
  });
}

// Node pages and node icons are served from what the crawl stored, sanitized once in the crawl's
// worker (crawler/sanitize-node.ts): a vendor's megabyte of description or quarter-megabyte SVG
// icon is no longer run through the sanitizers on the serving event loop for every request (the
// review measured 0.2 s a request, enough for 8 anonymous clients to slow every other page, the
// downloads and SFTP logins). Rows crawled before migration 0008 are sanitized once when first
// served and stored again. No timing here: the tests show where the served bytes come from.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import { migrate, openDatabase } from '../../../src/infra/database/index.js';
import { sanitizeNodeMarkup } from '../../../src/publishing/content/node-markup.js';
import { sanitizeSvg } from '../../../src/publishing/content/svg.js';
import { crawlsRepository } from '../../../src/publishing/crawler/repository.js';
import { MAX_DESCRIPTION_HTML, NODE_SANITIZER_VERSION } from '../../../src/publishing/crawler/sanitize-node.js';
import { openPublishingDatabase, type PublishingDB, publishingMigrations } from '../../../src/publishing/db.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { buildSite, type NodeSpec } from '../../helpers/p2-fixtures.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';
import { needsTool } from '../../helpers/tools.js';
import { openSshSftp, type Stack, startStack } from '../sftp/stack.js';

const V = '1.0.0.v20260101';
const BIG = 'com.acme.nodes.BigNodeFactory';
const RICH = 'com.acme.nodes.RichNodeFactory';
const STORED = 'com.acme.nodes.StoredNodeFactory';
const OLD = 'com.acme.nodes.OldNodeFactory';

/** The review's description: ~1 MB of paragraphs with emphasis and a link each (within the crawler's 1 MiB). */
const PARAGRAPH = '<p><b>a</b> <i>b</i> <a href="http://x.example/">l</a></p>';
const bigDescription = `<?xml version="1.0" encoding="UTF-8"?>
<knimeNode icon="./BigNodeFactory.svg" type="Manipulator" xmlns="http://knime.org/node/v4.1">
  <name>Big Node</name>
  <shortDescription>Says a lot.</shortDescription>
  <fullDescription><intro>${PARAGRAPH.repeat(17_000)}</intro></fullDescription>
  <ports><inPort index="0" name="Table">A table.</inPort></ports>
</knimeNode>
`;
/** A 248 KB SVG icon with a script and an event handler (the crawler's icon limit is 256 KiB). */
const RECT = '<rect x="1" y="1" width="1" height="1" fill="#123456"/>';
const bigSvg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16" onload="alert(1)"><script>alert(2)</script>${RECT.repeat(Math.floor(248_000 / RECT.length))}</svg>`;

const richDescription = `<?xml version="1.0" encoding="UTF-8"?>
<knimeNode type="Manipulator" xmlns="http://knime.org/node/v4.1">
  <name>Rich Node</name>
  <shortDescription>Frobnicates with style.</shortDescription>
  <fullDescription>
    <intro>
      <p>It supports:</p>
      <ul><li><b>bold</b> modes</li><li><i>italic</i> modes with <tt>code()</tt></li></ul>
      <p>See <a href="https://docs.acme.example/rich">the manual</a>, not <a href="javascript:alert(document.domain)">this</a>.</p>
      <p>&lt;img src=x onerror=alert(1)&gt; stays text.</p>
    </intro>
  </fullDescription>
</knimeNode>
`;

const node = (factoryClass: string, name: string, rawDescription?: string): NodeSpec => ({
  factoryClass,
  categoryPath: '/community',
  name,
  shortDescription: `${name}.`,
  schema: 'v4.1',
  ...(rawDescription ? { rawDescription } : {}),
});

for (const target of dialects()) {
  describe(`node pages and icons served from the sanitized crawl on ${target.name}`, needsTool('sshpass'), () => {
    let db: { url: string; drop(): Promise<void> };
    let stack: Stack;
    let web: RunningPublishing;
    let work: string;
    let database: Awaited<ReturnType<typeof openPublishingDatabase>>;
    const url = (factory: string, icon = false) => `${web.url}/product/acme/nodes/${factory}${icon ? '/icon' : ''}`;
    const row = async (factory: string) => {
      const r = await crawlsRepository(database.db, database.dialect).node('acme', '5.4', factory);
      assert.ok(r, factory);
      return r;
    };
    const setRow = (factory: string, values: { data?: string; icon?: string; icon_type?: string; sanitized?: number }) =>
      database.db.updateTable('crawl_nodes').set(values).where('product_id', '=', 'acme').where('factory_class', '=', factory).execute();

    before(async () => {
      db = await target.create();
      stack = await startStack(db.url);
      web = await startPublishing(db.url, {}, { PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_CRAWL_SETTLE_SECONDS: '0' });
      database = await openPublishingDatabase(db.url);
      work = tempDir('pier-node-stored-');
      const creds = await stack.register('acme');
      buildSite(path.join(work, 'site'), {
        name: 'Acme',
        metadata: 'jar',
        features: [],
        bundles: [
          {
            id: 'com.acme.nodes',
            version: V,
            nodes: [node(BIG, 'Big Node', bigDescription), node(RICH, 'Rich Node', richDescription), node(STORED, 'Stored Node'), node(OLD, 'Old Node')],
            extraEntries: { 'com/acme/nodes/BigNodeFactory.svg': Buffer.from(bigSvg) },
          },
        ],
      });
      const put = await openSshSftp(stack.sftp.port, creds.sftp, [`put -r ${path.join(work, 'site')} /update-site/5.4`]);
      assert.equal(put.code, 0, put.stderr);
      const [crawl] = await web.service.crawler.crawl('acme');
      assert.equal(crawl?.summary?.nodes, 4, JSON.stringify(crawl));
    });
    after(async () => {
      await database?.close();
      await web?.close();
      await stack?.close();
      await db?.drop();
      fs.rmSync(work, { recursive: true, force: true });
    });

    it('the crawl stores the description and the icon sanitized, the description cut at 256 KiB with a warning', async () => {
      const big = await row(BIG);
      assert.equal(big.sanitized, NODE_SANITIZER_VERSION);
      const d = JSON.parse(big.data).description;
      assert.equal(d.markup, 'html');
      assert.equal(d.truncated, true);
      assert.ok(d.intro.length <= MAX_DESCRIPTION_HTML && d.intro.length > MAX_DESCRIPTION_HTML - 1024, `${d.intro.length}`);
      assert.ok(d.intro.startsWith('<p><b>a</b> <i>b</i> <a href="http://x.example/" rel="nofollow ugc noopener">l</a></p>'), d.intro.slice(0, 200));
      assert.ok(d.intro.endsWith('</p>'), 'the cut leaves well-formed markup');
      assert.equal(big.icon_type, 'image/svg+xml');
      const icon = Buffer.from(big.icon ?? '', 'base64').toString('utf8');
      assert.equal(icon, (sanitizeSvg(bigSvg) as { svg: string }).svg);
      assert.ok(!icon.includes('script') && !icon.includes('onload'));
      const [report] = await web.service.crawler.report('acme');
      assert.ok(report?.problems.some((p) => p.code === 'description_truncated' && p.where.endsWith(`!${BIG}`)), JSON.stringify(report?.problems));
    });

    it('served many times, a node page and icon are the stored bytes: the sanitizers do not run per request', async () => {
      // What the sanitizers would change (an element and attributes outside their allowlists),
      // stored as if a crawl had written it: only a server that reads storage serves it as is.
      const data = JSON.parse((await row(STORED)).data);
      data.description.intro = '<p>stored <span data-marker="1">as is</span></p>';
      const svg = `<svg xmlns="http://www.w3.org/2000/svg" data-marker="stored">${RECT}</svg>`;
      await setRow(STORED, { data: JSON.stringify(data), icon: Buffer.from(svg).toString('base64'), icon_type: 'image/svg+xml' });
      for (let i = 0; i < 5; i++) {
        const page = await fetch(url(STORED));
        assert.equal(page.status, 200);
        assert.ok((await page.text()).includes('<p>stored <span data-marker="1">as is</span></p>'));
        const icon = await fetch(url(STORED, true));
        assert.equal(icon.status, 200);
        assert.equal(icon.headers.get('content-type'), 'image/svg+xml; charset=utf-8');
        assert.equal(await icon.text(), svg);
      }
    });

    it('the node page shows the description’s markup (lists, links, emphasis) sanitized, and a cut one says so', async () => {
      const rich = await (await fetch(url(RICH))).text();
      assert.ok(rich.includes('<ul><li><b>bold</b> modes</li><li><i>italic</i> modes with <code>code()</code></li></ul>'), rich);
      assert.ok(rich.includes('<a href="https://docs.acme.example/rich" rel="nofollow ugc noopener">the manual</a>'));
      assert.ok(!rich.includes('javascript:'));
      assert.ok(rich.includes('&lt;img src=x onerror=alert(1)&gt; stays text.'));
      const bigPage = await fetch(url(BIG));
      const big = await bigPage.text();
      assert.ok(big.includes('This description is longer than a node page shows and was cut'));
      assert.ok(big.length < MAX_DESCRIPTION_HTML + 64 * 1024, `${big.length}`);
      assert.ok(big.split('rel="nofollow ugc noopener">l</a>').length > 3000);
      const icon = await fetch(url(BIG, true));
      assert.equal(icon.status, 200);
      assert.ok(!(await icon.text()).includes('script'));
    });

    it('a row stored before migration 0008 is sanitized on its first view and stored sanitized', async () => {
      const data = JSON.parse((await row(OLD)).data);
      const raw = '<p onclick="alert(1)">old<script>alert(2)</script> <b>bold</b></p>';
      data.description.intro = raw;
      const rawSvg = `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(3)"><script>alert(4)</script>${RECT}</svg>`;
      await setRow(OLD, { data: JSON.stringify(data), icon: Buffer.from(rawSvg).toString('base64'), icon_type: 'image/svg+xml', sanitized: 0 });
      const page = await (await fetch(url(OLD))).text();
      assert.ok(page.includes(sanitizeNodeMarkup(raw)), page);
      assert.ok(page.includes('<b>bold</b>') && !page.includes('onclick') && !page.includes('<script>alert(2)'));
      const stored = await row(OLD);
      assert.equal(stored.sanitized, NODE_SANITIZER_VERSION);
      assert.equal(JSON.parse(stored.data).description.intro, sanitizeNodeMarkup(raw));
      const svg = (sanitizeSvg(rawSvg) as { svg: string }).svg;
      assert.equal(Buffer.from(stored.icon ?? '', 'base64').toString('utf8'), svg);
      assert.equal(await (await fetch(url(OLD, true))).text(), svg);
    });
  });
}

for (const target of dialects()) {
  describe(`migration 0008 (crawl_nodes.sanitized) on ${target.name}`, () => {
    it('keeps the rows crawled before it as they were, marked unsanitized (0), and searchable', async () => {
      const handle = await target.create();
      const database = openDatabase<PublishingDB>(handle.url);
      try {
        const { db } = database;
        await migrate(db, 'pier', Object.fromEntries(Object.entries(publishingMigrations).filter(([name]) => name < '0008')));
        const at = '2026-01-01T00:00:00.000Z';
        await db
          .insertInto('products')
          .values({ id: 'p', name: 'P', state: 'live', fields: '{}', edit_token_hash: 'h', edit_token_id: 't', sftp_username: 'p', sftp_password_hash: 'x', created_at: at, updated_at: at })
          .execute();
        const data = JSON.stringify({ categoryNames: [], description: { intro: '<p onclick="x">raw</p>', markup: 'html' } });
        const old = { product_id: 'p', label: '5.4', factory_class: 'a.WidgetNodeFactory', name: 'Widget', product_name: 'P', bundle: 'a', category_path: '/', category_names: '', short_description: 'Frobs.', deprecated: 0, data, icon_type: null, icon: null };
        await (db as unknown as Kysely<Record<string, Record<string, unknown>>>).insertInto('crawl_nodes').values(old).execute();
        await migrate(db, 'pier', publishingMigrations);
        const repo = crawlsRepository(db, target.name);
        const r = await repo.node('p', '5.4', 'a.WidgetNodeFactory');
        assert.equal(r?.sanitized, 0);
        assert.equal(r?.data, data);
        await repo.storeSanitized({ ...old, data: '{}', sanitized: NODE_SANITIZER_VERSION });
        assert.equal((await repo.node('p', '5.4', 'a.WidgetNodeFactory'))?.sanitized, NODE_SANITIZER_VERSION);
        // An update of the unindexed columns leaves the search index (FTS5 on SQLite) intact.
        assert.deepEqual((await repo.searchNodes({ words: ['widget'], product: null, category: null }, 10)).map((h) => h.factory_class), ['a.WidgetNodeFactory']);
      } finally {
        await database.close();
        await handle.drop();
      }
    });
  });
}

// The node catalog (docs/vendors.md#your-nodes-in-the-node-catalog) against REAL node descriptions
// (node-catalog-fixtures.ts): two products, one with two labels whose writer description differs,
// uploaded with OpenSSH sftp, crawled by `pier staff crawl`, then read over HTTP and in Chromium
// (1280 and 390 px, light and dark) on every database.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { buildSite } from '../../helpers/p2-fixtures.js';
import { patchProduct, type RunningPublishing, startPublishing } from '../../helpers/publishing.js';
import { needsTool } from '../../helpers/tools.js';
import { openSshSftp, type Stack, startStack } from '../sftp/stack.js';
import { launchChromium, screenshotPath, VIEWPORTS } from './browser.js';
import { CROSSTAB, excelBundles, excelFeatures, OLD_WRITER, SHEETS, signalBundles, TAGGER, WRITER } from './node-catalog-fixtures.js';

/** The sizes the issue asks for: 1280 and 390 px. */
const SIZES = VIEWPORTS.filter((v) => v.width === 1280 || v.width === 390);

const nodePath = (product: string, factory: string) => `/product/${product}/nodes/${encodeURIComponent(factory)}`;

for (const target of dialects()) {
  describe(`node catalog from real node descriptions on ${target.name}`, needsTool('sshpass'), () => {
    let db: { url: string; drop(): Promise<void> };
    let stack: Stack;
    let web: RunningPublishing;
    let browser: Browser;
    let work: string;
    let env: NodeJS.ProcessEnv;
    const pier = (...args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ['bin/pier.js', ...args], { env });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c) => (stdout += c));
        child.stderr.on('data', (c) => (stderr += c));
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });
    const get = async (p: string) => {
      const r = await fetch(`${web.url}${p}`);
      return { status: r.status, body: await r.text() };
    };
    const page = async (p: string) => {
      const r = await get(p);
      assert.equal(r.status, 200, `${p}: ${r.body.slice(0, 300)}`);
      return r.body;
    };
    /** Text of the HTML with tags removed and whitespace folded: what a reader sees. */
    const text = (html: string) =>
      html
        .replace(/<[^>]+>/g, ' ')
        .replace(/&amp;/g, '&')
        .replace(/&#x27;|&#39;/g, "'")
        .replace(/&quot;/g, '"')
        .replace(/\s+/g, ' ');
    const section = (html: string, id: string) => {
      const start = html.indexOf(`id="${id}"`);
      assert.ok(start >= 0, `section ${id}`);
      return html.slice(start, html.indexOf('</section>', start));
    };

    before(async () => {
      db = await target.create();
      stack = await startStack(db.url);
      web = await startPublishing(db.url, {}, { PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_CRAWL_SETTLE_SECONDS: '0' });
      work = tempDir('pier-node-catalog-');
      env = { ...process.env, PIER_DATA_DIR: stack.dataDir, PIER_DATABASE_URL: db.url, PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_LOG_LEVEL: 'silent' };
      const excel = await stack.register('excel');
      const signals = await stack.register('signals');
      const patched = await patchProduct(web.url, 'excel', excel.editToken, {
        name: 'Excel Support',
        description: 'Read and write Excel workbooks',
        changelog: '# Changelog\n\n## [2.1.0] - 2026-01-10\n### Added\n- Sheet Tagger\n\n## [2.0.0] - 2025-06-01\n### Added\n- First release\n',
        style: { color1: '#0b6e4f', color2: '#21a179' },
      });
      assert.equal(patched.status, 200, JSON.stringify(patched.json));
      assert.equal((await patchProduct(web.url, 'signals', signals.editToken, { name: 'Cyface Signals', contact: { name: 'Cyface GmbH', email: 'info@cyface.example' } })).status, 200);
      for (const [label, version] of [
        ['5.2', '5.2.0.v20230601'],
        ['5.3', '5.3.0.v20240601'],
      ] as const) {
        const dir = path.join(work, `excel-${label}`);
        buildSite(dir, { name: 'KNIME Excel Support', metadata: 'jar', features: excelFeatures(version), bundles: excelBundles(label, version) });
        const put = await openSshSftp(stack.sftp.port, excel.sftp, [`put -r ${dir} /update-site/${label}`]);
        assert.equal(put.code, 0, put.stderr);
      }
      const sig = path.join(work, 'signals');
      buildSite(sig, { name: 'Cyface', metadata: 'xml', features: [], bundles: signalBundles('3.5.0.v20200101') });
      assert.equal((await openSshSftp(stack.sftp.port, signals.sftp, [`put -r ${sig} /update-site/5.3`])).code, 0);
      for (const id of ['excel', 'signals']) {
        const crawl = await pier('staff', 'crawl', id);
        assert.equal(crawl.code, 0, crawl.stderr);
      }
      // Live as staff would make them (the node search and the catalog list live products only).
      const other = await openPublishingDatabase(db.url);
      const repo = productsRepository(other.db, other.dialect);
      for (const id of ['excel', 'signals']) await repo.setState(id, 'live', new Date().toISOString());
      await other.close();
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
      await web?.close();
      await stack?.close();
      await db?.drop();
      if (work) fs.rmSync(work, { recursive: true, force: true });
    });

    it('node page: ports with fixed indexes and dynamic port groups, options, labels, the change, the install URL', async () => {
      const html = await page(nodePath('excel', WRITER));
      const t = text(html);
      assert.match(html, /<h1>Excel Writer<\/h1>/);
      assert.match(t, /Writes data tables to an Excel file\./);
      assert.match(t, /All platforms/);
      // Breadcrumb: product (icon, name) and the category path, which searches that category.
      assert.ok(html.includes('<a href="/product/excel">Excel Support</a>'));
      assert.ok(html.includes('<a href="/nodes?product=excel&amp;category=IO+%2F+Excel">IO › Excel</a>'), 'category links to the node search');
      // The product's colours carry into the node header.
      assert.match(html, /class="hero node-hero" style="--c1:#0b6e4f;--c2:#21a179/);
      const ports = text(section(html, 'node-ports'));
      assert.match(ports, /Input ports 0 Input table The data table to write\./);
      assert.match(ports, /\+ File system connection Dynamic port group “File System Connection” The file system connection\./);
      assert.match(ports, /\+ Additional input tables Dynamic port group “Sheet Input Ports” Additional data table to write\./);
      assert.match(ports, /Output ports None\./);
      const options = section(html, 'node-options');
      assert.deepEqual([...options.matchAll(/<dt>([^<]*)<\/dt>/g)].map((m) => m[1]), ['Create missing folders', 'If exists', 'Sheet name', 'Write row key', 'Autosize columns']);
      assert.match(options, /<li><i>Overwrite:<\/i> Will replace any existing file\.\s*<\/li>/);
      // Both labels, highest first, each with its update site; the description changed in 5.3.
      const labels = section(html, 'node-labels');
      assert.deepEqual([...labels.matchAll(/<span class="label-name">([^<]*)<\/span>/g)].map((m) => m[1]), ['5.3', '5.2']);
      assert.ok(labels.includes(`<code class="url">${stack.downloads.url}/excel/5.3</code>`));
      assert.ok(labels.includes(`<code class="url">${stack.downloads.url}/excel/5.2</code>`));
      assert.match(text(labels), /Description changed in 5\.3\./);
      // Install: the recommended label (the highest, with no platform release set).
      const install = section(html, 'node-install');
      assert.ok(install.includes(`value="${stack.downloads.url}/excel/5.3"`), install);
      assert.ok(install.includes(`data-copy="${stack.downloads.url}/excel/5.3"`));
      assert.ok(html.includes('<a href="/nodes?product=excel">All nodes of Excel Support</a>'));
      assert.ok(html.includes('<a class="nav-link" href="/nodes">Nodes</a>'), 'the header links the node search');
    });

    it('node page: options grouped by dialog tab, views, keywords, and an unchanged description', async () => {
      const sheets = await page(nodePath('excel', SHEETS));
      const opts = section(sheets, 'node-options');
      assert.match(opts, /<div class="node-tab"><h3>Tab “Settings”<\/h3><dl class="node-options"><div><dt>Mode<\/dt>/);
      assert.match(text(opts), /Include subfolders If this option is checked/);
      assert.match(text(section(sheets, 'node-ports')), /Input ports \+ File system connection Dynamic port group “File System Connection”.*Output ports 0 Output table The sheet names/);
      assert.match(text(section(sheets, 'node-labels')), /The description is the same in every update site listed\./);

      const crosstab = await page(nodePath('excel', CROSSTAB));
      assert.match(text(section(crosstab, 'node-ports')), /Output ports 0 Cross-Table The cross table in list form\. 1 Statistics Table The table with the statistics\./);
      const views = section(crosstab, 'node-views');
      assert.match(views, /<dt>Cross tabulation<\/dt><dd class="node-markup">The following properties are displayed in the cross tabulation view:/);
      assert.match(views, /<i>Frequency:<\/i> The cell frequency\./);
      assert.match(crosstab, /<span class="pill muted">Manipulator<\/span>/);

      const tagger = await page(nodePath('excel', TAGGER));
      assert.deepEqual([...tagger.matchAll(/<span class="keyword">([^<]*)<\/span>/g)].map((m) => m[1]), ['frobnicate', 'widget']);
      assert.match(text(section(tagger, 'node-labels')), /Only update site 5\.3 has this node\./);
    });

    it('a deprecated node names its replacement; the product page lists every label’s nodes, folded, the best open', async () => {
      const old = await page(nodePath('excel', OLD_WRITER));
      assert.match(old, /<span class="badge badge-deprecated">Deprecated<\/span>/);
      assert.ok(old.includes(`This node is deprecated.</strong> Use <a class="replacement-link" href="${nodePath('excel', WRITER)}">Excel Writer</a> instead.`));

      const product = section(await page('/product/excel'), 'nodes');
      assert.match(text(product), /From 2 update sites: 5\.3, 5\.2\./);
      const labels = [...product.matchAll(/<details class="node-label"( open)?><summary><span class="label-name">([^<]*)<\/span> <span class="node-count">([^<]*)<\/span>/g)].map((m) => [m[2], m[3], !!m[1]]);
      assert.deepEqual(labels, [
        ['5.3', '5 nodes', true],
        ['5.2', '4 nodes', false],
      ]);
      const first = product.slice(0, product.indexOf('<details class="node-label">'));
      assert.deepEqual([...first.matchAll(/<h3>([^<]*)<\/h3>/g)].map((m) => m[1]), ['Analytics', 'IO / Excel']);
      assert.ok(first.includes(`<img class="node-icon" src="${nodePath('excel', SHEETS)}/icon" alt width="32" height="32"/>`), 'icons at their own size');
      assert.match(text(first), /Excel Writer — Writes data tables to an Excel file\./);
      assert.match(first, /Excel Writer \(deprecated\)<\/a><span class="badge badge-deprecated">Deprecated<\/span>/);
      assert.ok(product.includes('<a href="/nodes?product=excel">Search the nodes of Excel Support</a>'));
    });

    it('node search: full text, filters by product and category in SQL, selects from what is indexed', async () => {
      const hits = (html: string) => [...html.matchAll(/<a class="node-hit-name" href="([^"]*)">([^<]*)<\/a>/g)].map((m) => m[2]);
      // Words match names, descriptions, categories and the product's name.
      assert.equal(hits(await page('/nodes?q=excel')).length, 5);
      const excel = await page('/nodes?q=writer');
      assert.deepEqual(hits(excel), ['Excel Writer', 'Excel Writer (deprecated)']);
      // Each hit: icon, name, short description, product and category.
      assert.match(excel, /<li class="node-hit"><span class="node-icon-slot"><img class="node-icon" src="[^"]*ExcelTableWriterNodeFactory\/icon" alt width="16" height="16"\/><\/span><div class="node-hit-body"><a class="node-hit-name" href="[^"]*">Excel Writer<\/a><p>Writes data tables to an Excel file\.<\/p><p class="node-hit-meta"><a href="\/product\/excel">Excel Support<\/a> · <a href="\/nodes\?product=excel&amp;category=IO\+%2F\+Excel">IO \/ Excel<\/a><\/p>/);
      // A filter without words lists its nodes.
      assert.deepEqual(hits(await page('/nodes?product=signals')), ['Signal Smoothing']);
      assert.deepEqual(hits(await page(`/nodes?category=${encodeURIComponent('IO / Excel')}`)).sort(), ['Excel Writer', 'Excel Writer (deprecated)', 'Read Excel Sheet Names (Labs)', 'Sheet Tagger']);
      // A category selects its subcategories too.
      assert.equal(hits(await page('/nodes?category=IO')).length, 4);
      assert.deepEqual(hits(await page('/nodes?q=smoothing&product=excel')), []);
      assert.deepEqual(hits(await page('/nodes?q=table&category=Analytics')), ['Crosstab (local)']);
      assert.deepEqual(hits(await page(`/nodes?category=${encodeURIComponent('Community Nodes / Cyface')}&product=signals`)), ['Signal Smoothing']);
      const form = await page('/nodes?product=excel&category=Analytics');
      assert.deepEqual([...form.matchAll(/<option value="([^"]*)"( selected)?>/g)].map((m) => `${m[1]}${m[2] ? '*' : ''}`), ['signals', 'excel*', 'Analytics*', 'Community Nodes / Cyface', 'IO / Excel']);
      // Hostile query strings: a clear 4xx or an empty answer, never a 5xx.
      for (const q of [
        `q=${'x'.repeat(201)}`,
        'product=excel&product=signals',
        `category=${'c'.repeat(1001)}`,
      ]) {
        const r = await get(`/nodes?${q}`);
        assert.equal(r.status, 400, `${q}: ${r.status}`);
      }
      for (const q of ["category=%25' OR 1=1 --", 'category=_', 'product=%25', 'q=%22*%20OR%20NEAR(&category=IO', 'category=%F0%9F%98%80%20%2F', 'q=&product=&category=', 'product=nope', 'category=IO%20%2F%20']) {
        const r = await get(`/nodes?${q}`);
        assert.equal(r.status, 200, `${q}: ${r.status} ${r.body.slice(0, 200)}`);
        if (!/^q=&product=&category=$/.test(q) && q !== 'category=IO%20%2F%20') assert.deepEqual(hits(r.body), [], q);
      }
    });

    it('catalog cards: version, vendor, nodes and last update', async () => {
      const html = await page('/');
      const card = (id: string) => {
        const start = html.indexOf(`href="/product/${id}"`);
        return text(html.slice(start, html.indexOf('</a>', start)));
      };
      assert.match(card('excel'), /Version 2\.1\.0 Vendor KNIME AG, Zurich, Switzerland Nodes 5 Updated \d{4}-\d{2}-\d{2}/);
      // No feature provider: the contact name; no changelog: no version.
      assert.match(card('signals'), /Vendor Cyface GmbH Nodes 1 Updated/);
      assert.doesNotMatch(card('signals'), /Version/);
    });

    it('in Chromium at 1280 and 390 px, light and dark: nothing overflows, node icons at their own size', async () => {
      const pages = [
        ['node', nodePath('excel', WRITER)],
        ['node-tabs', nodePath('excel', SHEETS)],
        ['node-search', '/nodes?category=IO'],
        ['product-nodes', '/product/excel#nodes'],
        ['catalog', '/'],
      ] as const;
      for (const size of SIZES) {
        for (const scheme of ['light', 'dark'] as const) {
          const ctx = await browser.newContext({ viewport: { width: size.width, height: size.height }, colorScheme: scheme, deviceScaleFactor: 2 });
          const p: Page = await ctx.newPage();
          for (const [name, url] of pages) {
            await p.goto(`${web.url}${url}`);
            const overflow = await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
            assert.equal(overflow, 0, `${name} at ${size.width} px ${scheme}: ${overflow} px of horizontal overflow`);
            const icons = await p.locator('img.node-icon').evaluateAll((imgs) =>
              (imgs as HTMLImageElement[]).filter((i) => i.complete && i.naturalWidth > 0).map((i) => ({ src: i.src, natural: [i.naturalWidth, i.naturalHeight], shown: [i.clientWidth, i.clientHeight], rendering: getComputedStyle(i).imageRendering })),
            );
            if (name !== 'catalog') assert.ok(icons.length > 0, `${name} draws node icons`);
            for (const i of icons) {
              const k = i.shown[0]! / i.natural[0]!;
              assert.ok(Number.isInteger(k) && k >= 1 && i.shown[1] === i.natural[1]! * k, `${name}: ${i.src} drawn ${i.shown} for ${i.natural}`);
              assert.equal(i.rendering, 'pixelated');
            }
            await p.screenshot({ path: screenshotPath(`nodes-${name}-${size.width}-${scheme}-${target.name}`), fullPage: true });
          }
          await ctx.close();
        }
      }
    });
  });
}

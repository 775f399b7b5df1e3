/**
 * What changed between two labels (docs/vendors.md#what-changed-between-labels), end to end: two
 * labels of a generated update site uploaded over SFTP (OpenSSH client) and released through the
 * API, then a second release of one label; the changes page and its JSON, the product page's link,
 * caching, hostile query values, and Chromium screenshots. Real SFTP server, download host and web
 * app on one storage, SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { freePort } from '../../helpers/net.js';
import { buildSite, descriptionXml, exampleSpec, type NodeSpec, type SiteSpec } from '../../helpers/p2-fixtures.js';
import { startPublishing } from '../../helpers/publishing.js';
import { hasTool, IN_CI } from '../../helpers/tools.js';
import { launchChromium, screenshotPath } from '../web/browser.js';
import { openSshSftp, startStack } from '../sftp/stack.js';

const P = 'org.example.nodes';

/** The example site with its node bundle's nodes changed by `edit`. */
function siteWith(edit: (nodes: NodeSpec[]) => NodeSpec[]): SiteSpec {
  const spec = exampleSpec();
  const bundle = spec.bundles.find((b) => b.id === 'org.example.nodes')!;
  bundle.nodes = edit(bundle.nodes!);
  return spec;
}

const scorer: NodeSpec = { factoryClass: `${P}.ScorerNodeFactory`, categoryPath: '/community/example', name: 'Widget Scorer', shortDescription: 'Scores widgets.', schema: 'v4.1' };

/** 5.3: the example nodes. 5.4: Joiner removed, Scorer added, Learner deprecated, Predictor's input port renamed, CSV reader moved. */
const v53 = siteWith((n) => n);
const v54 = siteWith((nodes) => [
  ...nodes
    .filter((n) => !n.factoryClass.endsWith('JoinerNodeFactory'))
    .map((n): NodeSpec => {
      if (n.factoryClass.endsWith('LearnerNodeFactory')) return { ...n, deprecated: true };
      if (n.factoryClass.endsWith('PredictorNodeFactory')) return { ...n, rawDescription: descriptionXml(n).replace('name="Input table"', 'name="Input model"') };
      if (n.factoryClass.endsWith('CsvReaderNodeFactory')) return { ...n, categoryPath: '/community/example' };
      return n;
    }),
  scorer,
]);
/** 5.4's second release: Scorer gets an option. */
const v54b = siteWith(() => [
  ...v54.bundles.find((b) => b.id === 'org.example.nodes')!.nodes!.filter((n) => n !== scorer),
  {
    ...scorer,
    rawDescription: descriptionXml(scorer).replace('Stops on the first error.</knime:option>', 'Stops on the first error.</knime:option><knime:option name="Threads">How many.</knime:option>'),
  },
]);

async function api(base: string, token: string | null, method: string, url: string) {
  const res = await fetch(`${base}${url}`, { method, headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: answers are read field by field and asserted
  return { status: res.status, type: res.headers.get('content-type') ?? '', json: (text.startsWith('{') ? JSON.parse(text) : {}) as Record<string, any> };
}

const names = (list: { name: string }[]) => list.map((n) => n.name);

// OpenSSH's sftp with sshpass uploads the sites; CI has both (a missing tool fails there).
const runs = IN_CI || hasTool('sshpass');

for (const dialect of dialects()) {
  if (runs)
    test(`what changed between labels and releases: page, JSON, link, caching, hostile values (${dialect.name})`, { timeout: 300_000 }, async () => {
      const db = await dialect.create();
      const port = await freePort();
      const downloadUrl = `http://127.0.0.1:${port}`;
      const env = { PIER_DOWNLOAD_PORT: String(port), PIER_DOWNLOAD_URL: downloadUrl, PIER_CRAWL_SETTLE_SECONDS: '0' };
      const stack = await startStack(db.url, { env });
      const web = await startPublishing(db.url, {}, { ...env, PIER_STORAGE_DIR: stack.storageDir });
      const work = tempDir('pier-changes-');
      try {
        const creds = await stack.register('gadgets');
        const token = creds.editToken;
        const upload = async (label: string, spec: SiteSpec, name: string) => {
          const dir = path.join(work, name);
          buildSite(dir, spec);
          const r = await openSshSftp(stack.sftp.port, creds.sftp, [`-mkdir /update-site/${label}`, `put -r ${dir}/* /update-site/${label}/`]);
          assert.equal(r.code, 0, r.stderr);
          const rel = await api(web.url, token, 'POST', `/api/products/gadgets/labels/${label}/release`);
          assert.equal(rel.status, 200, JSON.stringify(rel.json));
          return rel.json.release.number as number;
        };

        // One label: nothing to compare yet, and the product page has no link.
        assert.equal(await upload('5.3', v53, 'v53'), 1);
        const lone = await api(web.url, token, 'GET', '/api/products/gadgets/changes');
        assert.equal(lone.status, 404);
        assert.equal(lone.json.errors[0].field, 'from');
        assert.doesNotMatch(await (await fetch(`${web.url}/product/gadgets`)).text(), /What changed/);
        const lonePage = await fetch(`${web.url}/product/gadgets/changes`);
        assert.equal(lonePage.status, 200);
        assert.match(await lonePage.text(), /no earlier label or release to compare 5\.3 with/);

        assert.equal(await upload('5.4', v54, 'v54'), 1);

        // Defaults: to = the highest label (no platform release set), from = the next lower label.
        const first = await api(web.url, token, 'GET', '/api/products/gadgets/changes');
        assert.equal(first.status, 200, JSON.stringify(first.json));
        const d = first.json;
        assert.deepEqual([d.from, d.to], [
          { label: '5.3', release: null, value: '5.3' },
          { label: '5.4', release: null, value: '5.4' },
        ]);
        assert.deepEqual(names(d.added), ['Widget Scorer']);
        assert.equal(d.added[0].url, `/product/gadgets/nodes/${P}.ScorerNodeFactory`);
        assert.deepEqual(names(d.removed), ['Widget Joiner']);
        assert.equal(d.removed[0].url, `/product/gadgets/nodes/${P}.JoinerNodeFactory`, '5.3 still has it: its page exists');
        assert.deepEqual(names(d.deprecated), ['Widget Learner']);
        assert.deepEqual(
          d.changed.map((n: { name: string; changes: { text: string }[] }) => [n.name, n.changes.map((c) => c.text)]),
          [
            ['CSV Frobnicator Reader', ['Category: Community Nodes / Example / Input/Output → Community Nodes / Example']],
            ['Widget Predictor', ['Input port 1: Input table → Input model']],
          ],
        );
        assert.equal(d.changed[1].changes[0].kind, 'port-changed');
        assert.equal(d.changed[1].changes[0].side, 'input');

        // The other way round: added and removed swap; the Learner is no longer deprecated.
        const back = await api(web.url, token, 'GET', '/api/products/gadgets/changes?from=5.4&to=5.3');
        assert.deepEqual([names(back.json.added), names(back.json.removed)], [['Widget Joiner'], ['Widget Scorer']]);
        assert.deepEqual(
          back.json.changed.find((n: { name: string }) => n.name === 'Widget Learner').changes.map((c: { text: string }) => c.text),
          ['No longer deprecated'],
        );

        // The page: same content, node names linking to node pages, a GET form of both selects.
        const page = await fetch(`${web.url}/product/gadgets/changes`);
        assert.equal(page.status, 200);
        const html = await page.text();
        assert.match(html, /<form class="changes-form" action="\/product\/gadgets\/changes" method="get">/);
        assert.match(html, /<option value="5\.3" selected>/);
        assert.match(html, /<option value="5\.4@1" selected>|<option value="5\.4" selected>/);
        assert.match(html, /<option value="5\.4@1">5\.4 release 1 \(current\)<\/option>/);
        for (const [id, name] of [
          ['added', 'Widget Scorer'],
          ['removed', 'Widget Joiner'],
          ['deprecated', 'Widget Learner'],
          ['changed', 'Widget Predictor'],
        ]) {
          const section = html.slice(html.indexOf(`id="${id}"`), html.indexOf('</section>', html.indexOf(`id="${id}"`)));
          assert.ok(section.includes(`>${name}</a>`), `${name} in ${id}: ${section}`);
        }
        assert.match(html, /href="\/product\/gadgets\/nodes\/org\.example\.nodes\.ScorerNodeFactory">Widget Scorer<\/a>/);
        assert.match(html, /<li>Input port 1: Input table → Input model<\/li>/);
        // Not live yet: shown with the notice and noindex, as the product page is.
        assert.match(html, /Not live yet/);
        assert.match(html, /<meta name="robots" content="noindex"/);
        assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/);

        // The product page links to it now.
        assert.match(await (await fetch(`${web.url}/product/gadgets`)).text(), /<a href="\/product\/gadgets\/changes">What changed<\/a>/);

        // Cached with an ETag like the other pages.
        const etag = page.headers.get('etag')!;
        assert.ok(etag);
        assert.equal((await fetch(`${web.url}/product/gadgets/changes`, { headers: { 'if-none-match': etag } })).status, 304);

        // An empty comparison says so.
        const same = await (await fetch(`${web.url}/product/gadgets/changes?from=5.4&to=5.4`)).text();
        assert.match(same, /no node changes \(4 nodes in both, unchanged\)/);

        // A second release of 5.4: the default `from` of 5.4 becomes its previous release, and
        // the page shows it on the next request (same URL, no cache left over).
        assert.equal(await upload('5.4', v54b, 'v54b'), 2);
        const second = await api(web.url, token, 'GET', '/api/products/gadgets/changes?to=5.4');
        assert.equal(second.status, 200, JSON.stringify(second.json));
        assert.equal(second.json.from.value, '5.4@1');
        assert.deepEqual([second.json.added, second.json.removed, second.json.deprecated], [[], [], []]);
        assert.deepEqual(
          second.json.changed.map((n: { name: string; changes: { text: string }[] }) => [n.name, n.changes.map((c) => c.text)]),
          [['Widget Scorer', ['Option “Threads” added (outside tabs)']]],
        );
        const between = await api(web.url, token, 'GET', '/api/products/gadgets/changes?from=5.4%401&to=5.4%402');
        assert.deepEqual(between.json.changed, second.json.changed);
        const fresh = await fetch(`${web.url}/product/gadgets/changes`, { headers: { 'if-none-match': etag } });
        assert.equal(fresh.status, 200, 'a release shows on the next request');
        const freshHtml = await fresh.text();
        assert.match(freshHtml, /From <strong>5\.4@1<\/strong> to <strong>5\.4<\/strong>/);
        assert.match(freshHtml, /Option “Threads” added/);
        assert.match(freshHtml, /<option value="5\.4@2">5\.4 release 2 \(current\)<\/option>/);
        const vs53 = await (await fetch(`${web.url}/product/gadgets/changes?from=5.3&to=5.4%401`)).text();
        assert.match(vs53, /1 added, 1 removed, 1 deprecated, 2 changed, 0 unchanged/);

        // A release without a snapshot (made before they were kept) gets one when it is crawled again.
        const database = await openPublishingDatabase(db.url);
        try {
          await database.db.deleteFrom('release_nodes').where('product_id', '=', 'gadgets').where('label', '=', '5.4').where('number', '=', 2).execute();
        } finally {
          await database.close();
        }
        assert.equal((await api(web.url, token, 'GET', '/api/products/gadgets/changes?from=5.4@1&to=5.4@2')).status, 404);
        const again = await api(web.url, token, 'POST', '/api/products/gadgets/labels/5.4/release');
        assert.equal(again.json.unchanged, true, JSON.stringify(again.json));
        const restored = await api(web.url, token, 'GET', '/api/products/gadgets/changes?from=5.4@1&to=5.4@2');
        assert.equal(restored.status, 200, JSON.stringify(restored.json));
        assert.deepEqual(restored.json.changed, second.json.changed);

        // Hostile values: a clear 4xx naming the parameter, never a 5xx.
        const hostile: [string, number, string | null][] = [
          [`to=${'9'.repeat(5000)}`, 400, null],
          [`to=${'9'.repeat(200)}`, 400, 'to'],
          ['from=..%2F5.3', 400, 'from'],
          ['from=../5.3', 400, 'from'],
          ['to=5.4%00', 400, null],
          ['to=%E2%80%AE5.4', 400, 'to'],
          ['to=5.4%C3%A9', 400, 'to'],
          ['from=5.3&from=5.4', 400, null],
          ['to=5.4@0', 400, 'to'],
          ['to=5.4@', 400, 'to'],
          ['from=%25', 400, 'from'],
          ['to=6.0', 404, 'to'],
          ['from=5.3@99', 404, 'from'],
          ['from=5.4@3', 404, 'from'],
          ['to=5.3@999999999', 404, 'to'],
        ];
        for (const [q, status, field] of hostile) {
          const a = await api(web.url, token, 'GET', `/api/products/gadgets/changes?${q}`);
          assert.equal(a.status, status, `${q}: ${JSON.stringify(a.json)}`);
          assert.match(a.type, /problem\+json/, q);
          if (field) assert.equal(a.json.errors?.[0]?.field, field, `${q}: ${JSON.stringify(a.json)}`);
          const p = await fetch(`${web.url}/product/gadgets/changes?${q}`);
          assert.equal(p.status, status, `page ${q}`);
          const body = await p.text();
          if (field) assert.match(body, new RegExp(field === 'to' ? /\bto\b|label/.source : /\bfrom\b|label/.source), q);
        }
        assert.equal((await fetch(`${web.url}/product/nothing/changes`)).status, 404);
        assert.equal((await api(web.url, null, 'GET', '/api/products/gadgets/changes')).status, 401);
        const other = await stack.register('other');
        assert.equal((await api(web.url, other.editToken, 'GET', '/api/products/gadgets/changes')).status, 401);

        // Chromium, light and dark, desktop and phone; works without JavaScript (a plain GET form).
        if (IN_CI || hasTool('chromium')) {
          const browser = await launchChromium();
          try {
            for (const vp of [
              { name: 'desktop', width: 1280, height: 900 },
              { name: 'phone', width: 390, height: 844 },
            ]) {
              for (const colorScheme of ['light', 'dark'] as const) {
                const context = await browser.newContext({ viewport: vp, colorScheme, javaScriptEnabled: false });
                const tab = await context.newPage();
                await tab.goto(`${web.url}/product/gadgets/changes?from=5.3&to=5.4`);
                const overflow = await tab.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
                assert.ok(overflow <= 0, `no sideways scrolling at ${vp.width} px (${overflow} px)`);
                await tab.screenshot({ path: screenshotPath(`changes-${vp.name}${colorScheme === 'dark' ? '-dark' : ''}`), fullPage: true });
                if (vp.name === 'desktop' && colorScheme === 'light') {
                  // The form, without script: choose 5.4 release 1 → 5.4 and submit.
                  await tab.selectOption('select[name="from"]', '5.4@1');
                  await tab.selectOption('select[name="to"]', '5.4');
                  await Promise.all([tab.waitForURL(/from=5\.4%401&to=5\.4$/), tab.click('.changes-form button[type="submit"]')]);
                  assert.match(await tab.content(), /Option “Threads” added/);
                }
                await context.close();
              }
            }
          } finally {
            await browser.close();
          }
        }
      } finally {
        await web.close();
        await stack.close();
        await db.drop();
        fs.rmSync(work, { recursive: true, force: true });
      }
    });
}

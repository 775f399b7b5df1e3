import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dialects, tempDir } from '../../helpers/db.js';
import { buildSite, type SiteSpec } from '../../helpers/p2-fixtures.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';
import { needsTool } from '../../helpers/tools.js';
import { openSshSftp, type Stack, startStack } from '../sftp/stack.js';
import { launchChromium, screenshotPath } from './browser.js';

/** A site of one feature whose bundles require `org.knime.*` units at the given ranges. */
function siteRequiring(label: string, ...requirements: [string, string][]): SiteSpec {
  const v = '1.0.0.v20260101';
  const bundles = requirements.map(([name, range], i) => ({
    id: `com.vendor.widgets.b${i}`,
    version: v,
    // The node search's "works with" filter: a node every label has, and one of this label only.
    nodes:
      i === 0
        ? [
            { factoryClass: 'com.vendor.widgets.WidgetReaderNodeFactory', categoryPath: '/community', name: 'Widget Reader', shortDescription: 'Reads widgets.', schema: 'v4.1' as const },
            { factoryClass: `com.vendor.widgets.Only${label.replace('.', '')}NodeFactory`, categoryPath: '/community', name: `Widget Only ${label}`, shortDescription: 'One label.', schema: 'v4.1' as const },
          ]
        : [],
    requires: [
      { namespace: 'osgi.bundle', name, range },
      { namespace: 'osgi.bundle', name: 'org.eclipse.core.runtime', range: '[3.7.0,4.0.0)' },
      { namespace: 'osgi.bundle', name: 'org.knime.python3', range: '[1.0.0,2.0.0)', optional: true },
    ],
  }));
  return {
    name: `Widgets ${label}`,
    metadata: 'xml',
    features: [{ id: 'com.vendor.widgets', version: v, label: 'Widgets', provider: 'Vendor', description: 'Widgets.', license: 'MIT', copyright: '(c) 2026', bundles: bundles.map((b) => b.id) }],
    bundles,
  };
}

// Each label's range was worked out by hand from the requirements below (optional ones and
// non-core ones left out): 5.2 → [5.1.0,5.5.0); 5.3 → [5.3.0,5.4.0) ∩ [5.2.0,5.4.0) = [5.3.0,5.4.0);
// 5.1 → [4.0.0,5.0.0) and [5.1.0,6.0.0) cannot both hold: none; 6.0 → [5.3.0,5.4.0), not 6.0.
const LABELS: Record<string, [string, string][]> = {
  '5.1': [['org.knime.core', '[4.0.0,5.0.0)'], ['org.knime.base', '[5.1.0,6.0.0)']],
  '5.2': [['org.knime.core', '[5.1.0,5.5.0)']],
  '5.3': [['org.knime.core', '[5.3.0,6.0.0)'], ['org.knime.features.base.feature.group', '[5.2.0,5.4.0)']],
  '6.0': [['org.knime.workbench.repository', '[5.3.0,5.4.0)']],
};

for (const target of dialects()) {
  describe(`platform ranges from the update site, end to end on ${target.name}`, needsTool('sshpass'), () => {
    let db: { url: string; drop(): Promise<void> };
    let stack: Stack;
    let web: RunningPublishing;
    let work: string;
    let env: NodeJS.ProcessEnv;
    let token: string;
    let sftpCreds: { username: string; password: string };
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
    const page = async (p: string) => {
      const r = await fetch(`${web.url}${p}`);
      return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
    };

    before(async () => {
      db = await target.create();
      stack = await startStack(db.url);
      web = await startPublishing(db.url, {}, { PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_CRAWL_SETTLE_SECONDS: '0' });
      work = tempDir('pier-ranges-');
      env = { ...process.env, PIER_DATA_DIR: stack.dataDir, PIER_DATABASE_URL: db.url, PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_LOG_LEVEL: 'silent' };
      const creds = await stack.register('widgets');
      token = creds.editToken;
      sftpCreds = creds.sftp;
      const puts: string[] = [];
      for (const [label, reqs] of Object.entries(LABELS)) {
        buildSite(path.join(work, label), siteRequiring(label, ...reqs));
        puts.push(`put -r ${path.join(work, label)} /update-site/${label}`);
      }
      const put = await openSshSftp(stack.sftp.port, creds.sftp, puts);
      assert.equal(put.code, 0, put.stderr);
      const crawl = await pier('staff', 'crawl', 'widgets');
      assert.equal(crawl.code, 0, crawl.stderr);
    });
    after(async () => {
      await web.close();
      await stack.close();
      await db.drop();
      fs.rmSync(work, { recursive: true, force: true });
    });

    test('GET /api/products/<id> lists every crawled label with its platform range; the crawl report has it and the warnings', async () => {
      const r = await fetch(`${web.url}/api/products/widgets`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(r.status, 200);
      const body = (await r.json()) as { labels: { label: string; url: string; platformRange: string | null; platformReleases: string | null }[] };
      assert.deepEqual(
        body.labels.map((l) => [l.label, l.platformRange, l.platformReleases, l.url]),
        [
          ['5.1', null, null, `${stack.downloads.url}/widgets/5.1/`],
          ['5.2', '[5.1.0,5.5.0)', '5.1 – 5.4', `${stack.downloads.url}/widgets/5.2/`],
          ['5.3', '[5.3.0,5.4.0)', '5.3', `${stack.downloads.url}/widgets/5.3/`],
          ['6.0', '[5.3.0,5.4.0)', '5.3', `${stack.downloads.url}/widgets/6.0/`],
        ],
      );

      const report = (await (await fetch(`${web.url}/api/products/widgets/crawl`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
        labels: { label: string; platformRange: string | null; problems: { severity: string; code: string; message: string }[] }[];
      };
      const of = (l: string) => report.labels.find((x) => x.label === l)!;
      assert.equal(of('5.2').platformRange, '[5.1.0,5.5.0)');
      const conflict = of('5.1').problems.filter((p) => p.code === 'platform_range_conflict');
      assert.equal(conflict.length, 1, JSON.stringify(of('5.1').problems));
      assert.equal(conflict[0]!.severity, 'warning');
      for (const part of ['com.vendor.widgets.b0 1.0.0.v20260101', 'org.knime.core [4.0.0,5.0.0)', 'com.vendor.widgets.b1 1.0.0.v20260101', 'org.knime.base [5.1.0,6.0.0)']) {
        assert.ok(conflict[0]!.message.includes(part), `${conflict[0]!.message} names ${part}`);
      }
      const named = of('6.0').problems.filter((p) => p.code === 'platform_range_label');
      assert.equal(named.length, 1, JSON.stringify(of('6.0').problems));
      assert.match(named[0]!.message, /"6\.0" reads as platform release 6\.0, but its units require \[5\.3\.0,5\.4\.0\) \(5\.3\)/);
      for (const l of ['5.2', '5.3']) assert.deepEqual(of(l).problems.filter((p) => p.code.startsWith('platform_range')), [], l);

      // Staff see it too.
      const show = await pier('staff', 'show', 'widgets');
      assert.equal(show.code, 0, show.stderr);
      assert.match(show.stdout, /crawl of 5\.2: finished [^\n]*\n[^\n]*\n {4}works with platform 5\.1 – 5\.4 \(\[5\.1\.0,5\.5\.0\)\)\n/);
    });

    test('the product page shows each range beside its URL and recommends the label that works with the platform release', async () => {
      // No release set: the highest label, as before.
      let p = await page('/product/widgets');
      assert.equal(p.status, 200);
      assert.match(p.text, /<li class="label-row recommended"><div class="label-head"><span class="label-name">6\.0<\/span>/);
      assert.ok(p.text.includes('Works with platform 5.1 – 5.4'), 'label 5.2');
      assert.ok(p.text.includes('The newest label.'));

      // 5.4: no label is named so; 6.0 and 5.3 need 5.3, 5.2 works with 5.1 – 5.4.
      assert.equal((await pier('staff', 'set-release', '5.4')).code, 0);
      p = await page('/product/widgets');
      assert.match(
        p.text,
        /<li class="label-row recommended"><div class="label-head"><span class="label-name">5\.2<\/span><span class="pill">Recommended<\/span><span class="label-works" title="\[5\.1\.0,5\.5\.0\)">Works with platform 5\.1 – 5\.4<\/span><span class="label-anchor" id="label:5\.2"><\/span><\/div><p class="label-why">Works with the current platform release, 5\.4\.<\/p>/,
      );
      // A label named as the release still wins over a range.
      assert.equal((await pier('staff', 'set-release', '5.3')).code, 0);
      p = await page('/product/widgets');
      assert.match(p.text, /<li class="label-row recommended"><div class="label-head"><span class="label-name">5\.3<\/span>/);
      assert.ok(p.text.includes('Built for the current platform release, 5.3.'));
      // A label with no range found shows none.
      const row51 = p.text.slice(p.text.indexOf('<span class="label-name">5.1</span>'));
      assert.ok(!row51.slice(0, row51.indexOf('</li>')).includes('Works with'));
    });

    test('the catalog filters by "works with <release>", keeps the search words, and answers 400 for anything but a release', async () => {
      assert.equal((await pier('staff', 'enable', 'widgets')).code, 0);
      const cards = (t: string) => [...t.matchAll(/<a class="card" href="\/product\/([^"]+)"/g)].map((m) => m[1]);
      assert.deepEqual(cards((await page('/?works=5.3')).text), ['widgets']);
      assert.deepEqual(cards((await page('/?works=5.4.2')).text), ['widgets'], 'label 5.2 works with 5.4.x');
      assert.deepEqual(cards((await page('/?works=5.5')).text), []);
      assert.deepEqual(cards((await page('/?works=4.7')).text), [], 'label 5.1 has no range: it matches no release');
      assert.deepEqual(cards((await page('/?works=5.3&q=widgets')).text), ['widgets']);
      assert.deepEqual(cards((await page('/?works=5.3&q=nothing-like-it')).text), []);
      const filtered = await page('/?works=5.3&q=widgets');
      // The form carries the search words and the release; no script needed.
      assert.match(filtered.text, /<form class="works-filter" action="\/" method="get"><input type="hidden" name="q" value="widgets"\/>/);
      assert.match(filtered.text, /<input id="works" name="works" value="5\.3"/);
      for (const bad of ['abc', '5', '5.3.1.2', '5.x', '<b>', '5.3 ', '05.3']) {
        const r = await page(`/?works=${encodeURIComponent(bad)}`);
        if (bad === '5.3 ') {
          assert.equal(r.status, 200, 'surrounding spaces are trimmed');
          continue;
        }
        assert.equal(r.status, 400, bad);
        assert.match(r.type ?? '', /^text\/html/);
        assert.ok(r.text.includes('<h1>Bad request</h1>') && r.text.includes('platform release such as 5.3'), bad);
        assert.ok(!r.text.includes('<b>'), 'the value is escaped');
      }
    });

    test('the node search filters by "works with <release>": nodes of the labels whose range holds it, alone or with words', async () => {
      const hits = (t: string) => [...t.matchAll(/<a class="node-hit-name" href="[^"]*">([^<]+)<\/a>/g)].map((m) => m[1]).sort();
      const search = async (q: string) => {
        const r = await page(`/nodes?${q}`);
        assert.equal(r.status, 200, `${q}: ${r.text.slice(0, 300)}`);
        return hits(r.text);
      };
      // 5.3 fits labels 5.2, 5.3 and 6.0 (label 5.1 has no range, its own node never shows).
      assert.deepEqual(await search('works=5.3'), ['Widget Only 5.2', 'Widget Only 5.3', 'Widget Only 6.0', 'Widget Reader']);
      assert.deepEqual(await search('works=5.4.1'), ['Widget Only 5.2', 'Widget Reader'], 'only label 5.2 reaches 5.4');
      assert.deepEqual(await search('works=5.5'), []);
      assert.deepEqual(await search('works=5.3&q=only'), ['Widget Only 5.2', 'Widget Only 5.3', 'Widget Only 6.0']);
      assert.deepEqual(await search('q=only'), ['Widget Only 5.1', 'Widget Only 5.2', 'Widget Only 5.3', 'Widget Only 6.0'], 'without the filter: every label');
      assert.match((await page('/nodes?works=5.3')).text, /<input id="node-works" name="works" value="5\.3"/);
      for (const bad of ['abc', '5', '<b>', '5.3.1.2']) {
        const r = await page(`/nodes?works=${encodeURIComponent(bad)}`);
        assert.equal(r.status, 400, bad);
        assert.ok(!r.text.includes('<b>'), 'the value is escaped');
      }
    });

    // Screenshots once (the markup is the same on both databases).
    if (target.name === 'sqlite') {
      test('in Chromium at 1280 and 390 px, light and dark: the ranges beside the URLs, and the filter form without JavaScript', async () => {
        assert.equal((await pier('staff', 'set-release', '5.4')).code, 0);
        const browser = await launchChromium();
        try {
          for (const width of [1280, 390]) {
            for (const colorScheme of ['light', 'dark'] as const) {
              const context = await browser.newContext({ viewport: { width, height: 900 }, colorScheme, javaScriptEnabled: false });
              const p = await context.newPage();
              await p.goto(`${web.url}/product/widgets`);
              const row = p.locator('li.label-row.recommended');
              assert.equal(await row.locator('.label-name').innerText(), '5.2');
              assert.equal(await row.locator('.label-works').innerText(), 'Works with platform 5.1 – 5.4');
              assert.equal(await row.locator('.label-why').isVisible(), true);
              const overflow = await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
              assert.equal(overflow, 0, `no horizontal scroll at ${width}px`);
              await row.scrollIntoViewIfNeeded();
              await p.screenshot({ path: screenshotPath(`platform-ranges-product-${width}-${colorScheme}`), fullPage: true });
              // The catalog's filter is a plain form: it works with JavaScript off.
              await p.goto(`${web.url}/?q=widgets`);
              await p.locator('#works').fill('5.3');
              await Promise.all([p.waitForURL(/works=5\.3/), p.getByRole('button', { name: 'Filter' }).click()]);
              assert.equal(new URL(p.url()).searchParams.get('q'), 'widgets', 'the search words are kept');
              assert.equal(await p.locator('a.card').count(), 1);
              await p.screenshot({ path: screenshotPath(`platform-ranges-catalog-${width}-${colorScheme}`), fullPage: true });
              await context.close();
            }
          }
        } finally {
          await browser.close();
        }
      });
    }

    test('a new crawl that changes a range shows on the product page and in the catalog at once (the page caches follow crawls)', async () => {
      assert.equal((await pier('staff', 'set-release', '5.4')).code, 0);
      // Rendered and cached with the old ranges first.
      assert.match((await page('/product/widgets')).text, /<li class="label-row recommended"><div class="label-head"><span class="label-name">5\.2<\/span>/);
      assert.equal((await page('/?works=5.5')).text.includes('href="/product/widgets"'), false);

      fs.rmSync(path.join(work, '5.3'), { recursive: true, force: true });
      buildSite(path.join(work, '5.3'), siteRequiring('5.3', ['org.knime.core', '[5.3.0,5.6.0)']));
      // The new metadata over the old (the bundle jar it keeps is the same bytes).
      const put = await openSshSftp(stack.sftp.port, sftpCreds, ['content.xml', 'artifacts.jar'].map((f) => `put ${path.join(work, '5.3', f)} /update-site/5.3/${f}`));
      assert.equal(put.code, 0, put.stderr);
      const crawl = await pier('staff', 'crawl', 'widgets', '--label', '5.3');
      assert.equal(crawl.code, 0, crawl.stderr);

      const p = await page('/product/widgets');
      assert.match(
        p.text,
        /<li class="label-row recommended"><div class="label-head"><span class="label-name">5\.3<\/span><span class="pill">Recommended<\/span><span class="label-works" title="\[5\.3\.0,5\.6\.0\)">Works with platform 5\.3 – 5\.5<\/span>/,
      );
      assert.equal((await page('/?works=5.5')).text.includes('href="/product/widgets"'), true);
    });

    test('a withdrawn label is offered nowhere: not crawled, not in the works-with filter, node search or changes page, and it never keeps the product from going live', async () => {
      assert.equal((await page('/?works=5.1')).text.includes('href="/product/widgets"'), true, 'only label 5.2 works with 5.1');
      assert.match((await page('/product/widgets/changes')).text, /<option value="5\.2"/);
      const patch = await fetch(`${web.url}/api/products/widgets`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ labels: { '5.2': { status: 'withdrawn', replacement: '5.3' } } }),
      });
      assert.equal(patch.status, 200, await patch.text());
      assert.equal((await page('/?works=5.1')).text.includes('href="/product/widgets"'), false);
      const hits = [...(await page('/nodes?q=only')).text.matchAll(/<a class="node-hit-name" href="[^"]*">([^<]+)<\/a>/g)].map((m) => m[1]).sort();
      assert.deepEqual(hits, ['Widget Only 5.1', 'Widget Only 5.3', 'Widget Only 6.0']);
      assert.doesNotMatch((await page('/product/widgets/changes')).text, /<option value="5\.2"/);

      // Its files change: still not crawled, and going live does not wait for it.
      const put = await openSshSftp(stack.sftp.port, sftpCreds, [`put ${path.join(work, '5.3', 'content.xml')} /update-site/5.2/content.xml`]);
      assert.equal(put.code, 0, put.stderr);
      const all = await pier('staff', 'crawl', 'widgets');
      assert.equal(all.code, 0, all.stderr);
      assert.doesNotMatch(all.stdout, /crawl of 5\.2/);
      const one = await pier('staff', 'crawl', 'widgets', '--label', '5.2');
      assert.notEqual(one.code, 0);
      assert.match(one.stderr, /label "5\.2" of product "widgets" is withdrawn/);
      assert.equal((await pier('staff', 'disable', 'widgets')).code, 0);
      const enable = await pier('staff', 'enable', 'widgets');
      assert.equal(enable.code, 0, enable.stderr);
    });
  });
}

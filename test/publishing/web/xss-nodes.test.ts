// The XSS corpus in every node field the node catalog renders: node name, short
// description, tab, option, port and view names, dynamic port group, keyword, category names (in
// the breadcrumb, the search's select and hits) and the feature provider a catalog card names as
// vendor. All of it comes from a vendor's jar; none of it may run in Chromium, and each shows as text.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { buildSite, type NodeSpec } from '../../helpers/p2-fixtures.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';
import { needsTool } from '../../helpers/tools.js';
import { openSshSftp, type Stack, startStack } from '../sftp/stack.js';
import { launchChromium } from './browser.js';
import { MARKUP_PAYLOADS } from './xss-corpus.js';

const x = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const factory = (i: number) => `com.evil.nodes.N${i}NodeFactory`;

/** A v4.1 description with `p` in every name the page shows as text. */
function hostileDescription(p: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<knimeNode type="Manipulator" xmlns="http://knime.org/node/v4.1">
  <name>${x(p)}</name>
  <shortDescription>${x(p)}</shortDescription>
  <fullDescription>
    <intro><p>${x(p)}</p></intro>
    <tab name="${x(p)}"><option name="${x(p)}">${x(p)}</option></tab>
  </fullDescription>
  <ports>
    <inPort index="0" name="${x(p)}">${x(p)}</inPort>
    <dynInPort insert-before="1" name="${x(p)}" group-identifier="${x(p)}">${x(p)}</dynInPort>
    <outPort index="0" name="${x(p)}">${x(p)}</outPort>
  </ports>
  <views><view index="0" name="${x(p)}">${x(p)}</view></views>
  <keywords><keyword>${x(p)}</keyword></keywords>
</knimeNode>
`;
}

const target = dialects()[0]!;

describe('XSS corpus in node fields, in Chromium', needsTool('sshpass'), () => {
  let db: { url: string; drop(): Promise<void> };
  let stack: Stack;
  let web: RunningPublishing;
  let browser: Browser;
  let work: string;

  before(async () => {
    db = await target.create();
    stack = await startStack(db.url);
    web = await startPublishing(db.url, {}, { PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_CRAWL_SETTLE_SECONDS: '0' });
    work = tempDir('pier-xss-nodes-');
    const creds = await stack.register('evil');
    const v = '1.0.0.v20260101';
    // Category names carry payloads too: one category per payload.
    const categories = MARKUP_PAYLOADS.map((p, i) => ({ path: '/', levelId: `c${i}`, name: p }));
    const nodes: NodeSpec[] = MARKUP_PAYLOADS.map((p, i) => ({ factoryClass: factory(i), categoryPath: `/c${i}`, name: '', shortDescription: '', schema: 'v4.1', rawDescription: hostileDescription(p) }));
    buildSite(path.join(work, 'site'), {
      name: 'Evil',
      metadata: 'jar',
      features: [{ id: 'com.evil.feature', version: v, label: 'Evil', provider: '<img src=x onerror=alert(1)>', description: 'd', license: 'l', copyright: 'c', bundles: ['com.evil.nodes'] }],
      bundles: [{ id: 'com.evil.nodes', version: v, categories, nodes }],
    });
    const put = await openSshSftp(stack.sftp.port, creds.sftp, [`put -r ${path.join(work, 'site')} /update-site/5.4`]);
    assert.equal(put.code, 0, put.stderr);
    const env = { ...process.env, PIER_DATA_DIR: stack.dataDir, PIER_DATABASE_URL: db.url, PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_LOG_LEVEL: 'silent' };
    const code = await new Promise<number | null>((resolve) => spawn(process.execPath, ['bin/pier.js', 'staff', 'crawl', 'evil'], { env, stdio: 'ignore' }).on('close', resolve));
    assert.equal(code, 0);
    const other = await openPublishingDatabase(db.url);
    await productsRepository(other.db, other.dialect).setState('evil', 'live', new Date().toISOString());
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

  it('no payload runs on node pages, the node search, the product page or the catalog; names show as text', async () => {
    const page = await browser.newPage();
    const dialogs: string[] = [];
    page.on('dialog', async (d) => {
      dialogs.push(d.message());
      await d.dismiss();
    });
    const visit = async (url: string) => {
      const res = await page.goto(`${web.url}${url}`);
      assert.equal(res?.status(), 200, url);
      assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined, url);
    };
    for (const [i, p] of MARKUP_PAYLOADS.entries()) {
      await visit(`/product/evil/nodes/${factory(i)}`);
      const shown = p.trim().replace(/\s+/g, ' ');
      assert.equal((await page.locator('h1').textContent())?.trim(), shown, `name ${i}`);
      assert.equal((await page.locator('.node-tab h3').textContent())?.trim(), `Tab “${shown}”`, `tab ${i}`);
      assert.equal((await page.locator('.keyword').textContent())?.trim(), shown, `keyword ${i}`);
      assert.ok(((await page.locator('.port-group').textContent()) ?? '').includes(shown), `port group ${i}`);
      assert.equal((await page.locator('.node-views dt').textContent())?.trim(), shown, `view ${i}`);
    }
    await visit('/product/evil');
    await visit('/nodes?product=evil');
    assert.equal(await page.locator('.node-hit').count(), MARKUP_PAYLOADS.length);
    for (const p of MARKUP_PAYLOADS.slice(0, 8)) await visit(`/nodes?category=${encodeURIComponent(p)}`);
    await visit('/');
    assert.match((await page.locator('a[href="/product/evil"] .card-facts').textContent()) ?? '', /Vendor<img src=x onerror=alert\(1\)>/);
    assert.deepEqual(dialogs, []);
    await page.close();
  });
});

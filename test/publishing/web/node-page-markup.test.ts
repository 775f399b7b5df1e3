// Node pages show what the vendor's jar says: the description's own markup (lists, links,
// emphasis, code) through the sanitizer, the 16 px icon unscaled and square, and the platforms of
// a node that only platform-filtered plug-ins hold (fragments hold none). The site is uploaded
// with OpenSSH sftp, crawled by `pier staff crawl`, and the page read in Chromium, on every database.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import zlib from 'node:zlib';
import type { Browser } from 'playwright-core';
import { dialects, tempDir } from '../../helpers/db.js';
import { type BundleSpec, buildSite, type NodeSpec } from '../../helpers/p2-fixtures.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';
import { needsTool } from '../../helpers/tools.js';
import { openSshSftp, type Stack, startStack } from '../sftp/stack.js';
import { launchChromium, screenshotPath } from './browser.js';

/** A `size`×`size` RGBA PNG of a checkerboard: blurring or scaling it shows. */
function checkerPng(size: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(Buffer.concat([Buffer.from(type), data])));
    return Buffer.concat([len, Buffer.from(type), data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr.set([8, 6, 0, 0, 0], 8);
  const rows = Buffer.alloc(size * (1 + size * 4));
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const o = y * (1 + size * 4) + 1 + x * 4;
      const dark = (x + y) % 2 === 0;
      rows.set(dark ? [20, 20, 120, 255] : [250, 200, 0, 255], o);
    }
  }
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', zlib.deflateSync(rows)), chunk('IEND', Buffer.alloc(0))]);
}

const V = '2.0.0.v20260101';
const RICH = 'com.acme.nodes.RichNodeFactory';
const richDescription = `<?xml version="1.0" encoding="UTF-8"?>
<knimeNode icon="./RichNodeFactory.png" type="Manipulator" xmlns="http://knime.org/node/v4.1">
  <name>Rich Node</name>
  <shortDescription>Frobnicates with style.</shortDescription>
  <fullDescription>
    <intro>
      <p>This node reads
         widgets, written over
         three source lines.</p>
      <p>It supports:</p>
      <ul><li><b>bold</b> modes</li><li><i>italic</i> modes with <tt>code()</tt></li></ul>
      <p>See <a href="https://docs.acme.example/rich">the manual</a>, not <a href="javascript:alert(document.domain)">this</a>.</p>
      <p>&lt;img src=x onerror=alert(1)&gt; stays text.</p>
    </intro>
    <tab name="Options">
      <option name="Mode">Pick <b>one</b>:<ul><li>fast</li><li>exact</li></ul></option>
    </tab>
  </fullDescription>
  <ports><inPort index="0" name="Table">A <i>table</i>.</inPort><outPort index="0" name="Out">Out <tt>x</tt>.</outPort></ports>
</knimeNode>
`;

const node = (factoryClass: string, name: string): NodeSpec => ({ factoryClass, categoryPath: '/community', name, shortDescription: `${name}.`, schema: 'v4.1' });

function site(): BundleSpec[] {
  return [
    {
      id: 'com.acme.nodes',
      version: V,
      nodes: [{ ...node(RICH, 'Rich Node'), rawDescription: richDescription }],
      extraEntries: { 'com/acme/nodes/RichNodeFactory.png': checkerPng(16) },
    },
    { id: 'com.acme.win', version: V, osFilter: '(osgi.os=win32)', nodes: [node('com.acme.win.WinOnlyNodeFactory', 'Win Only')] },
    { id: 'com.acme.native.linux', version: V, osFilter: '(& (osgi.os=linux) (osgi.arch=x86_64))', nodes: [node('com.acme.nat.SharedNodeFactory', 'Shared Native')] },
    { id: 'com.acme.native.mac', version: V, osFilter: '(& (osgi.os=macosx) (osgi.arch=aarch64))', nodes: [node('com.acme.nat.SharedNodeFactory', 'Shared Native')] },
    // A fragment only adds native code to its host: its plugin.xml is not a source of nodes.
    { id: 'com.acme.frag', version: V, osFilter: '(osgi.os=linux)', fragmentHost: 'com.acme.nodes', nodes: [node('com.acme.frag.FragNodeFactory', 'Fragment Node')] },
  ];
}

for (const target of dialects()) {
  describe(`node pages from the jar: markup, icon, platforms on ${target.name}`, needsTool('sshpass'), () => {
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
    const nodeUrl = (factory: string) => `${web.url}/product/acme/nodes/${factory}`;

    before(async () => {
      db = await target.create();
      stack = await startStack(db.url);
      web = await startPublishing(db.url, {}, { PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_CRAWL_SETTLE_SECONDS: '0' });
      work = tempDir('pier-node-markup-');
      env = { ...process.env, PIER_DATA_DIR: stack.dataDir, PIER_DATABASE_URL: db.url, PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_LOG_LEVEL: 'silent' };
      const creds = await stack.register('acme');
      buildSite(path.join(work, 'site'), { name: 'Acme', metadata: 'jar', features: [], bundles: site() });
      const put = await openSshSftp(stack.sftp.port, creds.sftp, [`put -r ${path.join(work, 'site')} /update-site/5.4`]);
      assert.equal(put.code, 0, put.stderr);
      const crawl = await pier('staff', 'crawl', 'acme');
      assert.equal(crawl.code, 0, crawl.stderr);
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
      await web.close();
      await stack.close();
      await db.drop();
      fs.rmSync(work, { recursive: true, force: true });
    });

    it('indexes plug-ins with a platform filter and names their platforms; fragments hold no nodes', async () => {
      const win = await (await fetch(nodeUrl('com.acme.win.WinOnlyNodeFactory'))).text();
      assert.match(win, /<h1>Win Only<\/h1>/);
      assert.match(win, /Platforms: Windows/);
      const shared = await (await fetch(nodeUrl('com.acme.nat.SharedNodeFactory'))).text();
      assert.match(shared, /Platforms: Linux x86_64, macOS aarch64/, 'one node for the union of the plug-ins that hold it');
      const rich = await (await fetch(nodeUrl(RICH))).text();
      assert.match(rich, /All platforms/);
      assert.equal((await fetch(nodeUrl('com.acme.frag.FragNodeFactory'))).status, 404);
      const show = await pier('staff', 'crawl', 'acme', '--json');
      assert.equal(JSON.parse(show.stdout).labels[0].summary.nodes, 3);
    });

    it('shows the description with its own markup, sanitized, and the source line breaks as layout', async () => {
      const page = await browser.newPage();
      const dialogs: string[] = [];
      page.on('dialog', async (d) => {
        dialogs.push(d.message());
        await d.dismiss();
      });
      await page.goto(nodeUrl(RICH));
      const intro = page.locator('#node-description + .node-markup');
      assert.equal(await intro.locator('p').count(), 4, 'one paragraph per <p>, not one per source line');
      assert.equal((await intro.locator('p').first().textContent())?.trim(), 'This node reads widgets, written over three source lines.');
      assert.deepEqual(await intro.locator('ul > li').allTextContents(), ['bold modes', 'italic modes with code()']);
      assert.equal(await intro.locator('ul > li b').textContent(), 'bold');
      assert.equal(await intro.locator('ul > li i').textContent(), 'italic');
      assert.equal(await intro.locator('code').textContent(), 'code()');
      const links = await intro.locator('a').evaluateAll((as) => as.map((a) => [a.getAttribute('href'), a.getAttribute('rel'), a.textContent]));
      assert.deepEqual(links, [['https://docs.acme.example/rich', 'nofollow ugc noopener', 'the manual']], 'the javascript: link is text only');
      assert.match((await intro.textContent()) ?? '', /<img src=x onerror=alert\(1\)> stays text\./);
      assert.deepEqual(await page.locator('.node-tab dd.node-markup li').allTextContents(), ['fast', 'exact']);
      assert.equal(await page.locator('.node-tab dd.node-markup b').textContent(), 'one');
      assert.equal(await page.locator('dl.node-ports dd i').textContent(), 'table');
      assert.deepEqual(dialogs, []);
      await page.screenshot({ path: screenshotPath(`node-markup-${target.name}`), fullPage: true });
      await page.close();
    });

    it('draws the 16 px node icon at an integer multiple of its size (2×), square and pixelated, never blurred or clipped', async () => {
      const page = await browser.newPage({ deviceScaleFactor: 2 });
      await page.goto(nodeUrl(RICH));
      const icon = page.locator('.node-head img');
      const got = await icon.evaluate((img: HTMLImageElement) => {
        const s = getComputedStyle(img);
        return { natural: [img.naturalWidth, img.naturalHeight], shown: [img.clientWidth, img.clientHeight], radius: s.borderRadius, rendering: s.imageRendering };
      });
      assert.deepEqual(got, { natural: [16, 16], shown: [32, 32], radius: '0px', rendering: 'pixelated' });
      await page.close();
    });
  });
}

// A label uploaded only as the archive `update-site/<label>.zip` (spec area A "Files"): the
// product page offers it for download with the platform's archive steps and no update-site URL,
// the link serves the uploaded bytes from the download host, and staff are told why such a
// product cannot go live and what to upload. Uploads go through the real OpenSSH sftp client,
// pages are read as HTML and in Chromium, on every database.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { zipSync } from 'fflate';
import type { Browser } from 'playwright-core';
import { dialects, tempDir } from '../../helpers/db.js';
import { buildSite, exampleSpec } from '../../helpers/p2-fixtures.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';
import { needsTool } from '../../helpers/tools.js';
import { fetchBytes, openSshSftp, sha, type Stack, startStack } from '../sftp/stack.js';
import { launchChromium, screenshotPath, VIEWPORTS } from './browser.js';

/** The built repository folder zipped as the generator tool's archive is (entries at the root). */
function zipFolder(dir: string): Buffer {
  const entries: Record<string, Uint8Array> = {};
  for (const rel of fs.readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const p = path.join(dir, rel);
    if (fs.statSync(p).isFile()) entries[rel.split(path.sep).join('/')] = fs.readFileSync(p);
  }
  return Buffer.from(zipSync(entries));
}

/** `<a …href="…">text</a>` hrefs of the page whose text matches. */
function hrefs(html: string, text: RegExp): string[] {
  return [...html.matchAll(/<a [^>]*href="([^"]+)"[^>]*>([^<]*)<\/a>/g)].filter((m) => text.test(m[2] ?? '')).map((m) => m[1]!.replace(/&amp;/g, '&'));
}

for (const target of dialects()) {
  describe(`archive-only labels on the product page on ${target.name}`, needsTool('sshpass'), () => {
    let db: { url: string; drop(): Promise<void> };
    let stack: Stack;
    let web: RunningPublishing;
    let work: string;
    let archive54: Buffer;
    let archive53: Buffer;
    let env: NodeJS.ProcessEnv;
    let mixedSftp: { username: string; password: string };
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
    const page = async (id: string) => (await fetch(`${web.url}/product/${id}`)).text();

    before(async () => {
      db = await target.create();
      stack = await startStack(db.url);
      // No automatic crawl: the test crawls itself, deterministically.
      web = await startPublishing(db.url, {}, { PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_CRAWL_SETTLE_SECONDS: '0' });
      env = { ...process.env, PIER_DATA_DIR: stack.dataDir, PIER_DATABASE_URL: db.url, PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_LOG_LEVEL: 'silent' };
      work = tempDir('pier-archive-labels-');
      buildSite(path.join(work, 'site53'), exampleSpec('xz'));
      buildSite(path.join(work, 'site54'), exampleSpec('jar', 'com.vendor'));
      archive53 = zipFolder(path.join(work, 'site53'));
      archive54 = zipFolder(path.join(work, 'site54'));
      fs.writeFileSync(path.join(work, '5.3.zip'), archive53);
      fs.writeFileSync(path.join(work, '5.4.zip'), archive54);
      await web.service.products.setPlatformRelease('5.4');

      // zip-only: the vendor uploads nothing but the archive.
      const zipOnly = await stack.register('zip-only');
      const up1 = await openSshSftp(stack.sftp.port, zipOnly.sftp, [`put ${path.join(work, '5.4.zip')} /update-site/5.4.zip`]);
      assert.equal(up1.code, 0, up1.stderr);
      // mixed: 5.3 as folder and archive, 5.4 as archive only.
      const mixed = await stack.register('mixed');
      mixedSftp = mixed.sftp;
      const up2 = await openSshSftp(stack.sftp.port, mixed.sftp, [
        `put -r ${path.join(work, 'site53')} /update-site/5.3`,
        `put ${path.join(work, '5.3.zip')} /update-site/5.3.zip`,
        `put ${path.join(work, '5.4.zip')} /update-site/5.4.zip`,
      ]);
      assert.equal(up2.code, 0, up2.stderr);
      // The folder label is offered once released (the vendor's release call after the upload).
      const released = await fetch(`${web.url}/api/products/mixed/labels/5.3/release`, { method: 'POST', headers: { authorization: `Bearer ${mixed.editToken}` } });
      assert.equal(released.status, 200, await released.text());
    });
    after(async () => {
      await web?.close();
      await stack?.close();
      await db?.drop();
      if (work) fs.rmSync(work, { recursive: true, force: true });
    });

    it('a product with only an archive: the label, its download link and the archive steps; no update-site URL', async () => {
      const html = await page('zip-only');
      assert.doesNotMatch(html, /No update site has been uploaded yet/);
      assert.deepEqual([...html.matchAll(/<span class="label-name">([^<]+)<\/span>/g)].map((m) => m[1]), ['5.4']);
      assert.match(html, /<li class="label-row archive-only recommended"><div class="label-head"><span class="label-name">5\.4<\/span><span class="pill">Recommended<\/span><span class="pill muted">Archive only<\/span>/);
      assert.deepEqual(hrefs(html, /^Download 5\.4\.zip$/), [`${stack.downloads.url}/zip-only/5.4.zip`]);
      assert.match(html, /This extension is offered as an archive, not as an update site URL\. Download the archive below; then in the platform choose <strong>Help › Install New Software…<\/strong>, click <strong>Add…<\/strong>, then <strong>Archive…<\/strong>, pick the downloaded file and select the extension\./);
      // No URL to add: none exists for an archive.
      assert.doesNotMatch(html, /<code class="url"|data-copy|add the update site URL below|id="copy-status"/);
      assert.ok(!html.includes(`${stack.downloads.url}/zip-only/5.4<`) && !html.includes(`${stack.downloads.url}/zip-only/5.4"`));
      // The copy script is only for update-site URLs.
      assert.doesNotMatch(html, /<script /);
      // And indeed the download host has no update site there.
      assert.equal((await fetchBytes(`${stack.downloads.url}/zip-only/5.4/content.jar`)).status, 404);
    });

    it('the archive link downloads exactly the uploaded bytes from the download host', async () => {
      for (const [id, label, bytes] of [['zip-only', '5.4', archive54], ['mixed', '5.4', archive54], ['mixed', '5.3', archive53]] as const) {
        const html = await page(id);
        const [href] = [...hrefs(html, new RegExp(`^Download ${label.replace('.', '\\.')}\\.zip$`)), ...hrefs(html, /^download the archive$/).filter((h) => h.endsWith(`/${label}.zip`))];
        assert.equal(href, `${stack.downloads.url}/${id}/${label}.zip`, `${id} ${label}`);
        const got = await fetchBytes(href!);
        assert.equal(got.status, 200);
        assert.equal(got.headers.get('content-type'), 'application/zip');
        assert.equal(got.body.length, bytes.length);
        assert.equal(sha(got.body), sha(bytes), `${id} ${label}`);
      }
    });

    it('mixed labels: the archive-only release keeps its place and steps, the folder label keeps today\'s URL, copy button and offline link', async () => {
      const html = await page('mixed');
      // 5.4 is the platform release: recommended even though it is only an archive.
      assert.deepEqual([...html.matchAll(/<span class="label-name">([^<]+)<\/span>/g)].map((m) => m[1]), ['5.4', '5.3']);
      assert.equal((html.match(/>Recommended</g) ?? []).length, 1);
      assert.match(html, /In the platform, choose <strong>Help › Install New Software…<\/strong>, add the update site URL below and\s+select the extension\./);
      assert.match(html, /class="label-row archive-only recommended".*?No update site URL for this label\. After downloading, in the platform choose <strong>Help › Install New Software…<\/strong>, click <strong>Add…<\/strong>, then <strong>Archive…<\/strong>/s);
      const url53 = `${stack.downloads.url}/mixed/5.3`;
      assert.ok(html.includes(`<li class="label-row"><div class="label-head"><span class="label-name">5.3</span><span class="label-anchor" id="label:5.3"></span></div><div class="url-line"><code class="url" id="url-5.3">${url53}</code><button type="button" class="button secondary copy" data-copy="${url53}" aria-describedby="url-5.3" hidden>Copy URL</button></div><p class="label-foot">Offline installation: <a href="${url53}.zip">download the archive</a>`));
      assert.equal((html.match(/<code class="url"/g) ?? []).length, 1, 'one update-site URL: 5.3');
      assert.equal((await fetchBytes(`${url53}/p2.index`)).status, 200, 'the URL shown is an update site');
      assert.match(html, /<script src="\/static\/pier-[0-9a-f]+\.js" defer><\/script>/);
    });

    it('in Chromium: the download button saves the archive; the page fits a phone', needsTool('chromium'), async () => {
      let browser: Browser | undefined;
      try {
        browser = await launchChromium();
        for (const vp of VIEWPORTS) {
          const context = await browser.newContext({ viewport: vp, acceptDownloads: true });
          const tab = await context.newPage();
          await tab.goto(`${web.url}/product/mixed`);
          const row = tab.locator('li.label-row.archive-only');
          assert.equal(await row.locator('.label-name').innerText(), '5.4');
          assert.equal(await row.locator('code.url').count(), 0);
          assert.equal(await row.getByRole('button', { name: 'Copy URL' }).count(), 0);
          const [download] = await Promise.all([tab.waitForEvent('download'), row.getByRole('link', { name: 'Download 5.4.zip' }).click()]);
          const saved = path.join(work, `saved-${vp.name}.zip`);
          await download.saveAs(saved);
          assert.equal(sha(fs.readFileSync(saved)), sha(archive54));
          // The other label keeps its copy button (the script runs: it shows the button).
          await tab.locator('li.label-row:not(.archive-only)').getByRole('button', { name: 'Copy URL' }).waitFor();
          const { scroll, width } = await tab.evaluate(() => ({ scroll: document.documentElement.scrollWidth, width: window.innerWidth }));
          assert.ok(scroll <= width, `page is ${scroll}px wide in a ${width}px window`);
          await tab.locator('#install').scrollIntoViewIfNeeded();
          await tab.screenshot({ path: screenshotPath(`archive-labels-${vp.name}`), fullPage: true });
          await context.close();
        }
      } finally {
        await browser?.close();
      }
    });

    it('staff: show marks the archive-only label; enable refuses a product with only archives, saying why and what to upload; a mixed product goes live', async () => {
      const show = await pier('staff', 'show', 'zip-only');
      assert.equal(show.code, 0, show.stderr);
      assert.match(show.stdout, /5\.4 +0 files .* archive [\d.]+ KiB .*\(archive only: offered for download, not crawled\)/);

      const crawl = await pier('staff', 'crawl', 'zip-only', '--label', '5.4');
      assert.equal(crawl.code, 1);
      assert.match(crawl.stderr, /has only the archive update-site\/5\.4\.zip, which is not crawled: upload the update site's contents to update-site\/5\.4\/ to crawl it/);

      const all = await pier('staff', 'crawl', 'zip-only');
      assert.equal(all.code, 0, all.stderr);
      assert.match(all.stdout, /Product "zip-only" has only archives \(update-site\/5\.4\.zip\), which are not crawled; upload the update site's contents to update-site\/5\.4\/ to crawl it\./);

      const refused = await pier('staff', 'enable', 'zip-only');
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /cannot go live: only archives were uploaded \(update-site\/5\.4\.zip\); the crawler reads an update site from its unzipped folder, so upload the contents of the built repository to update-site\/5\.4\/ as well/);
      assert.equal((await stack.products.show('zip-only')).state, 'hidden');
      const forced = await pier('staff', 'enable', 'zip-only', '--force', '--json');
      assert.equal(forced.code, 0, forced.stderr);
      assert.equal(JSON.parse(forced.stdout).forced, true);
      assert.doesNotMatch(await page('zip-only'), /Not live yet/);

      // mixed: the folder label is crawled; the archive-only label neither blocks nor is crawled.
      const crawled = await pier('staff', 'crawl', 'mixed', '--json');
      assert.equal(crawled.code, 0, crawled.stderr);
      assert.deepEqual(JSON.parse(crawled.stdout).labels.map((l: { label: string }) => l.label), ['5.3']);
      const live = await pier('staff', 'enable', 'mixed', '--json');
      assert.equal(live.code, 0, live.stderr);
      assert.deepEqual(JSON.parse(live.stdout), { productId: 'mixed', state: 'live', forced: false, blockers: [] });
      // Nodes come from the crawled update site, not from the recommended archive.
      const html = await page('mixed');
      assert.match(html, /<h2 id="nodes">Nodes<\/h2><p class="hint">From update site 5\.3\.<\/p>/);
      const nodePath = html.match(/href="(\/product\/mixed\/nodes\/[^"]+)"/)?.[1];
      assert.ok(nodePath);
      assert.equal((await fetch(`${web.url}${nodePath}`)).status, 200);

      // The vendor moves the 5.3 folder away, keeping its archive: 5.3 is now archive-only, and
      // its crawled nodes must not be offered with an update site that no longer exists.
      const moved = await openSshSftp(stack.sftp.port, mixedSftp, ['rename /update-site/5.3 /assets/retired-5.3']);
      assert.equal(moved.code, 0, moved.stderr);
      const after = await page('mixed');
      assert.match(after, /class="label-row archive-only"><div class="label-head"><span class="label-name">5\.3<\/span>/);
      assert.doesNotMatch(after, /<code class="url"|id="nodes"/);
      assert.equal((await fetch(`${web.url}${nodePath}`)).status, 404);
    });

  });
}

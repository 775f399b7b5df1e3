// What a person sees, in headless Chromium at desktop and phone widths.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { DEFAULT_LIMITS } from '../../../src/infra/config.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { filesService } from '../../../src/publishing/files/service.js';
import { contrastRatio } from '../../../src/publishing/web/colors.js';
import { dialects } from '../../helpers/db.js';
import { needsTool } from '../../helpers/tools.js';
import { launchChromium, screenshotPath, VIEWPORTS } from './browser.js';
import { DOWNLOAD_URL, type Site, startSite } from './helpers.js';
import { releaseAsIs } from '../releases/release-as-is.js';

const sqlite = dialects()[0]!;

/** "rgb(1, 2, 3)" → "#010203" */
function hex(rgb: string): string {
  const [r, g, b] = (rgb.match(/\d+/g) ?? []).map(Number);
  return `#${[r, g, b].map((c) => (c ?? 0).toString(16).padStart(2, '0')).join('')}`;
}

describe('pages in Chromium', needsTool('chromium'), () => {
  let db: { url: string; drop(): Promise<void> };
  let site: Site;
  let browser: Browser;

  before(async () => {
    db = await sqlite.create();
    site = await startSite(db.url);
    await site.register('text-tools');
    await site.register('dark-matter', {
      name: 'Dark Matter',
      description: 'Clustering for the darkest datasets',
      style: { color1: '#ffcc00', color2: '#ff6600' },
    });
    await site.register('not-yet', { name: 'Not Yet', description: 'Still hidden' });
    await site.setState('text-tools', 'live');
    await site.setState('dark-matter', 'live');
    await site.service.products.setPlatformRelease('5.4');
    const other = await openPublishingDatabase(db.url);
    const files = filesService({ storage: localStorage(site.storageDir), repo: filesRepository(other.db), limits: DEFAULT_LIMITS });
    await files.ensureTree('text-tools');
    for (const p of ['update-site/5.3', 'update-site/5.4', 'workflows/demo']) await files.makeDir('text-tools', p);
    for (const p of ['update-site/5.3/content.xml', 'update-site/5.4/content.xml', 'update-site/5.4.zip', 'workflows/demo/Example.knwf']) {
      const upload = await files.beginUpload('text-tools', p);
      await upload.write(Buffer.from('x'.repeat(2048)), 0, 2048, 0);
      await upload.commit();
    }
    // Offered with their URLs once released (before any page of the product is read).
    await releaseAsIs(other.db, site.storageDir, 'text-tools', '5.3', '5.4');
    await other.close();
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await site?.close();
    await db?.drop();
  });

  async function open(path: string, viewport: (typeof VIEWPORTS)[number], colorScheme: 'light' | 'dark' = 'light'): Promise<Page> {
    const context = await browser.newContext({ viewport, colorScheme });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: site.url });
    const page = await context.newPage();
    const res = await page.goto(`${site.url}${path}`);
    assert.ok(res, path);
    return page;
  }

  /** The URL points at `id` and its heading is in view: at the top, or lower when the page cannot scroll further. */
  async function scrolledTo(page: Page, id: string): Promise<void> {
    const where = () =>
      page.evaluate((target) => ({ hash: location.hash, top: document.getElementById(target)?.getBoundingClientRect().top, y: window.scrollY }), id);
    await page.waitForFunction(
      (target) => {
        const box = document.getElementById(target)?.getBoundingClientRect();
        const atEnd = Math.ceil(window.scrollY + window.innerHeight) >= document.documentElement.scrollHeight - 1;
        return location.hash === `#${target}` && !!box && box.top >= 0 && box.bottom <= window.innerHeight && (box.top < 120 || atEnd);
      },
      id,
      { timeout: 5000 },
    ).catch(async (e) => {
      throw new Error(`not scrolled to #${id}: ${JSON.stringify(await where())} (${e})`);
    });
  }

  async function noHorizontalScroll(page: Page): Promise<void> {
    const { scroll, width } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, width: window.innerWidth }));
    assert.ok(scroll <= width, `page is ${scroll}px wide in a ${width}px window`);
  }

  for (const vp of VIEWPORTS) {
    it(`catalog at ${vp.name} width: live cards with their gradients, search without JavaScript`, async () => {
      const page = await open('/', vp);
      const cards = page.locator('a.card');
      assert.deepEqual(await cards.locator('h2').allInnerTexts(), ['Dark Matter', 'Text Tools']);
      assert.equal(await page.getByText('Not Yet').count(), 0, 'hidden products are not listed');
      const card = page.locator('a.card[href="/product/text-tools"]');
      const bg = await card.evaluate((el) => getComputedStyle(el).backgroundImage);
      assert.equal(bg, 'linear-gradient(to right bottom, rgb(18, 52, 86), rgb(171, 205, 239))');
      // Text on the card reads at AA contrast against both gradient ends once the veil is applied.
      const fg = hex(await card.locator('h2').evaluate((el) => getComputedStyle(el).color));
      assert.equal(fg, '#ffffff');
      const yellow = page.locator('a.card[href="/product/dark-matter"] h2');
      const dark = hex(await yellow.evaluate((el) => getComputedStyle(el).color));
      assert.ok(contrastRatio(dark, '#ffcc00') >= 4.5 && contrastRatio(dark, '#ff6600') >= 4.5, `text ${dark} on yellow/orange`);
      await noHorizontalScroll(page);
      await page.screenshot({ path: screenshotPath(`catalog-${vp.name}`), fullPage: true });
      await page.close();

      const context = await browser.newContext({ viewport: vp, javaScriptEnabled: false });
      const noJs = await context.newPage();
      await noJs.goto(`${site.url}/`);
      await noJs.getByLabel('Search extensions').fill('darkest');
      await noJs.getByRole('button', { name: 'Search' }).click();
      await noJs.waitForURL(/\?q=darkest/);
      assert.equal(await noJs.getByRole('heading', { level: 1 }).innerText(), '1 extension matches “darkest”');
      assert.deepEqual(await noJs.locator('a.card h2').allInnerTexts(), ['Dark Matter']);
      await noJs.screenshot({ path: screenshotPath(`search-${vp.name}`), fullPage: true });
      await context.close();
    });

    it(`product page at ${vp.name} width: header, badge, sidebar anchors, FAQ anchors, copy button`, async () => {
      const page = await open('/product/text-tools', vp);
      assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Text Tools');
      const hero = page.locator('header.hero');
      assert.equal(await hero.evaluate((el) => getComputedStyle(el).backgroundImage), 'linear-gradient(to right bottom, rgb(18, 52, 86), rgb(171, 205, 239))');
      // The version badge shows the newest dated release, in badgeColor.
      const badge = page.locator('.version-badge');
      assert.equal(await badge.innerText(), '1.2.0');
      assert.equal(hex(await badge.evaluate((el) => getComputedStyle(el).backgroundColor)), '#ff8800');
      const icon = page.locator('header.hero img.icon');
      assert.equal(await icon.evaluate((el) => getComputedStyle(el).borderRadius), '50%');
      assert.ok(await icon.evaluate((el) => (el as HTMLImageElement).complete && (el as HTMLImageElement).naturalWidth > 0), 'icon loads');

      // Sidebar anchors jump to their headings.
      // Phones show the top-level sections as one row of links; desktops also the sub-headings.
      const links = [['Changelog', 'changelog'], ['FAQ', 'faq'], ['Contact', 'contact'], ['Install', 'install']];
      if (vp.name === 'desktop') links.unshift(['Features', 'features']);
      for (const [link, id] of links as [string, string][]) {
        await page.locator('nav.toc').getByRole('link', { name: link, exact: true }).click();
        await scrolledTo(page, id);
      }
      // FAQ anchors: the question links to itself, and a deep link lands on it.
      const question = page.getByRole('heading', { name: 'Which release do I need?' });
      assert.equal(await question.getAttribute('id'), 'which-release-do-i-need');
      assert.equal(await question.getByRole('link').getAttribute('href'), '#which-release-do-i-need');
      await question.getByRole('link').click();
      await scrolledTo(page, 'which-release-do-i-need');
      const deep = await open('/product/text-tools#does-it-work-offline', vp);
      await scrolledTo(deep, 'does-it-work-offline');
      assert.equal(await deep.getByText('Yes, nothing leaves your machine.').isVisible(), true);
      await deep.close();

      // The copy button copies the recommended label's URL.
      const row = page.locator('li.label-row.recommended');
      assert.equal(await row.locator('.label-name').innerText(), '5.4');
      await row.getByRole('button', { name: 'Copy URL' }).click();
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), `${DOWNLOAD_URL}/text-tools/5.4`);
      await page.getByRole('button', { name: 'Copied' }).waitFor();
      assert.equal(await page.locator('#copy-status').innerText(), 'Update site URL copied to the clipboard');
      assert.equal(await page.getByRole('link', { name: 'download the archive' }).getAttribute('href'), `${DOWNLOAD_URL}/text-tools/5.4.zip`);
      assert.equal(await page.getByRole('link', { name: 'demo/Example.knwf' }).getAttribute('href'), `${DOWNLOAD_URL}/workflows/text-tools/demo/Example.knwf`);

      await noHorizontalScroll(page);
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: screenshotPath(`product-${vp.name}`), fullPage: true });
      await page.close();
    });

    it(`product page at ${vp.name} width in dark mode, and a hidden page`, async () => {
      const page = await open('/product/text-tools', vp, 'dark');
      const body = await page.evaluate(() => ({ bg: getComputedStyle(document.body).backgroundColor, fg: getComputedStyle(document.body).color }));
      assert.ok(contrastRatio(hex(body.fg), hex(body.bg)) >= 7, 'dark mode body text contrast');
      assert.equal(hex(body.bg), '#0f1216');
      await page.screenshot({ path: screenshotPath(`product-${vp.name}-dark`), fullPage: true });
      await page.goto(`${site.url}/product/not-yet`);
      assert.equal(await page.getByRole('status').locator('strong').innerText(), 'Not live yet.');
      assert.equal(await page.locator('meta[name="robots"]').getAttribute('content'), 'noindex');
      await page.screenshot({ path: screenshotPath(`hidden-${vp.name}-dark`) });
      await page.close();
    });
  }

  it('keyboard: the skip link comes first and moves focus to the content; landmarks are there', async () => {
    const page = await open('/product/text-tools', VIEWPORTS[0]);
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.activeElement?.id === 'main');
    for (const role of ['banner', 'main', 'contentinfo', 'search'] as const) {
      assert.equal(await page.getByRole(role).count(), 1, role);
    }
    assert.equal(await page.getByRole('navigation', { name: 'On this page' }).count(), 1);
    // Every image has an alt attribute (decorative icons next to their name have alt="").
    assert.equal(await page.locator('img:not([alt])').count(), 0);
    await page.close();
  });

  it('unknown products get a 404 page', async () => {
    const page = await open('/product/nothing-here', VIEWPORTS[1]);
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Not found');
    await page.screenshot({ path: screenshotPath('not-found-phone') });
    await page.close();
  });
});

// A product with three labels, one deprecated and one withdrawn, in Chromium at 1280 and 390 px,
// light and dark (screenshots under test-output/pages): the withdrawn label is not offered, the
// deprecated one's banner is readable (contrast) and its replacement link leads to the
// replacement's install entry, without JavaScript too; the node page shows the notice.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { dialects } from '../../helpers/db.js';
import { needsTool } from '../../helpers/tools.js';
import { patchProduct } from '../../helpers/publishing.js';
import { launchChromium, screenshotPath } from '../web/browser.js';
import { DOWNLOAD_URL, FULL_FIELDS, type Site, startSite } from '../web/helpers.js';
import { NODE_FACTORY, type Seeder, seeder } from '../web/page-seed.js';

const [sqlite] = dialects();
const ID = 'three-labels';
const VIEWPORTS = [
  { name: '1280', width: 1280, height: 900 },
  { name: '390', width: 390, height: 844 },
] as const;

/** WCAG 2 contrast ratio of two `rgb(…)` colours. */
function contrast(a: string, b: string): number {
  const lum = (rgb: string) => {
    const [r, g, bl] = (rgb.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map((c) => {
      const s = Number(c) / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * (r ?? 0) + 0.7152 * (g ?? 0) + 0.0722 * (bl ?? 0);
  };
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p) as [number, number];
  return (x + 0.05) / (y + 0.05);
}

describe('label notices in Chromium', needsTool('chromium'), () => {
  let db: { url: string; drop(): Promise<void> };
  let site: Site;
  let seed: Seeder;
  let browser: Browser;

  before(async () => {
    db = await sqlite!.create();
    site = await startSite(db.url);
    seed = await seeder(db.url, site.storageDir);
    const token = await site.register(ID, { ...FULL_FIELDS, name: 'Three Labels' });
    await seed.upload(ID, ['update-site/5.3/content.jar', 'update-site/5.3.zip', 'update-site/5.2/content.jar', 'update-site/4.7/content.jar']);
    await seed.crawl(ID, '5.2', 'Tokenizer');
    await seed.release(ID, '5.3', '4.7');
    const res = await patchProduct(site.url, ID, token, {
      labels: {
        '5.2': { status: 'deprecated', message: 'Use 5.3: it fixes the tokenizer on texts longer than 64 KiB and reads Excel 2024 files.', replacement: '5.3' },
        '4.7': { status: 'withdrawn', message: 'It corrupts workflows on Windows.', replacement: '5.3' },
      },
    });
    assert.equal(res.status, 200, JSON.stringify(res.json));
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await seed?.close();
    await site?.close();
    await db?.drop();
  });

  for (const vp of VIEWPORTS) {
    for (const scheme of ['light', 'dark'] as const) {
      test(`product page at ${vp.name} px, ${scheme}`, async () => {
        const context = await browser.newContext({ viewport: { width: vp.width, height: vp.height }, colorScheme: scheme, javaScriptEnabled: scheme === 'light' });
        const page = await context.newPage();
        await page.goto(`${site.url}/product/${ID}`);
        const entries = await page.locator('ul.labels > li .label-anchor').evaluateAll((spans) => spans.map((s) => s.id));
        assert.deepEqual(entries, ['label:5.3', 'label:5.2'], 'the withdrawn 4.7 is not offered');
        assert.equal(await page.getByText(`${DOWNLOAD_URL}/${ID}/4.7`).count(), 0);
        const banner = page.locator('li:has([id="label:5.2"]) .label-notice');
        await banner.scrollIntoViewIfNeeded();
        assert.match((await banner.innerText()).replace(/\s+/g, ' '), /Deprecated since \d{4}-\d{2}-\d{2}: Use 5\.3: it fixes .* Use 5\.3 instead\./);
        const colors = await banner.evaluate((el) => ({ fg: getComputedStyle(el).color, bg: getComputedStyle(el).backgroundColor }));
        assert.ok(contrast(colors.fg, colors.bg) >= 4.5, `banner contrast ${JSON.stringify(colors)}`);
        // Nothing overflows the viewport at 390 px.
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        assert.ok(overflow <= 0, `page scrolls sideways by ${overflow} px`);
        await page.screenshot({ path: screenshotPath(`label-notices-product-${vp.name}-${scheme}`), fullPage: true });
        // The replacement link leads to the replacement's entry (a fragment: works without JavaScript).
        await banner.getByRole('link', { name: '5.3' }).click();
        await page.waitForFunction(() => location.hash === '#label:5.3');
        const top = await page.locator('[id="label:5.3"]').evaluate((el) => el.getBoundingClientRect().top);
        assert.ok(top >= -1 && top < vp.height, `the 5.3 entry is in view (${top})`);
        await context.close();
      });
    }
    test(`node page of a deprecated label at ${vp.name} px`, async () => {
      const context = await browser.newContext({ viewport: { width: vp.width, height: vp.height } });
      const page = await context.newPage();
      await page.goto(`${site.url}/product/${ID}/nodes/${encodeURIComponent(NODE_FACTORY)}`);
      const notice = page.locator('.label-notice');
      assert.match((await notice.innerText()).replace(/\s+/g, ' '), /Label 5\.2 is deprecated since .*Use 5\.3 instead\./);
      await page.screenshot({ path: screenshotPath(`label-notices-node-${vp.name}`), fullPage: true });
      await context.close();
    });
  }
});

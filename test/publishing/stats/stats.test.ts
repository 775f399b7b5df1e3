import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import type { Database } from '../../../src/infra/database/index.js';
import { openPublishingDatabase, type PublishingDB } from '../../../src/publishing/db.js';
import { type CountIncrement, downloadCountsRepository } from '../../../src/publishing/stats/repository.js';
import { dialects } from '../../helpers/db.js';
import { hasTool } from '../../helpers/tools.js';
import { launchChromium, screenshotPath } from '../web/browser.js';
import { type Site, startSite } from '../web/helpers.js';

/** Noon UTC on 27 November 2026: "today" for these tests; the page shows days through the 26th. */
const TODAY_NOON = Date.UTC(2026, 10, 27, 12, 0, 0);
let now = TODAY_NOON;

const inc = (label: string, day: string, artifact: string, downloads: number): CountIncrement => ({ productId: 'text-tools', label, day, artifact, downloads });

async function json(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>;
}

for (const dialect of dialects()) {
  describe(`download statistics (${dialect.name})`, () => {
    let db: { url: string; drop(): Promise<void> };
    let site: Site;
    let token: string;
    /** The download host's connection, as in its own process. */
    let host: Database<PublishingDB>;

    before(async () => {
      now = TODAY_NOON;
      db = await dialect.create();
      site = await startSite(db.url, { statsClock: () => now });
      token = await site.register('text-tools');
      await site.register('other-ext', { name: 'Other' });
      await site.register('quiet-ext', { name: 'Quiet' });
      await site.register('chart-demo', { name: 'Chart Demo', description: 'A product installed every day, for the screenshots' });
      host = await openPublishingDatabase(db.url);
      await downloadCountsRepository(host.db).add([
        // 26 Nov: label 5.4 installed 5 times by its update site (feature f; g is optional) and twice as an archive.
        inc('5.4', '2026-11-26', 'org.x.f', 5),
        inc('5.4', '2026-11-26', 'org.x.g', 3),
        inc('5.4', '2026-11-26', '#archive', 2),
        inc('5.5', '2026-11-26', 'org.x.f', 1),
        inc('5.4', '2026-11-20', 'org.x.f', 4),
        // Today: in the API, not yet on the page.
        inc('5.4', '2026-11-27', 'org.x.f', 10),
        // Before the chart's 90 days: in the page's total only.
        inc('5.4', '2026-01-05', 'org.x.f', 100),
        // Another product's installs never show here.
        { productId: 'other-ext', label: '5.4', day: '2026-11-26', artifact: 'org.y.f', downloads: 50 },
        // Every day of four months, weekdays busier than weekends, slowly growing.
        ...Array.from({ length: 120 }, (_, i) => {
          const day = new Date(Date.UTC(2026, 10, 27) - (i + 1) * 86_400_000);
          const weekend = day.getUTCDay() === 0 || day.getUTCDay() === 6;
          return { productId: 'chart-demo', label: '5.4', day: day.toISOString().slice(0, 10), artifact: 'org.demo.f', downloads: Math.round((weekend ? 8 : 30) * (1 + (120 - i) / 60) + ((i * 7) % 11)) };
        }),
      ]);
    });

    after(async () => {
      await host?.close();
      await site?.close();
      await db?.drop();
    });

    const stats = (query: string, auth: string | null = token) =>
      fetch(`${site.url}/api/products/text-tools/stats${query}`, { headers: auth === null ? {} : { authorization: `Bearer ${auth}` } });

    test('the default range is the last 90 days through today: days with installs, per label and summed', async () => {
      const res = await stats('');
      assert.equal(res.status, 200);
      const body = await json(res);
      assert.equal(body.productId, 'text-tools');
      assert.equal(body.from, '2026-08-30');
      assert.equal(body.to, '2026-11-27');
      // 26 Nov: max(5, 3) + 2 = 7 for 5.4, 1 for 5.5; 20 Nov: 4; today: 10.
      assert.equal(body.total, 7 + 1 + 4 + 10);
      // Days with installs only, oldest first.
      assert.deepEqual(body.days, [
        { day: '2026-11-20', installs: 4 },
        { day: '2026-11-26', installs: 8 },
        { day: '2026-11-27', installs: 10 },
      ]);
      // Labels by all their installs (5.4 has 100 more in January), each with its days in the range.
      assert.deepEqual(body.labels, [
        {
          label: '5.4',
          total: 21,
          allTime: 121,
          days: [
            { day: '2026-11-20', installs: 4 },
            { day: '2026-11-26', installs: 7 },
            { day: '2026-11-27', installs: 10 },
          ],
        },
        { label: '5.5', total: 1, allTime: 1, days: [{ day: '2026-11-26', installs: 1 }] },
      ]);
      assert.deepEqual(body.other, { total: 0, days: [] });
    });

    test('top and label choose the labels with a series of their own; the rest is summed into other', async () => {
      const top1 = await json(await stats('?top=1'));
      assert.deepEqual((top1.labels as { label: string }[]).map((l) => l.label), ['5.4']);
      assert.deepEqual(top1.other, { total: 1, days: [{ day: '2026-11-26', installs: 1 }] });
      const none = await json(await stats('?top=0'));
      assert.deepEqual([none.labels, (none.other as { total: number }).total], [[], 22]);
      const one = await json(await stats('?label=5.5'));
      assert.deepEqual(one.labels, [{ label: '5.5', total: 1, allTime: 1, days: [{ day: '2026-11-26', installs: 1 }] }]);
      assert.deepEqual(one.other, {
        total: 21,
        days: [
          { day: '2026-11-20', installs: 4 },
          { day: '2026-11-26', installs: 7 },
          { day: '2026-11-27', installs: 10 },
        ],
      });
      const unknown = await json(await stats('?label=9.9'));
      assert.deepEqual(unknown.labels, [{ label: '9.9', total: 0, allTime: 0, days: [] }]);
    });

    test('an explicit range', async () => {
      const body = await json(await stats('?from=2026-01-01&to=2026-01-31'));
      assert.equal(body.total, 100);
      assert.deepEqual(body.days, [{ day: '2026-01-05', installs: 100 }]);
      const one = await json(await stats('?from=2026-11-26&to=2026-11-26'));
      assert.deepEqual(one.days, [{ day: '2026-11-26', installs: 8 }]);
      const empty = await json(await stats('?from=2020-01-01&to=2020-01-02'));
      // Labels come by all their installs, with nothing in a range without any.
      assert.deepEqual([empty.total, empty.days, (empty.labels as { total: number }[]).map((l) => l.total), empty.other], [0, [], [0, 0], { total: 0, days: [] }]);
    });

    test('bad dates, ranges, top and label are 400s naming the field', async () => {
      const cases: [string, string][] = [
        ['?from=2026-02-30', 'from'],
        ['?to=2026-13-01', 'to'],
        ['?to=yesterday', 'to'],
        ['?from=2026-1-1', 'from'],
        ['?from=2026-11-28&to=2026-11-27', 'from'],
        ['?from=2000-01-01', 'from'],
        ['?from=2000-01-01&to=2020-01-01', 'from'],
        ['?from=2025-11-26', 'from'],
        ['?from=%00', 'from'],
        ['?top=11', 'top'],
        ['?top=-1', 'top'],
        ['?top=x', 'top'],
        ['?label=a%2Fb', 'label'],
        ['?label=..', 'label'],
      ];
      for (const [query, field] of cases) {
        const res = await stats(query);
        assert.equal(res.status, 400, query);
        assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
        const body = await json(res);
        assert.ok(
          (body.errors as { field: string }[]).some((e) => e.field === field || e.field === `/${field}` || e.field === `querystring/${field}`),
          `${query}: ${JSON.stringify(body.errors)}`,
        );
      }
      assert.equal((await stats('?since=2026-01-01')).status, 400);
      // At most 366 days: a leap year fits.
      assert.equal((await stats('?from=2025-11-27&to=2026-11-27')).status, 200);
    });

    test('only the product edit token reads them', async () => {
      assert.equal((await stats('', null)).status, 401);
      assert.equal((await stats('', 'pier_et_wrong')).status, 401);
      const other = await fetch(`${site.url}/api/products/other-ext/stats`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(other.status, 401);
      const missing = await fetch(`${site.url}/api/products/no-such/stats`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(missing.status, 404);
    });

    test('OpenAPI documents the route', async () => {
      const doc = await json(await fetch(`${site.url}/api/docs/json`));
      const op = (doc.paths as Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>>)['/api/products/{id}/stats']?.get;
      assert.equal(op?.operationId, 'getProductStats');
      for (const status of ['200', '400', '401', '404', '429']) assert.ok(op?.responses[status], status);
    });

    test('the product page shows complete days only: the total, and a bar per day with installs', async () => {
      const res = await fetch(`${site.url}/product/text-tools`);
      const html = await res.text();
      assert.match(html, /<h2>Installs<\/h2>/);
      // Through 26 Nov: 7 + 1 + 4 + 100 in all; the chart's 90 days hold 12; today's 10 are not shown yet.
      assert.match(html, /<strong class="installs-total">112<\/strong>/);
      assert.match(html, /<strong class="installs-recent">12<\/strong> in the last 90 days/);
      const bars = [...html.matchAll(/<rect class="installs-bar"[^>]*data-day="([^"]+)" data-installs="(\d+)"/g)].map((m) => [m[1], Number(m[2])]);
      assert.deepEqual(bars, [
        ['2026-11-20', 4],
        ['2026-11-26', 8],
      ]);
      assert.match(html, /<title>Installs per day, 29 August 2026 to 26 November 2026<\/title>/);
      assert.match(html, /<desc>12 installs in 90 days; the busiest day was 26 November 2026 with 8 installs\.<\/desc>/);
      // Every day's number as text (a table behind a disclosure), newest first.
      assert.match(html, /<time datetime="2026-11-26">26 November 2026<\/time><\/td><td>8<\/td>/);
      // No script: the chart is markup.
      assert.doesNotMatch(html.slice(html.indexOf('installs-chart'), html.indexOf('</svg>')), /<script/);
      // Each product shows its own installs; one without any shows no chart.
      assert.match(await (await fetch(`${site.url}/product/other-ext`)).text(), /<strong class="installs-total">50<\/strong>/);
      assert.doesNotMatch(await (await fetch(`${site.url}/product/quiet-ext`)).text(), /installs/);
    });

    test('new counts for shown days do not re-render the page; the next day does, once', async () => {
      const first = await fetch(`${site.url}/product/text-tools`);
      const etag = first.headers.get('etag');
      await first.text();
      // The download host flushes (another process): a day already shown gets more installs.
      await downloadCountsRepository(host.db).add([inc('5.4', '2026-11-26', 'org.x.f', 5), inc('5.4', '2026-11-27', 'org.x.f', 1)]);
      const again = await fetch(`${site.url}/product/text-tools`);
      assert.equal(again.headers.get('etag'), etag);
      assert.match(await again.text(), /<strong class="installs-total">112<\/strong>/);
      // A minute after midnight UTC the 27th is complete: the page shows it (and the 26th as it is now).
      now = Date.UTC(2026, 10, 28, 0, 1, 1);
      const next = await fetch(`${site.url}/product/text-tools`);
      assert.notEqual(next.headers.get('etag'), etag);
      const html = await next.text();
      // 112 + 5 more on the 26th (max(10, 3) + 2 = 12 now) + 11 on the 27th.
      assert.match(html, /<strong class="installs-total">128<\/strong>/);
      assert.match(html, /data-day="2026-11-27" data-installs="11"/);
      assert.match(html, /data-day="2026-11-26" data-installs="13"/);
    });

    if (dialect.name === 'sqlite' && hasTool('chromium')) {
      describe('in Chromium', () => {
        let browser: Browser;
        before(async () => {
          // Back to the 27th: the chart's 90 days are the demo's last 90.
          now = TODAY_NOON;
          browser = await launchChromium();
        });
        after(async () => {
          await browser?.close();
        });

        for (const viewport of [
          { name: 'desktop', width: 1280, height: 900 },
          { name: 'phone', width: 390, height: 844 },
        ]) {
          for (const colorScheme of ['light', 'dark'] as const) {
            test(`the chart at ${viewport.width} px (${colorScheme})`, async () => {
              const context = await browser.newContext({ viewport: { width: viewport.width, height: viewport.height }, colorScheme });
              const page = await context.newPage();
              await page.goto(`${site.url}/product/chart-demo`);
              const chart = page.locator('section.installs');
              await chart.scrollIntoViewIfNeeded();
              const box = await page.locator('svg.installs-chart').boundingBox();
              assert.ok(box && box.width > 200 && box.height > 60, JSON.stringify(box));
              // Fits the viewport: no sideways scrolling.
              assert.ok(box.x >= 0 && box.x + box.width <= viewport.width, JSON.stringify(box));
              assert.equal(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), true);
              // Bars take the accent colour of the scheme; the accessible name is the SVG's title.
              const fill = await page.locator('rect.installs-bar').first().evaluate((e) => getComputedStyle(e).fill);
              assert.equal(fill, colorScheme === 'light' ? 'rgb(47, 91, 211)' : 'rgb(143, 176, 255)');
              assert.equal(await page.getByRole('img', { name: /Installs per day/ }).count(), 1);
              // Without script the table opens by its disclosure.
              await page.locator('.installs-table summary').click();
              assert.equal(await page.locator('.installs-table tbody tr').count(), 90);
              assert.equal(await page.locator('rect.installs-bar').count(), 90);
              await page.locator('.installs-table summary').click();
              await chart.screenshot({ path: screenshotPath(`installs-chart-${viewport.width}-${colorScheme}`) });
              await page.screenshot({ path: screenshotPath(`installs-page-${viewport.width}-${colorScheme}`), fullPage: false });
              await context.close();
            });
          }
        }
      });
    }
  });
}

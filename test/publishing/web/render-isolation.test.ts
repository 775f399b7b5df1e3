// Vendor Markdown is rendered off the serving event loop: while a product page renders, the same
// process still answers /healthz and serves downloads; a render over its time limit ends with a
// clear 503 and the next render works again. One product's renders never starve the others'
// pages: another worker serves them, and a product over its render-time budget keeps its last
// page without rendering.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../../src/infra/config.js';
import { type RunningDownloads, startDownloads } from '../../../src/publishing/downloads/index.js';
import type { RenderHold } from '../../../src/publishing/web/isolated-render.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { createPublishingService, type PublishingService } from '../../../src/publishing/service.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { makeCurrent } from '../downloads/released.js';
import { patchProduct } from '../../helpers/publishing.js';

/** 2,000 changelog items each using its own link reference: slow to render by design. */
function hostileChangelog(n = 2000): string {
  const items = Array.from({ length: n }, (_, i) => `- item ${i} [r${i}]`);
  const refs = Array.from({ length: n }, (_, i) => `[r${i}]: https://example.test/${i}`);
  return ['# Changelog', '', '## [1.0.0] - 2024-01-01', '### Added', ...items, '', ...refs].join('\n');
}

/** Resolves once the worker has taken a render and sits in the test hold (cell 1 set). */
async function renderStarted(hold: Int32Array, page: Promise<unknown>): Promise<void> {
  let answered = false;
  void page.finally(() => {
    answered = true;
  });
  while (Atomics.load(hold, 1) === 0) {
    if (answered) throw new Error('the page was answered without its render passing through the worker');
    await sleep(5);
  }
}

function release(hold: Int32Array): void {
  Atomics.store(hold, 0, 1);
  Atomics.notify(hold, 0);
}

interface Running {
  service: PublishingService;
  url: string;
  downloads: RunningDownloads;
  storageDir: string;
  close(): Promise<void>;
}

interface StartOptions {
  /** Holds only some products' renders (default: every render waits on `hold`). */
  renderHold?: RenderHold;
  /** The render budget's clock. */
  renderClock?: () => number;
}

async function start(databaseUrl: string, hold: Int32Array, env: Record<string, string> = {}, options: StartOptions = {}): Promise<Running> {
  const config = loadConfig({
    PIER_DATA_DIR: tempDir('pier-render-'),
    PIER_DATABASE_URL: databaseUrl,
    PIER_LOG_LEVEL: 'silent',
    PIER_BASE_URL: 'http://pier.test',
    ...env,
  });
  const service = await createPublishingService(config, { renderHold: options.renderHold ?? hold, renderClock: options.renderClock });
  const url = await service.app.listen({ host: '127.0.0.1', port: 0 });
  const downloads = await startDownloads(config, { port: 0 });
  return {
    service,
    url,
    downloads,
    storageDir: config.publishing.storageDir,
    async close() {
      release(hold);
      await downloads.close();
      await service.close();
    },
  };
}

for (const dialect of dialects()) {
  describe(`product page rendering off the event loop on ${dialect.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    before(async () => {
      db = await dialect.create();
    });
    after(async () => {
      await db.drop();
    });

    it('answers /healthz and a download while a hostile changelog renders', async () => {
      const hold = new Int32Array(new SharedArrayBuffer(8));
      const pier = await start(db.url, hold);
      try {
        const creds = await pier.service.products.register('hostile', { name: 'Hostile' });
        const patched = await patchProduct(pier.url, 'hostile', creds.editToken, { changelog: hostileChangelog() });
        assert.equal(patched.status, 200, JSON.stringify(patched.json));
        // In the label's current release: the download host serves a label from it.
        const jar = path.join(pier.storageDir, 'hostile/releases/1.0/1/plugins/a.jar');
        fs.mkdirSync(path.dirname(jar), { recursive: true });
        fs.writeFileSync(jar, 'jar bytes');
        makeCurrent(pier.storageDir, 'hostile', '1.0');

        const events: string[] = [];
        const page = fetch(`${pier.url}/product/hostile`).then(async (r) => {
          events.push('page');
          return { status: r.status, body: await r.text() };
        });
        await renderStarted(hold, page);
        const health = await fetch(`${pier.url}/healthz`);
        events.push('healthz');
        assert.equal(health.status, 200);
        const download = await fetch(`${pier.downloads.url}/hostile/1.0/plugins/a.jar`);
        assert.equal(download.status, 200);
        assert.equal(await download.text(), 'jar bytes');
        events.push('download');
        release(hold);
        const shown = await page;
        assert.deepEqual(events, ['healthz', 'download', 'page']);
        assert.equal(shown.status, 200);
        assert.match(shown.body, /item 1999/);
        assert.match(shown.body, /href="https:\/\/example\.test\/1999"/);
      } finally {
        await pier.close();
      }
    });

    it('concurrent requests for one product share one render', async () => {
      const hold = new Int32Array(new SharedArrayBuffer(8));
      const pier = await start(db.url, hold);
      try {
        const creds = await pier.service.products.register('popular', { name: 'Popular' });
        assert.equal((await patchProduct(pier.url, 'popular', creds.editToken, { changelog: hostileChangelog(200) })).status, 200);
        const first = fetch(`${pier.url}/product/popular`);
        await renderStarted(hold, first);
        const more = [1, 2, 3, 4].map(() => fetch(`${pier.url}/product/popular`));
        // Each later request has been answered by the app's router before the render is let go.
        assert.equal((await fetch(`${pier.url}/healthz`)).status, 200);
        release(hold);
        const statuses = await Promise.all([first, ...more].map((p) => p.then((r) => r.status)));
        assert.deepEqual(statuses, [200, 200, 200, 200, 200]);
        assert.equal(Atomics.load(hold, 1), 1);
      } finally {
        await pier.close();
      }
    });

    it('a render over the time limit answers 503 with Retry-After; the failure is kept until the content changes', async () => {
      const hold = new Int32Array(new SharedArrayBuffer(8));
      const pier = await start(db.url, hold, { PIER_PAGE_RENDER_TIMEOUT_SECONDS: '1' });
      try {
        const creds = await pier.service.products.register('slow', { name: 'Slow' });
        const patched = await patchProduct(pier.url, 'slow', creds.editToken, { text: 'Hello **world**' });
        assert.equal(patched.status, 200);
        // Held past its limit: the worker is ended and the request answered, never left hanging.
        const stuck = await fetch(`${pier.url}/product/slow`);
        assert.equal(stuck.status, 503);
        assert.equal(stuck.headers.get('retry-after'), '30');
        assert.match(stuck.headers.get('content-type') ?? '', /^application\/problem\+json/);
        const problem = (await stuck.json()) as { code: string; detail: string };
        assert.equal(problem.code, 'unavailable');
        assert.match(problem.detail, /could not be rendered in time/);
        assert.doesNotMatch(JSON.stringify(problem), /worker|stack|\.ts\b/i);
        assert.equal(Atomics.load(hold, 1), 1);
        // The same content is not rendered again on every request.
        release(hold);
        for (const path of ['/product/slow', '/product/slow', '/product/slow/badge.svg']) {
          assert.equal((await fetch(`${pier.url}${path}`)).status, 503, path);
        }
        assert.equal(Atomics.load(hold, 1), 1);
        // A change of the content is rendered (by a fresh worker) and served normally.
        assert.equal((await patchProduct(pier.url, 'slow', creds.editToken, { text: 'Hello **again**' })).status, 200);
        const again = await fetch(`${pier.url}/product/slow`);
        assert.equal(again.status, 200);
        assert.match(await again.text(), /Hello <strong>again<\/strong>/);
        assert.equal(Atomics.load(hold, 1), 2);
      } finally {
        await pier.close();
      }
    });

    it('the site feed lists the healthy products when one product cannot be rendered', async () => {
      const hold = new Int32Array(new SharedArrayBuffer(8));
      const pier = await start(db.url, hold, { PIER_PAGE_RENDER_TIMEOUT_SECONDS: '1' });
      const other = await openPublishingDatabase(db.url);
      try {
        const repo = productsRepository(other.db, other.dialect);
        const changelog = (v: string) => `# Changelog\n\n## [${v}] - 2024-01-01\n### Added\n- Release ${v}`;
        for (const [id, v] of [['healthy', '1.2.3'], ['failing', '9.8.7']] as const) {
          const creds = await pier.service.products.register(id, { name: id });
          assert.equal((await patchProduct(pier.url, id, creds.editToken, { changelog: changelog(v) })).status, 200);
          await repo.setState(id, 'live', new Date().toISOString());
        }
        // The healthy product is rendered while renders pass; then every render is held past its limit.
        release(hold);
        assert.equal((await fetch(`${pier.url}/product/healthy`)).status, 200);
        Atomics.store(hold, 0, 0);
        const rendersBefore = Atomics.load(hold, 1);
        for (let i = 0; i < 3; i++) {
          const feed = await fetch(`${pier.url}/releases.atom`);
          assert.equal(feed.status, 200);
          const xml = await feed.text();
          assert.match(xml, /1\.2\.3/);
          assert.doesNotMatch(xml, /9\.8\.7/);
        }
        // One render attempt of the failing product, remembered for its content.
        assert.equal(Atomics.load(hold, 1), rendersBefore + 1);
      } finally {
        await other.close();
        await pier.close();
      }
    });

    it("another product's page is rendered and served while one product's render is held", async () => {
      const hold = new Int32Array(new SharedArrayBuffer(8));
      const pier = await start(db.url, hold, { PIER_PAGE_RENDER_WORKERS: '2' }, { renderHold: (id) => (id === 'starver' ? hold : undefined) });
      try {
        for (const id of ['starver', 'victim']) {
          const creds = await pier.service.products.register(id, { name: id });
          assert.equal((await patchProduct(pier.url, id, creds.editToken, { text: `Text of ${id}` })).status, 200);
        }
        let starverAnswered = false;
        const starver = fetch(`${pier.url}/product/starver`).then((r) => {
          starverAnswered = true;
          return r.status;
        });
        await renderStarted(hold, starver);
        const victim = await fetch(`${pier.url}/product/victim`);
        assert.equal(victim.status, 200);
        assert.match(await victim.text(), /Text of victim/);
        assert.equal(starverAnswered, false, "the other product's page waited for the held render");
        release(hold);
        assert.equal(await starver, 200);
      } finally {
        await pier.close();
      }
    });

    it('a product over its render budget is served its previous page (or 503 with Retry-After) while another product renders at once; the budget refills', async () => {
      const hold = new Int32Array(new SharedArrayBuffer(8));
      let clock = 1_000_000;
      const pier = await start(
        db.url,
        hold,
        { PIER_PAGE_RENDER_BUDGET_SECONDS: '30' },
        { renderHold: (id) => (id === 'greedy' ? hold : undefined), renderClock: () => clock },
      );
      try {
        const creds = await pier.service.products.register('greedy', { name: 'Greedy' });
        assert.equal((await patchProduct(pier.url, 'greedy', creds.editToken, { text: 'Version one' })).status, 200);
        const other = await pier.service.products.register('bystander', { name: 'Other' });
        assert.equal((await patchProduct(pier.url, 'bystander', other.editToken, { text: 'Other text' })).status, 200);

        // A render that takes a minute (of the injected clock): twice the burst.
        const first = fetch(`${pier.url}/product/greedy`);
        await renderStarted(hold, first);
        clock += 60_000;
        release(hold);
        const one = await first;
        assert.equal(one.status, 200);
        assert.match(await one.text(), /Version one/);

        // Changed while over budget: the previous page, without a render.
        assert.equal((await patchProduct(pier.url, 'greedy', creds.editToken, { text: 'Version two' })).status, 200);
        const stale = await fetch(`${pier.url}/product/greedy`);
        assert.equal(stale.status, 200);
        const staleBody = await stale.text();
        assert.match(staleBody, /Version one/);
        assert.doesNotMatch(staleBody, /Version two/);
        assert.equal(Atomics.load(hold, 1), 1);

        // Another product's change is rendered at once.
        assert.equal((await patchProduct(pier.url, 'bystander', other.editToken, { text: 'Other changed' })).status, 200);
        const fresh = await fetch(`${pier.url}/product/bystander`);
        assert.equal(fresh.status, 200);
        assert.match(await fresh.text(), /Other changed/);

        // Made live by staff meanwhile: the hidden page kept is not this state's page, so a 503.
        const staff = await openPublishingDatabase(db.url);
        try {
          await productsRepository(staff.db, staff.dialect).setState('greedy', 'live', new Date().toISOString());
        } finally {
          await staff.close();
        }
        const unavailable = await fetch(`${pier.url}/product/greedy`);
        assert.equal(unavailable.status, 503);
        assert.equal(unavailable.headers.get('retry-after'), '301');
        assert.match(unavailable.headers.get('content-type') ?? '', /^application\/problem\+json/);
        assert.equal(((await unavailable.json()) as { code: string }).code, 'unavailable');
        assert.equal(Atomics.load(hold, 1), 1);

        // 30 s of debt paid back at a tenth of wall time: rendered again.
        clock += 301_000;
        const again = await fetch(`${pier.url}/product/greedy`);
        assert.equal(again.status, 200);
        assert.match(await again.text(), /Version two/);
        assert.equal(Atomics.load(hold, 1), 2);
      } finally {
        await pier.close();
      }
    });
  });
}

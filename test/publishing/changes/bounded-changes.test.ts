// The changes page between two big labels (changes/compare.ts, web/changes-pages.ts): one page of
// at most COMPARE_PAGE nodes with every bucket's count, the comparison made in the catalog's
// worker thread, the answer kept by the product's own version (another product's change does
// not drop it), and the kept answers bounded by bytes. The API answers the same pages. Real
// service on SQLite and PostgreSQL, nodes stored through the crawl's repository.
import assert from 'node:assert/strict';
import { after, before, describe, it, test } from 'node:test';
import { COMPARE_PAGE } from '../../../src/publishing/changes/compare.js';
import type { ChangeSources, ChangesService } from '../../../src/publishing/changes/service.js';
import { type CrawlNodeRow, crawlsRepository } from '../../../src/publishing/crawler/repository.js';
import { NODE_SANITIZER_VERSION } from '../../../src/publishing/crawler/sanitize-node.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { changesPages } from '../../../src/publishing/web/changes-pages.js';
import type { ProductPageModel } from '../../../src/publishing/web/model.js';
import { dialects } from '../../helpers/db.js';
import { patchProduct } from '../../helpers/publishing.js';
import { type Site, startSite } from '../web/helpers.js';
import { seeder } from '../web/page-seed.js';

const ID = 'diffs';
const N = 450;

function nodes(label: string, prefix: string): CrawlNodeRow[] {
  return Array.from({ length: N }, (_, i) => ({
    product_id: ID,
    label,
    factory_class: `org.${prefix}.N${String(i).padStart(4, '0')}NodeFactory`,
    name: `${prefix.toUpperCase()} ${String(i).padStart(4, '0')}`,
    product_name: 'Diffs',
    bundle: `org.${prefix}`,
    category_path: '/',
    category_names: 'Community',
    short_description: '',
    deprecated: 0,
    data: JSON.stringify({ categoryNames: ['Community'], description: null }),
    icon_type: null,
    icon: null,
    sanitized: NODE_SANITIZER_VERSION,
  }));
}

/** The nodes a changes page lists (each one's name, linked or not). */
const listed = (html: string) => html.match(/<span class="change-node">/g)?.length ?? 0;

for (const dialect of dialects()) {
  describe(`the changes page between two big labels on ${dialect.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let web: Site;
    let token: string;
    let otherToken: string;

    before(async () => {
      db = await dialect.create();
      web = await startSite(db.url);
      token = await web.register(ID, { name: 'Diffs' });
      otherToken = await web.register('bystander', { name: 'Bystander' });
      const seed = await seeder(db.url);
      const other = await openPublishingDatabase(db.url);
      try {
        await seed.upload(ID, ['update-site/5.0/content.jar', 'update-site/5.1/content.jar']);
        const crawls = crawlsRepository(other.db, other.dialect);
        const at = new Date().toISOString();
        for (const [label, prefix] of [
          ['5.0', 'old'],
          ['5.1', 'new'],
        ] as const) {
          await crawls.finish({ product_id: ID, label, status: 'finished', url: `http://dl.test/${ID}/${label}/`, started_at: at, finished_at: at, files_seq: 0, summary: '{}', problems: '[]', units: '[]' }, nodes(label, prefix), 1000);
        }
      } finally {
        await other.close();
        await seed.close();
      }
    });
    after(async () => {
      await web.close();
      await db.drop();
    });

    it('lists one page of nodes with every bucket counted; the comparison is made in the worker thread', async () => {
      const reads = web.service.catalogReads;
      assert.ok(reads, 'a database file is read by the catalog worker');
      const before = reads.answered;
      const get = async (q: string) => {
        const r = await fetch(`${web.url}/product/${ID}/changes${q}`);
        return { status: r.status, html: await r.text() };
      };
      const first = await get('');
      assert.equal(first.status, 200);
      assert.ok(/From <strong>5\.0<\/strong> to <strong>5\.1<\/strong>: 450 added, 450 removed, 0 deprecated, 0 changed, 0 unchanged\./.test(first.html), 'every bucket counted');
      assert.equal(listed(first.html), COMPARE_PAGE);
      assert.ok(first.html.includes('Page 1 of 5'), 'paged');
      assert.ok(reads.answered > before, 'the worker answered the comparison');
      const last = await get('?from=5.0&to=5.1&page=5');
      assert.equal(last.status, 200);
      assert.equal(listed(last.html), 2 * N - 4 * COMPARE_PAGE);
      assert.equal((await get('?from=5.0&to=5.1&page=6')).status, 404);
    });

    it("keeps the page while only another product changes, and reads it again when this product's sources change", async () => {
      const reads = web.service.catalogReads!;
      const page = () => fetch(`${web.url}/product/${ID}/changes?from=5.0&to=5.1&page=2`).then((r) => r.text());
      await page();
      const made = reads.answeredOf('compare');
      assert.equal((await patchProduct(web.url, 'bystander', otherToken, { description: 'changed' })).status, 200);
      await web.setState('bystander', 'live');
      assert.equal(listed(await page()), COMPARE_PAGE);
      assert.equal(reads.answeredOf('compare'), made, "another product's changes leave this comparison as it was");
      // An edit of this product's text leaves what the comparison is read from as it was too.
      assert.equal((await patchProduct(web.url, ID, token, { description: 'edited' })).status, 200);
      await page();
      assert.equal(reads.answeredOf('compare'), made);
      // A new label is a new source: compared again.
      const seed = await seeder(db.url);
      try {
        await seed.upload(ID, ['update-site/5.2/content.jar']);
      } finally {
        await seed.close();
      }
      await page();
      assert.equal(reads.answeredOf('compare'), made + 1);
    });

    it('the API answers the same pages, with counts', async () => {
      const res = await fetch(`${web.url}/api/products/${ID}/changes?from=5.0&to=5.1&page=2`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200);
      const body = (await res.json()) as { counts: Record<string, number>; page: number; pages: number; added: unknown[]; removed: unknown[] };
      assert.deepEqual(body.counts, { added: N, removed: N, deprecated: 0, changed: 0, unchanged: 0 });
      assert.deepEqual([body.page, body.pages], [2, 5]);
      assert.equal(body.added.length + body.removed.length, COMPARE_PAGE);
      const past = await fetch(`${web.url}/api/products/${ID}/changes?from=5.0&to=5.1&page=6`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(past.status, 404);
      assert.equal(((await past.json()) as { errors: { field: string }[] }).errors[0]?.field, 'page');
    });
  });
}

test('kept changes pages are bounded by bytes, the most recent kept', async () => {
  const sources: ChangeSources = { labels: [{ label: '1.0', uploaded: true, recommended: true, current: null, releases: [] }] };
  let compared = 0;
  const big = Array.from({ length: COMPARE_PAGE }, (_, i) => ({ factoryClass: `a.N${i}`, name: `Node number ${i} with a long name`, categoryNames: ['A', 'B'], deprecated: false }));
  const service = {
    sources: async () => sources,
    async compare(_id: string, query: { from?: string; to?: string }) {
      compared++;
      const side = (v: string) => ({ label: v, release: null, value: v });
      return {
        sources,
        comparison: {
          from: side(query.from ?? '1.0'),
          to: side(query.to ?? '1.0'),
          diff: { added: big, removed: [], deprecated: [], changed: [], unchanged: 0 },
          counts: { added: COMPARE_PAGE, removed: 0, deprecated: 0, changed: 0, unchanged: 0 },
          page: 1,
          pages: 1,
          paged: [],
        },
      };
    },
  } as unknown as ChangesService;
  const maxBytes = 200_000;
  const pages = changesPages({ service, site: { name: 'Pier', baseUrl: 'http://pier.test', downloadUrl: 'http://dl.test' }, maxBytes });
  const product = { model: { id: 'p', name: 'P', hidden: false } as ProductPageModel, crawled: 'c1' };
  for (let i = 0; i < 30; i++) {
    const s = await pages.page(product, { from: `1.${i}`, to: '1.0' });
    assert.ok(s.body.length > 10_000, 'pages of this size');
    assert.ok(pages.bytes <= maxBytes, `${pages.bytes} bytes kept`);
  }
  assert.equal(compared, 30);
  await pages.page(product, { from: '1.29', to: '1.0' });
  assert.equal(compared, 30, 'the most recent page is kept');
  await pages.page({ ...product, crawled: 'c2' }, { from: '1.29', to: '1.0' });
  assert.equal(compared, 31, 'a new crawl of the product: read again');
});

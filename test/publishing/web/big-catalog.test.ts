// A product page stays the same size whatever the node catalog holds (web/product-nodes.ts):
// each label shows its first NODE_PREVIEW nodes (the first NODE_PREVIEW_LABELS labels only) and
// links a paged list of all of them; the page's document is rendered in the render pool, not on
// the serving loop; and an edit of the page's text re-uses the node lists read for the product's
// crawl instead of reading them again. Real database (SQLite and PostgreSQL), nodes stored
// through the crawl's repository, files through the files service, on a connection of their own.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isolatedRenderer } from '../../../src/publishing/web/isolated-render.js';
import { renderProductContent } from '../../../src/publishing/content/product-content.js';
import { type CrawlNodeRow, crawlsRepository } from '../../../src/publishing/crawler/repository.js';
import { NODE_SANITIZER_VERSION } from '../../../src/publishing/crawler/sanitize-node.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { productFilesReader } from '../../../src/publishing/files/reader.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { databasePageChanges } from '../../../src/publishing/web/page-changes.js';
import { NODE_LIST_PAGE, NODE_PREVIEW, NODE_PREVIEW_LABELS } from '../../../src/publishing/web/product-nodes.js';
import { pagesService } from '../../../src/publishing/web/service.js';
import { dialects } from '../../helpers/db.js';
import { patchProduct } from '../../helpers/publishing.js';
import { type Site, startSite } from './helpers.js';
import { seeder } from './page-seed.js';

const ID = 'big';
const LABELS = ['5.0', '5.1', '5.2', '5.3', '5.4', '5.5', '5.6', '5.7'];
const PER_LABEL = NODE_LIST_PAGE + 20;
const site = { name: 'Pier', baseUrl: 'http://pier.test', downloadUrl: 'http://dl.test' };

function nodes(label: string): CrawlNodeRow[] {
  return Array.from({ length: PER_LABEL }, (_, i) => ({
    product_id: ID,
    label,
    factory_class: `org.big.N${String(i).padStart(4, '0')}NodeFactory`,
    name: `Node ${String(i).padStart(4, '0')}`,
    product_name: 'Big',
    bundle: 'org.big',
    category_path: '/community/big',
    category_names: `Community / Group ${i % 3}`,
    short_description: `Does thing ${i}.`,
    deprecated: 0,
    data: JSON.stringify({ categoryNames: ['Community', `Group ${i % 3}`], description: null }),
    icon_type: null,
    icon: null,
    sanitized: NODE_SANITIZER_VERSION,
  }));
}

const nodeLinks = (html: string) => html.match(/<a href="\/product\/big\/nodes\/[^"]+">Node \d+<\/a>/g) ?? [];
const section = (html: string) => html.slice(html.indexOf('<h2 id="nodes">'), html.indexOf('</section>', html.indexOf('<h2 id="nodes">')));

for (const dialect of dialects()) {
  describe(`a big node catalog on the product page on ${dialect.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let web: Site;
    let token: string;

    before(async () => {
      db = await dialect.create();
      web = await startSite(db.url);
      token = await web.register(ID, { name: 'Big', description: 'first' });
      const seed = await seeder(db.url, web.storageDir);
      const other = await openPublishingDatabase(db.url);
      try {
        await seed.upload(
          ID,
          LABELS.map((l) => `update-site/${l}/content.jar`),
        );
        // Pages offer released labels only.
        await seed.release(ID, ...LABELS);
        const crawls = crawlsRepository(other.db, other.dialect);
        const at = new Date().toISOString();
        for (const l of LABELS) {
          const rows = nodes(l);
          await crawls.finish({ product_id: ID, label: l, status: 'finished', url: `http://dl.test/${ID}/${l}/`, started_at: at, finished_at: at, files_seq: 0, summary: '{}', problems: '[]', units: '[]' }, rows, 1000);
        }
      } finally {
        await other.close();
        await seed.close();
      }
      await web.setState(ID, 'live');
    });
    after(async () => {
      await web.close();
      await db.drop();
    });

    it('shows each label’s first nodes and a link to all of them, never every node of every label', async () => {
      const html = await (await fetch(`${web.url}/product/${ID}`)).text();
      const nodesHtml = section(html);
      assert.equal(nodeLinks(nodesHtml).length, NODE_PREVIEW * NODE_PREVIEW_LABELS, 'the first labels’ first nodes only');
      // Best label first (the highest), every label counted.
      const counts = [...nodesHtml.matchAll(/<span class="label-name">([^<]*)<\/span> <span class="node-count">([^<]*)<\/span>/g)].map((m) => [m[1], m[2]]);
      assert.deepEqual(
        counts,
        [...LABELS].reverse().map((l) => [l, `${PER_LABEL} nodes`]),
      );
      for (const [i, l] of [...LABELS].reverse().entries()) {
        const text = i < NODE_PREVIEW_LABELS ? `All ${PER_LABEL} nodes of ${l}` : `The ${PER_LABEL} nodes of ${l}`;
        assert.ok(nodesHtml.includes(`<a href="/product/${ID}/nodes?label=${l}">${text}</a>`), text);
      }
      // The catalog card counts distinct nodes across labels.
      assert.match((await (await fetch(`${web.url}/`)).text()).replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' '), new RegExp(`Nodes ${PER_LABEL} `));
    });

    it('lists a label’s nodes a page at a time; a page past the last or an unknown label is a 404', async () => {
      const page = async (q: string) => {
        const r = await fetch(`${web.url}/product/${ID}/nodes?${q}`);
        return { status: r.status, html: await r.text() };
      };
      const one = await page('label=5.3');
      assert.equal(one.status, 200);
      assert.equal(nodeLinks(one.html).length, NODE_LIST_PAGE);
      assert.match(one.html, /Page 1 of 2/);
      assert.ok(one.html.includes(`href="/product/${ID}/nodes?label=5.3&amp;page=2"`), 'a link to the next page');
      const two = await page('label=5.3&page=2');
      assert.equal(two.status, 200);
      assert.equal(nodeLinks(two.html).length, PER_LABEL - NODE_LIST_PAGE);
      // Together, every node of the label once.
      assert.equal(new Set([...nodeLinks(one.html), ...nodeLinks(two.html)]).size, PER_LABEL);
      assert.equal((await page('label=5.3&page=3')).status, 404);
      assert.equal((await page('label=9.9')).status, 404);
      assert.equal((await page('label=5.3&page=0')).status, 400);
      assert.equal((await page('label=5.3&page=abc')).status, 400);
    });

    it('renders the page document in the render pool, and re-uses the node lists after an edit of the text', async () => {
      const database = await openPublishingDatabase(db.url);
      const content = isolatedRenderer({ timeoutMs: 60_000 });
      const calls: string[] = [];
      const real = crawlsRepository(database.db, database.dialect);
      // Every read of the product's nodes, counted.
      const crawls = new Proxy(real, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver);
          return typeof v === 'function' && /^(node|distinct)/.test(String(prop))
            ? (...args: unknown[]) => {
                calls.push(String(prop));
                return (v as (...a: unknown[]) => unknown).apply(target, args);
              }
            : v;
        },
      });
      const pooled: string[] = [];
      const renderer = {
        render: (fields: Parameters<typeof renderProductContent>[0], release: string | null, ids: readonly string[]) => Promise.resolve(renderProductContent(fields, release, ids)),
        async renderPage(_site: unknown, model: { name: string }, product: string) {
          pooled.push(product);
          const body = Buffer.from(`<!doctype html><p>${model.name} from the pool</p>`);
          return { body, etag: '"pooled-aaaaaaaaaaaaaaaaaaaaaaa"' };
        },
        close: () => content.close(),
      };
      try {
        const repo = productsRepository(database.db, database.dialect, { readNow: database.readNow });
        const pages = pagesService({ released: () => 1, renderer, repo, files: productFilesReader(filesRepository(database.db)), crawls, changes: databasePageChanges(database, 0), site });
        const first = await pages.productPage(ID);
        assert.equal(first?.body.toString(), '<!doctype html><p>Big from the pool</p>');
        assert.deepEqual(pooled, [ID]);
        assert.ok(calls.length > 0, 'the first rendering reads the node lists');
        calls.length = 0;
        assert.equal((await patchProduct(web.url, ID, token, { description: 'second' })).status, 200);
        const second = await pages.productPage(ID);
        assert.equal(pooled.length, 2, 'the edit is rendered again, in the pool');
        assert.ok(second);
        assert.deepEqual(calls, [], 'no node of the product read again for an edit of its text');
      } finally {
        await content.close();
        await database.close();
      }
    });
  });
}

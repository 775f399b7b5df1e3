// Node search at catalog scale (web/node-search.ts, crawler/repository.ts `searchNodes`): one
// query reads at most SEARCH_CANDIDATES rows whatever matches, a one-letter word is no prefix of
// everything, the search runs in the catalog's worker thread, the filters' choices come from the
// catalog index (never a scan of every node per query), and an answer is kept until what it is
// built from changes (not an edit of a product's text). SQLite and PostgreSQL.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { renderProductContent } from '../../../src/publishing/content/product-content.js';
import { type CrawlNodeRow, crawlsRepository, SEARCH_CANDIDATES, searchWords } from '../../../src/publishing/crawler/repository.js';
import { NODE_SANITIZER_VERSION } from '../../../src/publishing/crawler/sanitize-node.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { productFilesReader } from '../../../src/publishing/files/reader.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { databasePageChanges } from '../../../src/publishing/web/page-changes.js';
import { pagesService } from '../../../src/publishing/web/service.js';
import { dialects } from '../../helpers/db.js';
import { patchProduct } from '../../helpers/publishing.js';
import { type Site, startSite } from './helpers.js';

const ID = 'finder';
const MANY = SEARCH_CANDIDATES + 300;

function nodes(label: string, count: number): CrawlNodeRow[] {
  return Array.from({ length: count }, (_, i) => ({
    product_id: ID,
    label,
    factory_class: `org.finder.W${String(i).padStart(5, '0')}NodeFactory`,
    name: `Widget ${i}`,
    product_name: 'Finder',
    bundle: 'org.finder',
    category_path: '/',
    category_names: `Community / Group ${i % 4}`,
    short_description: 'Frobs widgets.',
    deprecated: 0,
    data: '{}',
    icon_type: null,
    icon: null,
    sanitized: NODE_SANITIZER_VERSION,
  }));
}

const hits = (html: string) => html.match(/<li class="node-hit">/g)?.length ?? 0;

for (const dialect of dialects()) {
  describe(`node search at catalog scale on ${dialect.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let web: Site;
    let token: string;

    before(async () => {
      db = await dialect.create();
      web = await startSite(db.url);
      token = await web.register(ID, { name: 'Finder' });
      const other = await openPublishingDatabase(db.url);
      try {
        const at = new Date().toISOString();
        const crawls = crawlsRepository(other.db, other.dialect);
        await crawls.finish({ product_id: ID, label: '5.0', status: 'finished', url: 'http://dl.test/x/', started_at: at, finished_at: at, files_seq: 0, summary: '{}', problems: '[]', units: '[]' }, nodes('5.0', MANY), 1000);
      } finally {
        await other.close();
      }
      await web.setState(ID, 'live');
    });
    after(async () => {
      await web.close();
      await db.drop();
    });

    it('reads at most SEARCH_CANDIDATES rows per query, whatever matches; a one-letter word matches whole words only', async () => {
      const database = await openPublishingDatabase(db.url);
      try {
        const repo = crawlsRepository(database.db, database.dialect);
        const all = (words: string[], product: string | null = null, category: string | null = null) => repo.searchNodes({ words, product, category }, MANY);
        assert.equal((await all(['widget'])).length, SEARCH_CANDIDATES, 'a word matching every node');
        assert.equal((await all([], ID)).length, SEARCH_CANDIDATES, 'a product listed without words');
        assert.equal((await all(['frobs'], ID)).length, SEARCH_CANDIDATES, 'words and a product');
        assert.equal((await all([], null, 'Community')).length, SEARCH_CANDIDATES, 'a category listed without words');
        // A narrower query is answered whole.
        assert.deepEqual(
          (await all(searchWords('widget 1234'))).map((h) => h.name),
          ['Widget 1234'],
        );
        assert.deepEqual(await all(['w']), [], '"w" is no prefix of every word');
        assert.equal((await all(['wi'])).length, SEARCH_CANDIDATES, 'two letters are');
      } finally {
        await database.close();
      }
    });

    it('runs in the catalog worker thread and says when more matched than it shows', async () => {
      const reads = web.service.catalogReads;
      assert.ok(reads);
      const before = reads.answered;
      const res = await fetch(`${web.url}/nodes?q=widget`);
      assert.equal(res.status, 200);
      const html = await res.text();
      assert.equal(hits(html), 100);
      assert.ok(html.includes('The first 100 nodes found; add words or a filter to narrow the search.'));
      assert.equal(reads.answered, before + 1);
    });

    it('offers filters from the catalog index, and keeps an answer until what it is built from changes', async () => {
      const database = await openPublishingDatabase(db.url);
      const calls: string[] = [];
      const real = crawlsRepository(database.db, database.dialect);
      const crawls = new Proxy(real, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver);
          return typeof v === 'function'
            ? (...args: unknown[]) => {
                calls.push(String(prop));
                return (v as (...a: unknown[]) => unknown).apply(target, args);
              }
            : v;
        },
      });
      const searched: string[] = [];
      try {
        const renderer = { render: (f: Parameters<typeof renderProductContent>[0], r: string | null, ids: readonly string[]) => Promise.resolve(renderProductContent(f, r, ids)), renderPage: () => Promise.reject(new Error('unused')), close: async () => {} };
        const pages = pagesService({ released: () => 1,
          renderer,
          repo: productsRepository(database.db, database.dialect),
          files: productFilesReader(filesRepository(database.db)),
          crawls,
          changes: databasePageChanges(database, 0),
          site: { name: 'Pier', baseUrl: 'http://pier.test', downloadUrl: 'http://dl.test' },
          searchNodes: (filter, limit) => {
            searched.push(filter.words.join(' '));
            return real.searchNodes(filter, limit);
          },
        });
        const one = await pages.nodeSearch('widget 7');
        assert.deepEqual(one.model.facets?.products, [{ id: ID, name: 'Finder' }]);
        assert.deepEqual(one.model.facets?.categories, ['Community / Group 0', 'Community / Group 1', 'Community / Group 2', 'Community / Group 3']);
        await pages.nodeSearch('widget 8');
        await pages.nodeSearch('widget 7');
        assert.deepEqual(searched, ['widget 7', 'widget 8'], 'the same query again is answered as kept');
        assert.ok(!calls.includes('searchFacets'), 'no scan of every node for the filters');
        assert.equal(calls.filter((c) => c === 'nodeCategoriesOf').length, 1, "the product's categories read once");
        // An edit of the product's text changes nothing a search shows.
        assert.equal((await patchProduct(web.url, ID, token, { description: 'new words' })).status, 200);
        await pages.nodeSearch('widget 7');
        assert.deepEqual(searched, ['widget 7', 'widget 8']);
        assert.equal(calls.filter((c) => c === 'nodeCategoriesOf').length, 1);
        // Hidden by staff: searched again, and no longer offered.
        await web.setState(ID, 'hidden');
        assert.equal((await pages.nodeSearch('widget 7')).model.facets?.products.length, 0, 'hidden: not offered');
        assert.deepEqual(searched, ['widget 7', 'widget 8', 'widget 7']);
        await web.setState(ID, 'live');
      } finally {
        await database.close();
      }
    });
  });
}

// Node search filters in SQL (issue 20): any query text, product and category a client sends is
// a bounded answer, never an error, on SQLite and PostgreSQL; a category selects itself and its
// subcategories only (compared as text: `%` and `_` are not wildcards); hidden products never show.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { type CrawlNodeRow, crawlsRepository, searchWords } from '../../../src/publishing/crawler/repository.js';
import { NODE_SANITIZER_VERSION } from '../../../src/publishing/crawler/sanitize-node.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { dialects } from '../../helpers/db.js';

const AT = '2026-01-01T00:00:00.000Z';
const CATEGORIES = ['IO', 'IO / Excel', 'IO / Excel / Legacy', 'IOX', '100% / a_b', 'Community / Ünïcode 😀'];

function node(product: string, label: string, i: number, category: string): CrawlNodeRow {
  return {
    product_id: product,
    label,
    factory_class: `com.example.${product}.N${i}NodeFactory`,
    name: `Node ${i} of ${product}`,
    product_name: product,
    bundle: 'b',
    category_path: '/',
    category_names: category,
    short_description: `Short ${i}`,
    deprecated: 0,
    data: '{}',
    icon_type: null,
    icon: null,
    sanitized: NODE_SANITIZER_VERSION,
  };
}

for (const target of dialects()) {
  describe(`node search filters on ${target.name}`, () => {
    let handle: { url: string; drop(): Promise<void> };
    let database: Awaited<ReturnType<typeof openPublishingDatabase>>;
    let repo: ReturnType<typeof crawlsRepository>;

    before(async () => {
      handle = await target.create();
      database = await openPublishingDatabase(handle.url);
      repo = crawlsRepository(database.db, database.dialect);
      for (const [id, state] of [
        ['alpha', 'live'],
        ['beta', 'live'],
        ['ghost', 'hidden'],
      ] as const) {
        await database.db
          .insertInto('products')
          .values({ id, name: id, state, fields: '{}', edit_token_hash: `h-${id}`, edit_token_id: 't', sftp_username: id, sftp_password_hash: 'x', created_at: AT, updated_at: AT })
          .execute();
        for (const label of ['5.2', '5.3']) {
          await repo.finish(
            { product_id: id, label, status: 'finished', url: `http://dl.test/${id}/${label}/`, started_at: AT, finished_at: AT, files_seq: 0, summary: '{}', problems: '[]', units: '[]' },
            CATEGORIES.map((c, i) => node(id, label, i, c)),
          );
        }
      }
    });
    after(async () => {
      await database?.close();
      await handle?.drop();
    });

    const search = (q: string, product: string | null, category: string | null) => repo.searchNodes({ words: searchWords(q), product, category }, 50);

    test('a labels filter (the "works with" release) selects exactly those labels of those products, live ones only', async () => {
      const pairs = async (labels: { product: string; label: string }[], q = '') =>
        [...new Set((await repo.searchNodes({ words: searchWords(q), product: null, category: null, labels }, 500)).map((h) => `${h.product_id}@${h.label}`))].sort();
      assert.deepEqual(await pairs([{ product: 'alpha', label: '5.3' }]), ['alpha@5.3']);
      assert.deepEqual(await pairs([{ product: 'alpha', label: '5.2' }, { product: 'beta', label: '5.3' }]), ['alpha@5.2', 'beta@5.3']);
      assert.deepEqual(await pairs([{ product: 'alpha', label: '5.2' }, { product: 'beta', label: '5.3' }], 'node 3'), ['alpha@5.2', 'beta@5.3']);
      assert.deepEqual(await pairs([{ product: 'ghost', label: '5.3' }]), [], 'hidden products are never listed');
      assert.deepEqual(await pairs([]), [], 'no label fits: nothing');
      assert.deepEqual(await pairs([{ product: "alpha' OR 1=1 --", label: '5.3' }, { product: 'alpha', label: "5.3'" }]), [], 'values are bound, not SQL');
    });

    test('a category selects itself and what is below it, as text; a product filter selects that product', async () => {
      const cats = async (category: string, product: string | null = null) => [...new Set((await search('', product, category)).map((h) => h.category_names))].sort();
      assert.deepEqual(await cats('IO'), ['IO', 'IO / Excel', 'IO / Excel / Legacy']);
      assert.deepEqual(await cats('IO / Excel'), ['IO / Excel', 'IO / Excel / Legacy']);
      assert.deepEqual(await cats('IO / Ex'), [], 'a prefix of a name is not the category');
      assert.deepEqual(await cats('100% / a_b'), ['100% / a_b']);
      assert.deepEqual(await cats('1__% / a%b'), [], '% and _ are plain characters');
      assert.deepEqual(await cats('Community / Ünïcode 😀'), ['Community / Ünïcode 😀']);
      assert.deepEqual(new Set((await search('', 'beta', null)).map((h) => h.product_id)), new Set(['beta']));
      assert.deepEqual(await search('', 'ghost', null), [], 'hidden products are never listed');
      assert.deepEqual(await search('node', 'ghost', 'IO'), []);
      assert.deepEqual(
        (await search('node 3', 'alpha', 'IOX')).map((h) => [h.product_id, h.category_names]),
        [
          ['alpha', 'IOX'],
          ['alpha', 'IOX'],
        ],
        'words and both filters together (one row per label)',
      );
      const facets = await repo.searchFacets();
      assert.deepEqual(facets.products.map((p) => p.id).sort(), ['alpha', 'beta']);
      assert.deepEqual([...facets.categories].sort(), [...CATEGORIES].sort());
    });

    test('any text as query, product and category: an answer within the limit, matching both filters, never an error', async () => {
      // Strings as a client can send them after URL decoding, minus NUL (refused by every route).
      const text = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 20 }), fc.constantFrom(...CATEGORIES, 'alpha', "' OR 1=1 --", '%', '_', '\\', '"*', 'NEAR(')).map((s) => s.replace(/\0/g, ''));
      await fc.assert(
        fc.asyncProperty(text, fc.option(text, { nil: null }), fc.option(text, { nil: null }), async (q, product, category) => {
          const hits = await search(q, product || null, category || null);
          assert.ok(hits.length <= 50);
          for (const h of hits) {
            assert.notEqual(h.product_id, 'ghost');
            if (product) assert.equal(h.product_id, product);
            if (category) assert.ok(h.category_names === category || h.category_names.startsWith(`${category} / `), `${h.category_names} for ${category}`);
          }
        }),
        { numRuns: 150 },
      );
    });
  });
}

// Node search filters in SQL: any query text, product and category a client sends is
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
        [['alpha', 'IOX']],
        'words and both filters together (one hit per node, not one per label)',
      );
      assert.deepEqual(
        (await search('node 3', 'alpha', 'IOX')).map((h) => h.label),
        ['5.3'],
        'the copy in the highest label',
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

// A product with many labels carrying the same nodes (adversarial review): every label's copy is a
// row, yet each node is one hit and the limit counts distinct nodes, so that product neither hides
// its own nodes behind duplicates nor crowds out another vendor's.
for (const target of dialects()) {
  describe(`node search over many labels on ${target.name}`, () => {
    let handle: { url: string; drop(): Promise<void> };
    let database: Awaited<ReturnType<typeof openPublishingDatabase>>;
    let repo: ReturnType<typeof crawlsRepository>;
    // Zero-padded: "highest label" is text order in SQL.
    const LABELS = Array.from({ length: 20 }, (_, i) => `v${String(i + 1).padStart(2, '0')}`);
    const TOP = 'v20';

    before(async () => {
      handle = await target.create();
      database = await openPublishingDatabase(handle.url);
      repo = crawlsRepository(database.db, database.dialect);
      for (const id of ['many', 'other']) {
        await database.db
          .insertInto('products')
          .values({ id, name: id, state: 'live', fields: '{}', edit_token_hash: `h-${id}`, edit_token_id: 't', sftp_username: id, sftp_password_hash: 'x', created_at: AT, updated_at: AT })
          .execute();
      }
      const run = (product_id: string, label: string) => ({
        product_id,
        label,
        status: 'finished' as const,
        url: `http://dl.test/${product_id}/${label}/`,
        started_at: AT,
        finished_at: AT,
        files_seq: 0,
        summary: '{}',
        problems: '[]',
        units: '[]',
      });
      // 20 labels × the same 50 nodes, each label's copy telling its label.
      for (const label of LABELS) {
        await repo.finish(
          run('many', label),
          Array.from({ length: 50 }, (_, i) => ({ ...node('many', label, i, 'IO'), name: `Widget ${i}`, short_description: `Copy in ${label}` })),
        );
      }
      // Another vendor's 10 nodes in two labels, matching the word better (named by it twice).
      for (const label of ['1.0', '2.0']) {
        await repo.finish(
          run('other', label),
          Array.from({ length: 10 }, (_, i) => ({ ...node('other', label, i, 'IO'), name: `Widget widget ${i}`, short_description: `Copy in ${label}` })),
        );
      }
    });
    after(async () => {
      await database?.close();
      await handle?.drop();
    });

    const key = (h: { product_id: string; factory_class: string }) => `${h.product_id} ${h.factory_class}`;

    test('a query matching every copy: each node once, in its highest label, ranked, all 60 within the limit', async () => {
      const hits = await repo.searchNodes({ words: searchWords('widget'), product: null, category: null }, 101);
      assert.equal(hits.length, 60, 'every distinct node of both products');
      assert.equal(new Set(hits.map(key)).size, 60, 'each node once');
      for (const h of hits) assert.equal(h.label, h.product_id === 'many' ? TOP : '2.0', `${key(h)} in its highest label`);
      for (const h of hits) assert.equal(h.short_description, `Copy in ${h.label}`, 'the columns of that copy');
      assert.deepEqual(
        hits.slice(0, 10).map((h) => h.product_id),
        Array(10).fill('other'),
        'best match first (the word twice)',
      );
    });

    test('the limit counts distinct nodes, and a smaller limit is the start of the same ranking', async () => {
      const all = (await repo.searchNodes({ words: searchWords('widget'), product: null, category: null }, 101)).map(key);
      for (const limit of [1, 21, 50, 55, 60, 61]) {
        const hits = await repo.searchNodes({ words: searchWords('widget'), product: null, category: null }, limit);
        assert.equal(hits.length, Math.min(limit, 60), `limit ${limit}`);
        assert.deepEqual(hits.map(key), all.slice(0, limit), `limit ${limit}`);
      }
      // Without words (a filter alone): by name, one hit per node as well.
      const listed = await repo.searchNodes({ words: [], product: 'many', category: null }, 51);
      assert.equal(listed.length, 50);
      assert.equal(new Set(listed.map(key)).size, 50);
      assert.ok(listed.every((h) => h.label === TOP));
    });

    test('label filters apply before the dedupe: the highest label among those allowed', async () => {
      const except = LABELS.filter((l) => l > 'v07').map((label) => ({ product: 'many', label }));
      const hits = await repo.searchNodes({ words: searchWords('widget'), product: 'many', category: null, exceptLabels: except }, 101);
      assert.equal(hits.length, 50);
      assert.ok(hits.every((h) => h.label === 'v07'), 'withdrawn labels left out first');
      const only = await repo.searchNodes({ words: searchWords('widget'), product: null, category: null, labels: [{ product: 'many', label: 'v03' }, { product: 'many', label: 'v05' }, { product: 'other', label: '1.0' }] }, 101);
      assert.equal(only.length, 60);
      assert.ok(only.every((h) => h.label === (h.product_id === 'many' ? 'v05' : '1.0')));
    });
  });
}

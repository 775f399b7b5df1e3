// The pure parts of the node catalog (web/node-presenter.ts): which labels changed a node's
// description, which node replaces a deprecated one, the vendor a card names, search links.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { baseNodeName, descriptionChangedIn, iconSizeOf, nodeSearchHref, replacementFor, vendorOf } from '../../../src/publishing/web/node-presenter.js';
import { checkerPng } from './node-catalog-fixtures.js';

const row = (label: string, intro: string, name = 'N', category = 'A') => ({ label, name, category_names: category, data: JSON.stringify({ description: { intro } }) });

test('description changes: compared in version order (5.10 after 5.9), the first label is not a change', () => {
  assert.deepEqual(descriptionChangedIn([row('5.10', 'b'), row('5.9', 'a'), row('5.2', 'a')]), ['5.10']);
  assert.deepEqual(descriptionChangedIn([row('5.3', 'a'), row('5.2', 'a')]), []);
  assert.deepEqual(descriptionChangedIn([row('5.2', 'a'), row('5.3', 'a', 'Renamed'), row('5.4', 'a', 'Renamed', 'B')]), ['5.3', '5.4']);
  assert.deepEqual(descriptionChangedIn([row('5.2', 'a')]), []);
});

test('a replacement is a current node of the same name without the deprecation mark', () => {
  const nodes = [
    { name: 'Excel Writer', url: '/n/new', deprecated: false },
    { name: 'Excel Writer (deprecated)', url: '/n/old', deprecated: true },
    { name: 'Row Filter (legacy)', url: '/n/rf', deprecated: true },
  ];
  assert.deepEqual(replacementFor({ name: 'Excel Writer (deprecated)', url: '/n/old' }, nodes), { name: 'Excel Writer', url: '/n/new' });
  assert.equal(replacementFor({ name: 'Row Filter (legacy)', url: '/n/rf' }, nodes), null, 'no current node of that name');
  assert.equal(baseNodeName('CSV Reader (Legacy) '), 'csv reader');
});

test('vendor: the most frequent feature provider; unresolved %keys and non-features are not names', () => {
  const units = (xs: { kind: string; provider: string | null }[]) => JSON.stringify(xs);
  assert.equal(vendorOf(units([{ kind: 'feature', provider: 'A' }, { kind: 'feature', provider: 'B' }, { kind: 'feature', provider: 'B' }, { kind: 'bundle', provider: 'C' }])), 'B');
  assert.equal(vendorOf(units([{ kind: 'feature', provider: '%providerName' }, { kind: 'bundle', provider: 'C' }])), null);
  assert.equal(vendorOf('not json'), null);
  assert.equal(vendorOf('{"a":1}'), null);
  fc.assert(fc.property(fc.string(), (s) => vendorOf(s) === null || typeof vendorOf(s) === 'string'));
});

test('icon sizes: PNG headers read from the stored base64; SVG and huge claims drawn at the fallback', () => {
  assert.deepEqual(iconSizeOf({ icon: checkerPng(16).toString('base64'), icon_type: 'image/png' }), { width: 16, height: 16 });
  assert.deepEqual(iconSizeOf({ icon: checkerPng(32).toString('base64'), icon_type: 'image/png' }), { width: 32, height: 32 });
  assert.equal(iconSizeOf({ icon: checkerPng(100).toString('base64'), icon_type: 'image/png' }), null);
  assert.equal(iconSizeOf({ icon: Buffer.from('<svg/>').toString('base64'), icon_type: 'image/svg+xml' }), null);
  assert.equal(iconSizeOf({ icon: null, icon_type: null }), null);
});

test('search links carry exactly the filters given, encoded', () => {
  assert.equal(nodeSearchHref({}), '/nodes');
  assert.equal(nodeSearchHref({ product: 'excel', category: 'IO / Excel' }), '/nodes?product=excel&category=IO+%2F+Excel');
  fc.assert(
    fc.property(fc.string(), fc.string(), (product, category) => {
      const u = new URL(nodeSearchHref({ product, category }), 'http://x');
      assert.equal(u.searchParams.get('product') ?? '', product);
      assert.equal(u.searchParams.get('category') ?? '', category);
    }),
  );
});

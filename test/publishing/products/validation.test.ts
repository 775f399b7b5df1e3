import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { applyPatch, isHexColor, isHttpUrl, validatePatch } from '../../../src/publishing/products/patch-validation.js';
import { productIdProblem, RESERVED_IDS } from '../../../src/publishing/products/slug.js';

const slug = fc
  .array(fc.stringMatching(/^[a-z0-9]{1,8}$/), { minLength: 1, maxLength: 6 })
  .map((parts) => parts.join('-'))
  .filter((s) => s.length >= 2 && s.length <= 64 && !RESERVED_IDS.has(s));

test('product IDs: every generated slug is accepted', () => {
  fc.assert(fc.property(slug, (s) => productIdProblem(s) === null));
});

test('product IDs: anything with other characters, bad hyphens or bad length is refused', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 80 }), (s) => {
      const ok = /^[a-z0-9]+(-[a-z0-9]+)*$/.test(s) && s.length >= 2 && s.length <= 64 && !RESERVED_IDS.has(s);
      return (productIdProblem(s) === null) === ok;
    }),
    { numRuns: 2000 },
  );
  for (const r of ['api', 'assets', 'workflows', 'product', 'products', 'nodes', 'static']) {
    assert.match(String(productIdProblem(r)), /reserved/);
  }
});

test('colors are #rgb or #rrggbb only', () => {
  for (const ok of ['#abc', '#ABC', '#a1b2c3']) assert.ok(isHexColor(ok), ok);
  for (const bad of ['abc', '#abcd', '#ggg', 'red', '#a1b2c3d4', ' #abc', '#abc\n']) assert.ok(!isHexColor(bad), bad);
  fc.assert(fc.property(fc.string(), (s) => isHexColor(s) === /^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(s)));
});

test('URLs must be absolute http(s)', () => {
  for (const ok of ['https://a.example/x.png', 'http://localhost:8081/assets/p/bg.png']) assert.ok(isHttpUrl(ok), ok);
  for (const bad of ['/x.png', 'x.png', 'javascript:alert(1)', 'data:image/png;base64,AA', 'ftp://a.example', 'https://', 'https://a.example/ x']) {
    assert.ok(!isHttpUrl(bad), bad);
  }
});

test('validatePatch never throws and is total on typed input', () => {
  const str = fc.oneof(fc.string(), fc.constantFrom('', ' ', '#fff', 'https://x.example', '<svg/>', '# A\n## [1.0.0] - 2024-01-01\n- x'));
  const patch = fc.record(
    {
      name: fc.option(str, { nil: null }),
      description: fc.option(str, { nil: null }),
      changelog: fc.option(str, { nil: null }),
      faq: fc.option(str, { nil: null }),
      icon: fc.option(str, { nil: null }),
      iconBase64: fc.option(str, { nil: null }),
      style: fc.option(fc.record({ color1: str, color2: str, backgroundImageUrl: str, badgeColor: str }, { requiredKeys: [] }), { nil: null }),
      contact: fc.option(fc.record({ name: str, email: str }), { nil: null }),
    },
    { requiredKeys: [] },
  );
  fc.assert(
    fc.property(patch, (p) => {
      const r = validatePatch(p);
      if (r.ok) {
        const next = applyPatch({ name: 'Base' }, r.value);
        assert.ok(next.name.trim().length > 0, 'name never empty');
        assert.ok(!(next.icon && next.iconBase64), 'never two icons');
      } else {
        assert.ok(r.errors.length > 0 && r.errors.every((e) => typeof e.field === 'string' && e.message.length > 0));
      }
    }),
    { numRuns: 500 },
  );
});

test('style replaced wholesale and nulls remove fields', () => {
  const r = validatePatch({ style: { color1: '#ABCDEF' }, license: null });
  assert.ok(r.ok);
  const next = applyPatch({ name: 'N', license: 'L', style: { color1: '#000', backgroundImageUrl: 'https://x.example/a.png', badgeColor: '#fff' } }, r.value);
  assert.deepEqual(next, { name: 'N', style: { color1: '#abcdef' } });
});

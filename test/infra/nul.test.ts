import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { nulFieldIn, unstorableText } from '../../src/infra/nul.js';

const withNul = fc.oneof(fc.string({ unit: 'binary', maxLength: 6 }), fc.constantFrom('\u0000', 'a\u0000', 'ok', '\ud800', 'x\udc00', '\ud83d\ude00'));
// Keys without the path separator or a backslash, so the reported path can be walked back.
const key = withNul.filter((k) => !k.includes('.') && !k.includes('\\'));
const value = fc.letrec((tie) => ({
  v: fc.oneof({ depthSize: 'small' }, withNul, fc.integer(), fc.boolean(), fc.constant(null), fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(key, tie('v'), { maxKeys: 3 })),
})).v;

test('property: nulFieldIn finds a NUL or an unpaired surrogate exactly when one is in a string or key, and names where', () => {
  fc.assert(
    fc.property(value, (v) => {
      const found = nulFieldIn(v, ['root']);
      // JSON.stringify writes NUL and unpaired surrogates (only those) as escapes.
      const hasNul = /\\u(0000|d[89a-f])/.test(JSON.stringify(v));
      assert.equal(found !== null, hasNul, JSON.stringify(v));
      if (!found) return;
      // Walk the named path: it ends at a string holding NUL, or at a key holding one.
      let at: unknown = { root: v };
      for (const seg of found.split('.')) {
        const key = Object.keys(at as object).find((k) => k.replaceAll('\u0000', '\\u0000').replace(/[\uD800-\uDFFF]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`) === seg);
        assert.ok(key !== undefined, `${found} in ${JSON.stringify(v)}`);
        if (unstorableText(key)) return;
        at = (at as Record<string, unknown>)[key];
      }
      assert.ok(typeof at === 'string' && unstorableText(at), found);
    }),
    { numRuns: 500 },
  );
});

test('allowed paths are skipped, with * for any one segment', () => {
  const body = { chunks: [{ text: 'a\u0000' }, { text: 'b' }], error: 'e\u0000' };
  assert.equal(nulFieldIn(body), 'chunks.0.text');
  assert.equal(nulFieldIn(body, [], [['chunks', '*', 'text']]), 'error');
  assert.equal(nulFieldIn(body, [], [['chunks', '*', 'text'], ['error']]), null);
  assert.equal(nulFieldIn('\u0000'), '(body)');
});

test('unpaired surrogates are unstorable, pairs are text', () => {
  assert.equal(unstorableText('\ud83d\ude00'), false);
  assert.equal(unstorableText('a\ud83d'), true);
  assert.equal(unstorableText('\ude00b'), true);
  assert.equal(unstorableText('\ude00\ud83d'), true);
  assert.equal(unstorableText('plain'), false);
});

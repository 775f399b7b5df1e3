import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { nulFieldIn } from '../../src/infra/nul.js';

const withNul = fc.oneof(fc.string({ unit: 'binary', maxLength: 6 }), fc.constantFrom('\u0000', 'a\u0000', 'ok'));
// Keys without the path separator or a backslash, so the reported path can be walked back.
const key = withNul.filter((k) => !k.includes('.') && !k.includes('\\'));
const value = fc.letrec((tie) => ({
  v: fc.oneof({ depthSize: 'small' }, withNul, fc.integer(), fc.boolean(), fc.constant(null), fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(key, tie('v'), { maxKeys: 3 })),
})).v;

test('property: nulFieldIn finds a NUL exactly when one is in a string or key, and names where', () => {
  fc.assert(
    fc.property(value, (v) => {
      const found = nulFieldIn(v, ['root']);
      const hasNul = JSON.stringify(v).includes('\\u0000');
      assert.equal(found !== null, hasNul, JSON.stringify(v));
      if (!found) return;
      // Walk the named path: it ends at a string holding NUL, or at a key holding one.
      let at: unknown = { root: v };
      for (const seg of found.split('.')) {
        const key = Object.keys(at as object).find((k) => k.replaceAll('\u0000', '\\u0000') === seg);
        assert.ok(key !== undefined, `${found} in ${JSON.stringify(v)}`);
        if (key.includes('\u0000')) return;
        at = (at as Record<string, unknown>)[key];
      }
      assert.ok(typeof at === 'string' && at.includes('\u0000'), found);
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

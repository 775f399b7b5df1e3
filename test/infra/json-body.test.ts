/**
 * JSON bodies (infra/http.ts parseJsonBody): a key that names prototype machinery is refused
 * wherever it is, with the path to it as the field (so a route's "errors name their field" holds
 * for it too); everything else parses as JSON.parse reads it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { parseJsonBody } from '../../src/infra/http.js';

const FORBIDDEN = ['__proto__', 'constructor', 'prototype'];
const safeKey = fc.string({ maxLength: 8 }).filter((k) => !FORBIDDEN.includes(k) && !k.includes('.'));

/** Builds `{k1: {k2: … {forbidden: value}}}` as JSON text, since an object literal would not keep `__proto__`. */
function nested(path: string[], forbidden: string, value: unknown): string {
  let text = `{${JSON.stringify(forbidden)}:${JSON.stringify(value)}}`;
  for (const k of [...path].reverse()) text = `{${JSON.stringify(k)}:${text}}`;
  return text;
}

test('a forbidden key at any depth is refused, naming its path', () => {
  fc.assert(
    fc.property(fc.array(safeKey, { maxLength: 5 }), fc.constantFrom(...FORBIDDEN), fc.jsonValue(), (path, key, value) => {
      const field = [...path, key].join('.');
      assert.throws(
        () => parseJsonBody(nested(path, key, value)),
        (e: { status?: number; errors?: { field: string }[] }) => e.status === 400 && e.errors?.[0]?.field === field,
      );
    }),
  );
});

test('bodies without forbidden keys parse as JSON.parse reads them', () => {
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      const text = JSON.stringify(v);
      if (FORBIDDEN.some((k) => text.includes(`"${k}"`))) return;
      assert.deepEqual(parseJsonBody(text), JSON.parse(text));
    }),
  );
});

test('the labels key of a product body: the field is labels.__proto__', () => {
  assert.throws(
    () => parseJsonBody('{"labels":{"__proto__":0}}'),
    (e: { errors?: { field: string }[] }) => e.errors?.[0]?.field === 'labels.__proto__',
  );
});

test('a body nested a hundred thousand deep is walked without overflowing the stack', () => {
  const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(deep);
  } catch {
    return; // this engine refuses the nesting itself: nothing to walk
  }
  assert.ok(Array.isArray(parsed));
  assert.ok(Array.isArray(parseJsonBody(deep)));
});

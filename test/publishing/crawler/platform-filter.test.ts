import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { describePlatformFilter, FilterSyntaxError, type LdapFilter, parseLdapFilter, unionPlatforms } from '../../../src/publishing/crawler/platform-filter.js';

test('platform filters as P2 writes them read as platforms a person recognises', () => {
  assert.deepEqual(describePlatformFilter('(& (osgi.os=linux) (osgi.arch=x86_64))'), ['Linux x86_64']);
  assert.deepEqual(describePlatformFilter('(osgi.os=win32)'), ['Windows']);
  assert.deepEqual(describePlatformFilter('(&(osgi.os=win32)(osgi.ws=win32)(osgi.arch=x86_64))'), ['Windows x86_64 (win32)']);
  assert.deepEqual(describePlatformFilter('(| (& (osgi.os=linux) (osgi.arch=x86_64)) (& (osgi.os=macosx) (osgi.arch=aarch64)))'), ['Linux x86_64', 'macOS aarch64']);
  assert.deepEqual(describePlatformFilter('(& (osgi.os=macosx) (| (osgi.arch=x86_64) (osgi.arch=aarch64)))'), ['macOS x86_64', 'macOS aarch64']);
  assert.deepEqual(describePlatformFilter('(osgi.arch=aarch64)'), ['any OS aarch64']);
  // Not platform filters: every platform.
  assert.equal(describePlatformFilter(null), null);
  assert.equal(describePlatformFilter('(org.eclipse.update.install.features=true)'), null);
  // Platform filters this reader cannot list are shown as written, never dropped.
  assert.deepEqual(describePlatformFilter('(!(osgi.os=win32))'), ['(!(osgi.os=win32))']);
  assert.deepEqual(describePlatformFilter('(& (osgi.os=linux'), ['(& (osgi.os=linux']);
});

test('contradictory conjunctions list no platform twice and clash-free combinations only', () => {
  assert.deepEqual(describePlatformFilter('(& (| (osgi.os=linux) (osgi.os=win32)) (osgi.os=linux))'), ['Linux']);
});

test('a node held by several filtered plug-ins is on the union of their platforms; any unfiltered copy means every platform', () => {
  assert.deepEqual(unionPlatforms(['Linux x86_64'], ['macOS aarch64', 'Linux x86_64']), ['Linux x86_64', 'macOS aarch64']);
  assert.equal(unionPlatforms(['Linux x86_64'], null), null);
  assert.equal(unionPlatforms(null, ['Windows']), null);
});

const attr = fc.constantFrom('osgi.os', 'osgi.arch', 'osgi.ws', 'osgi.nl', 'x.y');
const value = fc.stringMatching(/^[a-z0-9_]{1,8}$/);
const filterArb: fc.Arbitrary<LdapFilter> = fc.letrec<{ f: LdapFilter }>((tie) => ({
  f: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ op: fc.constant('eq' as const), attr, value }),
    fc.record({ op: fc.constantFrom('&' as const, '|' as const), items: fc.array(tie('f'), { minLength: 1, maxLength: 3 }) }),
    fc.record({ op: fc.constant('!' as const), item: tie('f') }),
  ),
})).f;

function write(f: LdapFilter, space: boolean): string {
  const s = space ? ' ' : '';
  switch (f.op) {
    case 'eq':
      return `(${f.attr}=${f.value})`;
    case '!':
      return `(!${s}${write(f.item, space)})`;
    case '&':
    case '|':
      return `(${f.op}${f.items.map((i) => `${s}${write(i, space)}`).join('')})`;
    default:
      return `(${f.text})`;
  }
}

test('property: every filter written out parses back to itself, with or without spaces', () => {
  fc.assert(
    fc.property(filterArb, fc.boolean(), (f, space) => {
      // fast-check's records have no prototype; compare plain data.
      assert.deepEqual(parseLdapFilter(write(f, space)), JSON.parse(JSON.stringify(f)));
    }),
  );
});

test('property: any text either parses or fails with FilterSyntaxError, and describing it never throws', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string({ maxLength: 60 }), fc.stringMatching(/^[()&|!= a-z.\\]{0,60}$/)), (text) => {
      try {
        parseLdapFilter(text);
      } catch (e) {
        assert.ok(e instanceof FilterSyntaxError, String(e));
      }
      const d = describePlatformFilter(text);
      assert.ok(d === null || (Array.isArray(d) && d.length > 0));
    }),
  );
});

test('hostile filters are bounded: deep nesting and huge inputs are refused, not recursed into', () => {
  assert.throws(() => parseLdapFilter(`${'(!'.repeat(5000)}(osgi.os=linux)${')'.repeat(5000)}`), FilterSyntaxError);
  assert.throws(() => parseLdapFilter(`(osgi.os=${'a'.repeat(10_000)})`), FilterSyntaxError);
  // A wide disjunction of combinations is shown as written rather than multiplied out.
  const wide = `(& ${Array.from({ length: 8 }, () => '(| (osgi.os=linux) (osgi.os=win32) (osgi.arch=x86_64))').join(' ')})`;
  const d = describePlatformFilter(wide);
  assert.ok(d && d.length <= 32);
});

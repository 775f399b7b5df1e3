import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { type DeclaredParameter, fitsDeclared, parameterOfSettings, parameterProblems } from '../../src/runner/workflows/declared-parameters.js';
import { INTEGER_RANGES, integerValue, numberValue } from '../../src/runner/workflows/declared-values.js';
import { isDeclaredParameter } from '../../src/runner/workflows/isolated-declared.js';
import { nodeSettings } from './helpers.js';

const INT = INTEGER_RANGES.xint;
const SHORT = INTEGER_RANGES.xshort;
const LONG = INTEGER_RANGES.xlong;
const declared = (type: DeclaredParameter['type'], extra: Partial<DeclaredParameter> = {}): DeclaredParameter => ({ name: 'p', type, default: null, label: '', description: '', ...extra });
const integerOf = (entry: string, value: string) =>
  parameterOfSettings(nodeSettings('org.knime.js.base.node.configuration.input.integer.IntegerDialogNodeFactory', `<entry key="parameterName" type="xstring" value="p"/><config key="defaultValue"><entry key="v" type="${entry}" value="${value}"/></config>`));
/** Prefixes Java's parseInt/parseDouble do not take (JavaScript's Number does). */
const prefixed = fc.tuple(fc.constantFrom('', '-', '+'), fc.constantFrom('0x', '0X', '0b', '0B', '0o', '0O'), fc.stringMatching(/^[0-9a-fA-F]{1,12}$/)).map(([s, p, d]) => `${s}${p}${d}`);

describe('declared values are read as the platform reads them: decimal, within the Java type', () => {
  test('each integer entry type keeps its range; defaults out of it are no default', () => {
    assert.deepEqual(
      ['xint', 'xshort', 'xlong'].map((t) => {
        const p = integerOf(t, '7');
        return [p?.type, p?.minimum, p?.maximum, p?.default];
      }),
      [
        ['integer', INT.minimum, INT.maximum, 7],
        ['integer', SHORT.minimum, SHORT.maximum, 7],
        ['integer', LONG.minimum, LONG.maximum, 7],
      ],
    );
    assert.equal(integerOf('xint', '99999999999')?.default, null);
    assert.equal(integerOf('xshort', '40000')?.default, null);
    assert.equal(integerOf('xint', '0x10')?.default, null);
    assert.equal(integerOf('xdouble', 'NaN')?.default, null);
    assert.equal(integerOf('xdouble', '0x10')?.default, null);
    assert.deepEqual([integerOf('xdouble', '2.5')?.default, integerOf('xdouble', '2.5')?.maximum], [2.5, undefined]);
    assert.equal(integerOf('xfloat', '1e39')?.default, null);
  });

  test('the API check names the parameter and the range; hex, binary, octal, Infinity and NaN are refused', () => {
    const rows = declared('integer', { minimum: INT.minimum, maximum: INT.maximum });
    const ratio = declared('number', { name: 'ratio' });
    const problems = parameterProblems([{ ...rows, name: 'rows' }, ratio], { rows: 99999999999, ratio: '0x10' });
    assert.deepEqual(problems, [
      { field: 'parameters/rows', message: "must be an integer from -2147483648 to 2147483647 (decimal digits), as the workflow's configuration node declares" },
      { field: 'parameters/ratio', message: "must be a finite decimal number, as the workflow's configuration node declares" },
    ]);
    for (const v of ['0b1', '0o7', 'Infinity', '-Infinity', 'NaN', ' 1', '1 ', '', '1_000', '1e400', '0x10p0']) assert.equal(fitsDeclared(ratio, v), false, v);
    for (const v of ['0x10', '0b1', '0o7', '1e3', '1.0', ' 1', '2147483648', '-2147483649', 2147483648, 1.5]) assert.equal(fitsDeclared(rows, v), false, String(v));
    for (const v of ['-2147483648', '2147483647', '+5', '007', 2147483647, -2147483648]) assert.equal(fitsDeclared(rows, v), true, String(v));
    for (const v of ['1.5', '.5', '5.', '-1e-3', '+2E10', 0.25]) assert.equal(fitsDeclared(ratio, v), true, String(v));
  });

  test('versions stored before ranges were kept: an integer is held to a long within ±(2^53−1)', () => {
    const old = declared('integer');
    assert.equal(fitsDeclared(old, Number.MAX_SAFE_INTEGER), true);
    assert.equal(fitsDeclared(old, '9007199254740991'), true);
    assert.equal(fitsDeclared(old, '9007199254740992'), false);
    assert.equal(fitsDeclared(old, 2 ** 60), false);
    assert.match(parameterProblems([old], { p: '0x10' })[0]?.message ?? '', /from -9007199254740991 to 9007199254740991/);
  });

  test('property: every integer in a type\'s range is accepted, as a number and as digits, and round-trips', () => {
    for (const range of [INT, SHORT, LONG]) {
      fc.assert(
        fc.property(fc.integer({ min: range.minimum, max: range.maximum }), (n) => {
          assert.equal(integerValue(n, range), n);
          assert.equal(integerValue(String(n), range), n);
          assert.equal(integerValue(`0${String(Math.abs(n))}`, range), Math.abs(n) <= range.maximum ? Math.abs(n) : null);
        }),
        { numRuns: 300 },
      );
    }
  });

  test('property: every integer out of a type\'s range is refused, as a number and as digits', () => {
    for (const range of [INT, SHORT, LONG]) {
      const outside = fc.oneof(fc.bigInt({ min: BigInt(range.maximum) + 1n, max: 2n ** 70n }), fc.bigInt({ min: -(2n ** 70n), max: BigInt(range.minimum) - 1n }));
      fc.assert(
        fc.property(outside, (n) => {
          assert.equal(integerValue(n.toString(), range), null);
          assert.equal(integerValue(Number(n), range), null);
        }),
        { numRuns: 300 },
      );
    }
  });

  test('property: a 0x/0b/0o prefix, Infinity or NaN is refused for integers and doubles alike', () => {
    fc.assert(
      fc.property(fc.oneof(prefixed, fc.constantFrom('Infinity', '-Infinity', '+Infinity', 'NaN')), (s) => {
        assert.equal(integerValue(s, LONG), null, s);
        assert.equal(numberValue(s), null, s);
      }),
      { numRuns: 500 },
    );
    assert.equal(numberValue(Number.POSITIVE_INFINITY), null);
    assert.equal(numberValue(Number.NaN), null);
  });

  test('property: every finite double round-trips through its decimal text; any string is a value or null, never an exception', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (x) => {
        assert.equal(numberValue(x), x);
        assert.ok(Object.is(numberValue(String(x)), x) || (x === 0 && numberValue(String(x)) === 0), String(x));
      }),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (s) => {
        const n = numberValue(s);
        assert.ok(n === null || Number.isFinite(n));
        const i = integerValue(s, LONG);
        assert.ok(i === null || Number.isSafeInteger(i));
      }),
      { numRuns: 500 },
    );
  });

  test('what the parse worker posts: ranges only on numbers, finite, in order, holding the default', () => {
    const base = { name: 'rows', type: 'integer', default: 7, label: '', description: '' };
    assert.equal(isDeclaredParameter({ ...base, minimum: INT.minimum, maximum: INT.maximum }), true);
    assert.equal(isDeclaredParameter(base), true);
    assert.equal(isDeclaredParameter({ ...base, minimum: 10, maximum: 1 }), false);
    assert.equal(isDeclaredParameter({ ...base, minimum: 0, maximum: 5 }), false);
    assert.equal(isDeclaredParameter({ ...base, minimum: '0', maximum: 5 }), false);
    assert.equal(isDeclaredParameter({ ...base, minimum: 0, maximum: Number.POSITIVE_INFINITY }), false);
    assert.equal(isDeclaredParameter({ ...base, type: 'string', default: 'x', minimum: 0, maximum: 5 }), false);
    assert.equal(isDeclaredParameter({ ...base, bits: 32 }), false);
  });
});

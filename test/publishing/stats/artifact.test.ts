import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { ValidationError } from '../../../src/infra/errors.js';
import { ARCHIVE, countKey, countKeyOf, featureIdOf, splitCountKey } from '../../../src/publishing/stats/artifact.js';
import { formatDay, parseDay } from '../../../src/publishing/stats/days.js';
import { MAX_DAYS, statsRange } from '../../../src/publishing/stats/service.js';

const alnum = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789');
const tokenRest = fc.array(fc.oneof(alnum, fc.constantFrom('_', '-')), { maxLength: 12 }).map((a) => a.join(''));
/** A symbolic name as real features have them: dot-separated tokens that start with a letter. */
const featureId = fc
  .array(
    fc.tuple(fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'), tokenRest).map(([a, b]) => a + b),
    { minLength: 1, maxLength: 6 },
  )
  .map((t) => t.join('.'));
const qualifier = fc.array(fc.oneof(alnum, fc.constantFrom('_', '-')), { minLength: 1, maxLength: 20 }).map((a) => a.join(''));
const version = fc
  .tuple(fc.nat(9999), fc.nat(9999), fc.nat(9999), fc.option(qualifier, { nil: undefined }))
  .map(([a, b, c, q]) => `${a}.${b}.${c}${q === undefined ? '' : `.${q}`}`);

describe('feature id of a feature jar name', () => {
  test('real names from update sites', () => {
    // Names as they appear in KNIME update sites' features/ folders (knime/knime-python, knime/knime-base content.xml).
    assert.equal(featureIdOf('org.knime.features.python3.scripting_5.3.0.v202406051255.jar'), 'org.knime.features.python3.scripting');
    assert.equal(featureIdOf('org.knime.features.base_5.4.0.v202412031057.jar'), 'org.knime.features.base');
    assert.equal(featureIdOf('com.example.my_feature_1.0.0.jar'), 'com.example.my_feature');
    assert.equal(featureIdOf('a_b_2.0.0.v2024_01-x.jar'), 'a_b');
    for (const bad of ['content.jar', 'artifacts.jar', 'x_1.0.jar', 'x_1.0.0.zip', '_1.0.0.jar', 'x_1.0.0.jar.part', 'x y_1.0.0.jar', 'x_1.0.0..jar', '']) {
      assert.equal(featureIdOf(bad), null, bad);
    }
  });

  test('property: <id>_<version>.jar gives back the id, for every id and version', () => {
    fc.assert(
      fc.property(featureId, version, (id, v) => {
        assert.equal(featureIdOf(`${id}_${v}.jar`), id);
      }),
      { numRuns: 2000 },
    );
  });

  test('property: any name either is no feature jar or splits into a symbolic name and a version', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 60 }), fc.tuple(fc.string({ maxLength: 20 }), version).map(([a, v]) => `${a}_${v}.jar`)), (name) => {
        const id = featureIdOf(name);
        if (id === null) return;
        assert.match(id, /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/);
        assert.match(name.slice(id.length), /^_[0-9]+\.[0-9]+\.[0-9]+(\.[A-Za-z0-9_-]+)?\.jar$/);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('which stored files count', () => {
  test('feature jars of a label and of its releases, and the label archive; nothing else', () => {
    assert.equal(countKeyOf('p1/update-site/5.4/features/org.x.f_1.0.0.v1.jar'), countKey('p1', '5.4', 'org.x.f'));
    assert.equal(countKeyOf('p1/releases/5.4/3/features/org.x.f_1.0.0.jar'), countKey('p1', '5.4', 'org.x.f'));
    assert.equal(countKeyOf('p1/update-site/5.4.zip'), countKey('p1', '5.4', ARCHIVE));
    for (const none of [
      'p1/update-site/5.4/content.jar',
      'p1/update-site/5.4/artifacts.xml.xz',
      'p1/update-site/5.4/plugins/org.x.b_1.0.0.jar',
      'p1/update-site/5.4/features/sub/org.x.f_1.0.0.jar',
      'p1/update-site/5.4/features/readme.txt',
      'p1/releases/5.4/3/content.jar',
      'p1/releases/5.4/3/compositeContent.xml',
      'p1/assets/features/org.x.f_1.0.0.jar',
      'p1/workflows/x.zip',
      'p1/update-site/.zip',
    ]) {
      assert.equal(countKeyOf(none), null, none);
    }
    assert.deepEqual(splitCountKey(countKey('p1', '5.4', ARCHIVE)), { productId: 'p1', label: '5.4', artifact: ARCHIVE });
  });
});

describe('days', () => {
  test('property: a day number formats to a date that parses back to it', () => {
    fc.assert(
      fc.property(fc.integer({ min: -719_162, max: 2_932_896 }), (n) => {
        const s = formatDay(n);
        assert.equal(parseDay(s), n);
        // Agrees with the platform's calendar where that one is exact (years 1000 and later).
        if (n >= -354_285) assert.equal(new Date(n * 86_400_000).toISOString().slice(0, 10), s);
      }),
      { numRuns: 3000 },
    );
  });

  test('only real calendar days of the form YYYY-MM-DD parse', () => {
    for (const bad of ['2024-02-30', '2023-02-29', '2024-13-01', '2024-00-10', '2024-1-01', '2024-01-1', '24-01-01', '2024-01-01T00:00:00Z', ' 2024-01-01', '2024/01/01', '', '２０２４-01-01']) {
      assert.equal(parseDay(bad), null, bad);
    }
    assert.equal(parseDay('2024-02-29'), 19_782);
    assert.equal(parseDay('1970-01-01'), 0);
  });

  test('property: the range check accepts exactly the ranges of real days in order and at most MAX_DAYS long', () => {
    const today = parseDay('2026-11-27') as number;
    const someDay = fc.integer({ min: today - 5000, max: today + 5000 }).map(formatDay);
    const anyText = fc.oneof(someDay, fc.string({ maxLength: 12 }), fc.constant(undefined));
    fc.assert(
      fc.property(anyText, anyText, (from, to) => {
        const f = from === undefined ? null : parseDay(from);
        const t = to === undefined ? today : parseDay(to);
        let result: { from: number; to: number } | ValidationError;
        try {
          result = statsRange({ ...(from === undefined ? {} : { from }), ...(to === undefined ? {} : { to }) }, today);
        } catch (e) {
          assert.ok(e instanceof ValidationError);
          result = e;
        }
        if (result instanceof ValidationError) {
          const field = result.errors[0]?.field;
          assert.ok(field === 'from' || field === 'to');
          const fromOk = from === undefined || f !== null;
          const toOk = t !== null;
          if (fromOk && toOk) {
            const start = f ?? (t as number) - 89;
            assert.ok(start > (t as number) || (t as number) - start + 1 > MAX_DAYS);
          }
          return;
        }
        assert.equal(result.to, t);
        assert.equal(result.from, f ?? (t as number) - 89);
        assert.ok(result.from <= result.to && result.to - result.from < MAX_DAYS);
      }),
      { numRuns: 3000 },
    );
  });

  test('errors name the field', () => {
    const today = parseDay('2026-11-27') as number;
    const fieldOf = (q: { from?: string; to?: string }) => {
      try {
        statsRange(q, today);
        return null;
      } catch (e) {
        return (e as ValidationError).errors[0]?.field;
      }
    };
    assert.equal(fieldOf({ from: '2026-02-30' }), 'from');
    assert.equal(fieldOf({ to: 'yesterday' }), 'to');
    assert.equal(fieldOf({ from: '2026-11-28', to: '2026-11-27' }), 'from');
    assert.equal(fieldOf({ from: '2000-01-01' }), 'from');
    assert.equal(fieldOf({ to: '2100-01-01' }), null);
    assert.deepEqual(statsRange({}, today), { from: today - 89, to: today });
  });
});

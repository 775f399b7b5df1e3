import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { crawlRepository, DEFAULT_CRAWL_LIMITS } from '../../../src/publishing/crawler/crawl.js';
import {
  compareVersions,
  contains,
  contradictsLabel,
  intersect,
  type OsgiVersion,
  parseRange,
  parseVersion,
  platformRange,
  platformReleases,
  printRange,
  printVersion,
  rangeContains,
  type RequiringUnit,
  type VersionRange,
} from '../../../src/publishing/crawler/platform-range.js';
import { checkCrawlResult, InvalidCrawlResult } from '../../../src/publishing/crawler/result.js';
import { serveDir } from './serve.js';

const FIXTURES = path.join(import.meta.dirname, '../../fixtures/update-sites');

// Small numbers, so that generated bounds often meet and the edge cases (equal ends) are tried.
const version: fc.Arbitrary<OsgiVersion> = fc.record({
  major: fc.integer({ min: 0, max: 4 }),
  minor: fc.integer({ min: 0, max: 4 }),
  micro: fc.integer({ min: 0, max: 3 }),
  qualifier: fc.constantFrom('', 'v2024', 'v2025', 'a', 'A_b-1'),
}).map((v) => ({ ...v })); // plain objects, as the parser makes (fc.record's have no prototype)
const range: fc.Arbitrary<VersionRange> = fc
  .record({ a: version, b: fc.option(version, { nil: null }), minInclusive: fc.boolean(), maxInclusive: fc.boolean() })
  .map(({ a, b, minInclusive, maxInclusive }) => {
    if (b === null) return { min: a, minInclusive, max: null, maxInclusive: false };
    const [min, max] = compareVersions(a, b) <= 0 ? [a, b] : [b, a];
    // An empty range is no range: widen it to the one version.
    if (compareVersions(min, max) === 0) return { min, minInclusive: true, max, maxInclusive: true };
    return { min, minInclusive, max, maxInclusive };
  });

test('printing then parsing a range (and a version) gives it back', () => {
  fc.assert(
    fc.property(range, (r) => {
      assert.deepEqual(parseRange(printRange(r)), r);
    }),
    { numRuns: 3000 },
  );
  fc.assert(fc.property(version, (v) => assert.deepEqual(parseVersion(printVersion(v)), v)));
});

test('intersection is commutative, and a version is in it exactly when it is in both', () => {
  fc.assert(
    fc.property(range, range, version, (a, b, v) => {
      const ab = intersect(a, b);
      const ba = intersect(b, a);
      assert.deepEqual(ab, ba);
      assert.equal(ab !== null && contains(ab, v), contains(a, v) && contains(b, v));
    }),
    { numRuns: 5000 },
  );
});

test('intersection with itself is itself; with a wider range, the narrower one', () => {
  fc.assert(
    fc.property(range, (r) => {
      assert.deepEqual(intersect(r, r), r);
      assert.deepEqual(intersect(r, parseRange('0.0.0')!), r);
    }),
  );
});

test('the parser takes any text and returns a range or null, never throws', () => {
  const rangeish = fc.array(fc.constantFrom('[', ']', '(', ')', ',', '1', '.', '0', '2', 'v', ' ', '-', '_', '99999999999'), { maxLength: 20 }).map((p) => p.join(''));
  fc.assert(
    fc.property(fc.oneof(rangeish, fc.string({ maxLength: 50 })), (s) => {
      const r = parseRange(s);
      if (r) assert.deepEqual(parseRange(printRange(r)), r);
    }),
    { numRuns: 5000 },
  );
});

test('OSGi range notation as the specification writes it', () => {
  assert.equal(printRange(parseRange('[4.3.0,6.0.0)')!), '[4.3.0,6.0.0)');
  assert.equal(printRange(parseRange('[4.3,6)')!), '[4.3.0,6.0.0)');
  assert.equal(printRange(parseRange('(1.0.0.v2024,2.0.0]')!), '(1.0.0.v2024,2.0.0]');
  assert.equal(printRange(parseRange('5.2')!), '5.2.0', 'a bare version is that version and later');
  assert.equal(printRange(parseRange('[5.2.0,)')!), '5.2.0', 'P2 writes an open upper end as [v,)');
  assert.equal(printRange(parseRange(' [ 1.0 , 2.0 ) ')!), '[1.0.0,2.0.0)');
  for (const bad of ['', '[1.0,', '[2.0,1.0)', '[1.0,1.0)', '(1.0,1.0]', '1.0.0.', '1..0', '-1', '[a,b)', '1.0.0.q!', '01.0', '[1.0,2.0', '1.0,2.0']) {
    assert.equal(parseRange(bad), null, bad);
  }
  // The qualifier sorts after its absence: 5.2.0.v2024 is above 5.2.0, below 5.2.1.
  const r = parseRange('[5.2.0,5.2.1)')!;
  assert.equal(contains(r, parseVersion('5.2.0.v2024')!), true);
  assert.equal(contains(parseRange('(5.2.0,6)')!, parseVersion('5.2.0.v2024')!), true);
  assert.equal(contains(parseRange('[5.2.0,5.2.0]')!, parseVersion('5.2.0.v2024')!), false);
});

test('rangeContains: a release X.Y stands for every build of X.Y.0, X.Y.Z for X.Y.Z', () => {
  assert.equal(rangeContains('[5.1.0,5.4.0)', '5.3'), true);
  assert.equal(rangeContains('[5.1.0,5.4.0)', '5.4'), false);
  assert.equal(rangeContains('[5.1.0,5.4.0)', '5.1'), true);
  assert.equal(rangeContains('[5.1.0,5.4.0)', '5.0'), false);
  assert.equal(rangeContains('[5.1.0,5.4.0)', '5.3.9'), true);
  assert.equal(rangeContains('5.2.0', '7.0'), true);
  assert.equal(rangeContains('[5.3.1,6.0.0)', '5.3'), false, '5.3 is 5.3.0: a range starting at 5.3.1 leaves it out');
  assert.equal(rangeContains('[5.3.1,6.0.0)', '5.3.1'), true);
  assert.equal(rangeContains('[5.3.0.v202406,6.0.0)', '5.3'), true, 'a build of 5.3.0 carries a qualifier');
  assert.equal(rangeContains('(5.3.0,6.0.0)', '5.3'), true, 'the 5.3.0 builds (qualified) are above 5.3.0');
  assert.equal(rangeContains('[4.3.0,6.0.0)', '6.0'), false);
  assert.equal(rangeContains('nonsense', '5.3'), false);
  assert.equal(rangeContains('[5.1.0,5.4.0)', '5'), false, 'not a release');
  assert.equal(rangeContains('[5.1.0,5.4.0)', '5.3.x'), false);
});

test('human form of a range', () => {
  const cases: [string | null, string | null][] = [
    ['[5.1.0,5.4.0)', '5.1 – 5.3'],
    ['[5.2.0,)', '5.2 and later'],
    ['5.2.0', '5.2 and later'],
    ['[4.3.0,6.0.0)', '4.3 – 5.x'],
    ['[5.0.0,6.0.0)', '5.x'],
    ['[5.2.0,5.3.0)', '5.2'],
    ['[5.2.0,5.2.1)', '5.2.0'],
    ['[5.2.1,5.2.4)', '5.2.1 – 5.2.3'],
    ['[5.2.1,)', '5.2.1 and later'],
    ['[5.2.0,5.2.0]', '5.2.0 only'],
    ['[5.1.0,5.3.0]', '5.1 – 5.3.0'],
    ['(5.2.0,6.0.0)', 'after 5.2.0, up to 5.x'],
    ['(5.2.0,)', 'after 5.2.0'],
    ['[0.0.0,6.0.0)', 'up to 5.x'],
    ['0.0.0', 'any release'],
    ['[2.10.0,3.0.0)', '2.10 – 2.x'],
    ['[5.1.0,5.4.0.v2024)', '5.1 – before 5.4.0.v2024'],
    ['[5.2.0.v2023,5.4.0)', '5.2 – 5.3'],
    [null, null],
    ['garbage', null],
  ];
  for (const [r, want] of cases) assert.equal(platformReleases(r), want, String(r));
});

const unit = (id: string, requires: [string, string, string, boolean?][]): RequiringUnit => ({
  id,
  version: '1.0.0',
  requires: requires.map(([namespace, name, range, optional]) => ({ namespace, name, range, optional: optional ?? false, greedy: true, filter: null })),
});

test('a label\'s platform range: the intersection of what its own units require of core units', () => {
  const r = platformRange([
    unit('com.example.a', [
      ['osgi.bundle', 'org.knime.core', '[5.1.0,6.0.0)'],
      ['osgi.bundle', 'org.eclipse.core.runtime', '[3.7.0,4.0.0)'],
      ['java.package', 'org.knime.core.node', '[9.0.0,10.0.0)'],
    ]),
    unit('com.example.b', [
      ['org.eclipse.equinox.p2.iu', 'org.knime.features.base.feature.group', '[4.3.0,5.4.0)'],
      ['osgi.bundle', 'org.knime.python3', '[7.0.0,8.0.0)', true],
    ]),
    // A copy of a platform bundle shipped in the site is not the label's own requirement.
    unit('org.knime.shipped', [['osgi.bundle', 'org.knime.core', '[1.0.0,2.0.0)']]),
  ]);
  assert.deepEqual(r, { range: '[5.1.0,5.4.0)', conflicts: [] });
  assert.deepEqual(platformRange([unit('com.example.a', [['osgi.bundle', 'org.eclipse.ui', '3.0.0']])]), { range: null, conflicts: [] });
  // A range that does not parse (here a qualifier past 64 characters) is left out, never stored.
  const long = `${'9'.repeat(9)}.${'9'.repeat(9)}.${'9'.repeat(9)}.${'q'.repeat(64)}`;
  assert.equal(platformRange([unit('com.example.a', [['osgi.bundle', 'org.knime.core', `[1.0.0.${'q'.repeat(65)},2.0.0)`]])]).range, null);
  const widest = platformRange([unit('com.example.a', [['osgi.bundle', 'org.knime.core', `(${long},${long}]`.replace('(', '[')]])]).range!;
  assert.equal(widest, `[${long},${long}]`);
  assert.ok(widest.length <= 200 && checkCrawlResult({ url: 'http://x/', units: [], nodes: [], categories: [], nodeSets: [], problems: [], platformRange: widest }, DEFAULT_CRAWL_LIMITS));
  assert.deepEqual(platformRange([unit('org.vendor.a', [['osgi.bundle', 'com.example.core', '[1.0.0,2.0.0)']])], ['com.example.']), { range: '[1.0.0,2.0.0)', conflicts: [] });
});

test('requirements that cannot both hold: no range, and each pair named', () => {
  const r = platformRange([
    unit('com.example.a', [['osgi.bundle', 'org.knime.core', '[4.0.0,5.0.0)']]),
    unit('com.example.b', [['osgi.bundle', 'org.knime.base', '[5.1.0,6.0.0)']]),
  ]);
  assert.equal(r.range, null);
  assert.deepEqual(r.conflicts, [
    { a: { unit: 'com.example.a 1.0.0', requirement: 'org.knime.core', range: '[4.0.0,5.0.0)' }, b: { unit: 'com.example.b 1.0.0', requirement: 'org.knime.base', range: '[5.1.0,6.0.0)' } },
  ]);
});

test('any set of requirements: a range exactly when they have a common version; otherwise disjoint pairs named', () => {
  fc.assert(
    fc.property(fc.array(range, { minLength: 1, maxLength: 8 }), fc.array(version, { maxLength: 20 }), (ranges, probes) => {
      const units = ranges.map((r, i) => unit(`com.vendor.u${i}`, [['osgi.bundle', 'org.knime.core', printRange(r)]]));
      const out = platformRange(units);
      const all = ranges.reduce<VersionRange | null>((acc, r) => acc && intersect(acc, r), ranges[0]!);
      assert.equal(out.range === null, all === null);
      if (out.range !== null) {
        for (const v of probes) assert.equal(contains(parseRange(out.range)!, v), ranges.every((r) => contains(r, v)));
        assert.deepEqual(out.conflicts, []);
      } else {
        assert.ok(out.conflicts.length > 0);
        for (const c of out.conflicts) assert.equal(intersect(parseRange(c.a.range)!, parseRange(c.b.range)!), null, JSON.stringify(c));
      }
    }),
    { numRuns: 3000 },
  );
});

test('a hostile number of conflicting requirements is handled in one pass, and at most 20 pairs are named', () => {
  const units = Array.from({ length: 50_000 }, (_, i) => unit(`com.vendor.u${i}`, [['osgi.bundle', 'org.knime.core', `[${i}.0.0,${i}.1.0)`]]));
  const out = platformRange(units);
  assert.equal(out.range, null);
  assert.equal(out.conflicts.length, 20);
});

test('a label name that reads as a release the range leaves out', () => {
  assert.equal(contradictsLabel('5.2', '[5.3.0,6.0.0)'), true);
  assert.equal(contradictsLabel('5.3', '[5.3.0,6.0.0)'), false);
  assert.equal(contradictsLabel('5.2.1', '[5.1.0,5.2.1)'), true);
  assert.equal(contradictsLabel('nightly', '[5.3.0,6.0.0)'), false, 'not a release name');
  assert.equal(contradictsLabel('5.2', null), false, 'no range, nothing to contradict');
});

// Real metadata (test/fixtures/update-sites, origins in each file). The expected ranges were read
// off the XML by hand: every core (org.knime.*) requirement of the non-core units, intersected.
test('real update sites: the KNIME scripting integration (MPI-CBG) and the community template', async () => {
  const server = await serveDir(FIXTURES);
  try {
    // knutils and scripting.r both require org.knime.workbench.core, .repository and .base at
    // [2.10.0,3.0.0); their other requirements (Eclipse, their own bundles, osgi.ee) are not core.
    const scripting = await crawlRepository(`${server.url}/knime-scripting/`, DEFAULT_CRAWL_LIMITS);
    assert.equal(scripting.units.length, 3);
    assert.equal(scripting.platformRange, '[2.10.0,3.0.0)');
    assert.equal(platformReleases(scripting.platformRange), '2.10 – 2.x');
    assert.deepEqual(scripting.problems.filter((p) => p.code.startsWith('platform_range')), []);

    // Both units are named org.knime.*: with the default prefix they are platform units
    // themselves, so nothing of the label's own requires the platform.
    const template = await crawlRepository(`${server.url}/community-template/`, DEFAULT_CRAWL_LIMITS);
    assert.equal(template.units.length, 3);
    assert.equal(template.platformRange, null);
    // With only org.knime.core as the core, the plug-in's Require-Bundle org.knime.core [4.0.0,6.0.0) counts.
    const narrowed = await crawlRepository(`${server.url}/community-template/`, DEFAULT_CRAWL_LIMITS, undefined, ['org.knime.core']);
    assert.equal(narrowed.platformRange, '[4.0.0,6.0.0)');
    assert.equal(platformReleases(narrowed.platformRange), '4.0 – 5.x');
  } finally {
    await server.close();
  }
});

test("a worker's result with anything but null or an OSGi range as platformRange is refused", () => {
  const ok = { url: 'http://x/', units: [], nodes: [], categories: [], nodeSets: [], problems: [], platformRange: '[5.1.0,6.0.0)' };
  assert.equal(checkCrawlResult(ok, DEFAULT_CRAWL_LIMITS).platformRange, '[5.1.0,6.0.0)');
  assert.equal(checkCrawlResult({ ...ok, platformRange: null }, DEFAULT_CRAWL_LIMITS).platformRange, null);
  for (const bad of ['<script>alert(1)</script>', `[1.0.0,${'9'.repeat(300)})`, 42, { a: 1 }, undefined, '[2.0.0,1.0.0)']) {
    assert.throws(() => checkCrawlResult({ ...ok, platformRange: bad }, DEFAULT_CRAWL_LIMITS), InvalidCrawlResult, String(bad));
  }
});

/**
 * Platform compatibility of a label from its own P2 metadata
 * (docs/vendors.md#platform-compatibility): the OSGi version ranges its units require of the
 * platform's core units, intersected. Versions and ranges follow the OSGi Core specification §3.2.5
 * ("Version") and §3.2.6 ("Version Ranges"): `major.minor.micro.qualifier`, numbers compared
 * numerically and the qualifier as a string; `[a,b)`, `(a,b]`, `[a,b]`, `(a,b)`, and a bare `v`
 * meaning `v` and later. P2 also writes an open upper end as `[v,)`, read here too. Pure functions:
 * the crawl worker, the pages and the catalog filter all call them.
 */

export interface OsgiVersion {
  major: number;
  minor: number;
  micro: number;
  /** `""` when absent; sorts below any qualifier (OSGi §3.2.5). */
  qualifier: string;
}

export interface VersionRange {
  min: OsgiVersion;
  minInclusive: boolean;
  /** null: no upper end. */
  max: OsgiVersion | null;
  maxInclusive: boolean;
}

/** The default of PIER_PLATFORM_CORE_PREFIXES: the real-world platform's own units. */
export const DEFAULT_CORE_PREFIXES: readonly string[] = ['org.knime.'];

const NUMBER = /^(0|[1-9][0-9]{0,8})$/;
// OSGi sets no length; build stamps are a few dozen characters. The cap keeps any printed range
// within 191 characters, what the crawls table and the worker's result check (result.ts) take.
const QUALIFIER = /^[A-Za-z0-9_-]{1,64}$/;

/** `1`, `1.2`, `1.2.3`, `1.2.3.q`; null for anything else. */
export function parseVersion(text: string): OsgiVersion | null {
  const parts = text.trim().split('.');
  if (parts.length === 0 || parts.length > 4) return null;
  const nums = parts.slice(0, 3);
  if (!nums.every((p) => NUMBER.test(p))) return null;
  const qualifier = parts[3] ?? '';
  if (parts.length === 4 && !QUALIFIER.test(qualifier)) return null;
  return { major: Number(nums[0]), minor: Number(nums[1] ?? 0), micro: Number(nums[2] ?? 0), qualifier };
}

export function compareVersions(a: OsgiVersion, b: OsgiVersion): number {
  const d = a.major - b.major || a.minor - b.minor || a.micro - b.micro;
  if (d !== 0) return Math.sign(d);
  // OSGi compares qualifiers with String.compareTo: UTF-16 code units, as `<` does.
  return a.qualifier < b.qualifier ? -1 : a.qualifier > b.qualifier ? 1 : 0;
}

export function printVersion(v: OsgiVersion): string {
  return `${v.major}.${v.minor}.${v.micro}${v.qualifier ? `.${v.qualifier}` : ''}`;
}

/** An OSGi range; null when it is not one (or is empty: no version satisfies it). */
export function parseRange(text: string): VersionRange | null {
  const s = text.trim();
  if (s.length > 600) return null;
  const m = /^([[(])\s*([^,\s]+)\s*,\s*([^,\s\])]*)\s*([\])])$/.exec(s);
  if (!m) {
    const min = parseVersion(s);
    return min ? { min, minInclusive: true, max: null, maxInclusive: false } : null;
  }
  const min = parseVersion(m[2]!);
  if (!min) return null;
  if (m[3] === '') return { min, minInclusive: m[1] === '[', max: null, maxInclusive: false };
  const max = parseVersion(m[3]!);
  if (!max) return null;
  const r = { min, minInclusive: m[1] === '[', max, maxInclusive: m[4] === ']' };
  return isEmpty(r) ? null : r;
}

/**
 * OSGi notation: `[a,b)` and its kin; `a` for "a and later". An open range with an exclusive
 * lower end has no OSGi form: it is written `(a,)`, as P2 reads it.
 */
export function printRange(r: VersionRange): string {
  if (r.max === null) return r.minInclusive ? printVersion(r.min) : `(${printVersion(r.min)},)`;
  return `${r.minInclusive ? '[' : '('}${printVersion(r.min)},${printVersion(r.max)}${r.maxInclusive ? ']' : ')'}`;
}

function isEmpty(r: VersionRange): boolean {
  if (r.max === null) return false;
  const c = compareVersions(r.min, r.max);
  return c > 0 || (c === 0 && !(r.minInclusive && r.maxInclusive));
}

export function contains(r: VersionRange, v: OsgiVersion): boolean {
  const lo = compareVersions(v, r.min);
  if (lo < 0 || (lo === 0 && !r.minInclusive)) return false;
  if (r.max === null) return true;
  const hi = compareVersions(v, r.max);
  return hi < 0 || (hi === 0 && r.maxInclusive);
}

/** The versions both ranges allow; null when none. */
export function intersect(a: VersionRange, b: VersionRange): VersionRange | null {
  const lo = compareVersions(a.min, b.min);
  const min = lo >= 0 ? a.min : b.min;
  const minInclusive = lo > 0 ? a.minInclusive : lo < 0 ? b.minInclusive : a.minInclusive && b.minInclusive;
  let max: OsgiVersion | null;
  let maxInclusive: boolean;
  if (a.max === null || b.max === null) {
    max = a.max ?? b.max;
    maxInclusive = a.max ? a.maxInclusive : b.maxInclusive;
  } else {
    const hi = compareVersions(a.max, b.max);
    max = hi <= 0 ? a.max : b.max;
    maxInclusive = hi < 0 ? a.maxInclusive : hi > 0 ? b.maxInclusive : a.maxInclusive && b.maxInclusive;
  }
  const r = { min, minInclusive, max, maxInclusive: max === null ? false : maxInclusive };
  return isEmpty(r) ? null : r;
}

/** A platform release as people write it: `5.3` or `5.3.1`. */
export const RELEASE_PATTERN = /^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})(\.(0|[1-9][0-9]{0,3}))?$/;

/**
 * The versions that are the release `X.Y[.Z]`: its builds carry qualifiers (`5.3.0.v2024…`),
 * so `5.3` stands for every `5.3.0.*`, that is `[5.3.0,5.3.1)`.
 */
function releaseVersions(release: string): VersionRange | null {
  if (!RELEASE_PATTERN.test(release)) return null;
  const v = parseVersion(release)!;
  return { min: v, minInclusive: true, max: { ...v, micro: v.micro + 1, qualifier: '' }, maxInclusive: false };
}

/**
 * Whether a label whose platform range is `range` (OSGi notation) installs into the platform
 * release `release` (`5.3` = 5.3.0, `5.3.1`): some build of that release is in the range. False
 * for a range or release that does not parse. The catalog's and the node search's "works with"
 * filters use it.
 */
export function rangeContains(range: string, release: string): boolean {
  const r = parseRange(range);
  const rel = releaseVersions(release);
  return r !== null && rel !== null && intersect(r, rel) !== null;
}

/** One requirement of an installable unit as content.xml states it. */
export interface UnitRequirement {
  namespace: string;
  name: string;
  /** OSGi range as written; `0.0.0` (any) when absent. */
  range: string;
  optional: boolean;
  greedy: boolean;
  filter: string | null;
}

export interface RequiringUnit {
  id: string;
  version: string;
  requires: UnitRequirement[];
}

/** Two units of the label whose platform requirements cannot both be met. */
export interface RangeConflict {
  a: { unit: string; requirement: string; range: string };
  b: { unit: string; requirement: string; range: string };
}

export interface PlatformRangeResult {
  /** OSGi notation, or null: no unit of the label requires a core unit (or they conflict). */
  range: string | null;
  conflicts: RangeConflict[];
}

const CORE_NAMESPACES = new Set(['org.eclipse.equinox.p2.iu', 'osgi.bundle']);

const isCore = (name: string, prefixes: readonly string[]) => prefixes.some((p) => p !== '' && name.startsWith(p));

/**
 * The label's platform range: the intersection of the ranges its own units (not units that are
 * themselves core units, such as a copy of a platform bundle shipped along) require, not
 * optionally, of core units (`org.eclipse.equinox.p2.iu` or `osgi.bundle` names starting with a
 * core prefix). A requirement whose range does not parse is left out. When the requirements
 * cannot all hold, the range is null and the pairs that show it are named (at most 20).
 */
export function platformRange(units: readonly RequiringUnit[], prefixes: readonly string[] = DEFAULT_CORE_PREFIXES): PlatformRangeResult {
  const wanted: { unit: string; requirement: string; text: string; range: VersionRange }[] = [];
  for (const u of units) {
    if (isCore(u.id, prefixes)) continue;
    for (const r of u.requires) {
      if (r.optional || !CORE_NAMESPACES.has(r.namespace) || !isCore(r.name, prefixes)) continue;
      const range = parseRange(r.range);
      if (range) wanted.push({ unit: `${u.id} ${u.version}`, requirement: r.name, text: r.range, range });
    }
  }
  if (wanted.length === 0) return { range: null, conflicts: [] };
  let acc: VersionRange | null = wanted[0]!.range;
  for (const w of wanted.slice(1)) acc = acc && intersect(acc, w.range);
  if (acc) return { range: printRange(acc), conflicts: [] };
  // Empty: on a line, intervals with no common point always include a disjoint pair, and the
  // one ending first or the one starting last is in such a pair (Helly's theorem in one
  // dimension). Naming the pairs with those two keeps this linear in the requirements, however
  // many a hostile site lists.
  let first = 0;
  let last = 0;
  wanted.forEach((w, i) => {
    if (endsBefore(w.range, wanted[first]!.range)) first = i;
    if (startsAfter(w.range, wanted[last]!.range)) last = i;
  });
  const conflicts: RangeConflict[] = [];
  const seen = new Set<string>();
  for (const p of [first, last]) {
    for (let i = 0; i < wanted.length && conflicts.length < 20; i++) {
      if (intersect(wanted[i]!.range, wanted[p]!.range) !== null) continue;
      const [x, y] = i < p ? [wanted[i]!, wanted[p]!] : [wanted[p]!, wanted[i]!];
      const key = [x.unit, x.requirement, x.text, y.unit, y.requirement, y.text].join('\u0000');
      if (seen.has(key)) continue;
      seen.add(key);
      conflicts.push({ a: { unit: x.unit, requirement: x.requirement, range: x.text }, b: { unit: y.unit, requirement: y.requirement, range: y.text } });
    }
  }
  return { range: null, conflicts };
}

/** `a`'s upper end is below `b`'s (no upper end: above all). */
function endsBefore(a: VersionRange, b: VersionRange): boolean {
  if (a.max === null) return false;
  if (b.max === null) return true;
  const c = compareVersions(a.max, b.max);
  return c < 0 || (c === 0 && !a.maxInclusive && b.maxInclusive);
}

/** `a`'s lower end is above `b`'s. */
function startsAfter(a: VersionRange, b: VersionRange): boolean {
  const c = compareVersions(a.min, b.min);
  return c > 0 || (c === 0 && !a.minInclusive && b.minInclusive);
}

/** A label name that reads as a platform release (`5.2`, `5.2.1`) the range leaves out; null otherwise. */
export function contradictsLabel(label: string, range: string | null): boolean {
  return range !== null && RELEASE_PATTERN.test(label) && !rangeContains(range, label);
}

const minorText = (v: OsgiVersion) => (v.micro === 0 ? `${v.major}.${v.minor}` : `${v.major}.${v.minor}.${v.micro}`);

/** The last release below an exclusive upper end, as people name it; null when it has no such form. */
function lastBefore(max: OsgiVersion): string | null {
  if (max.qualifier !== '') return null;
  if (max.micro > 0) return `${max.major}.${max.minor}.${max.micro - 1}`;
  if (max.minor > 0) return `${max.major}.${max.minor - 1}`;
  if (max.major > 0) return `${max.major - 1}.x`;
  return null;
}

/**
 * A range as platform releases, for people: `[5.1.0,5.4.0)` → "5.1 – 5.3", `[5.2.0,)` and
 * `5.2.0` → "5.2 and later", `[4.3.0,6.0.0)` → "4.3 – 5.x", `[5.0.0,6.0.0)` → "5.x",
 * `[5.2.0,5.3.0)` → "5.2", `[5.2.1,5.2.4)` → "5.2.1 – 5.2.3", `[5.2.0,5.2.0]` → "5.2.0 only",
 * `[5.1.0,5.3.0]` → "5.1 – 5.3.0"; an exclusive lower end reads "after 5.2.0". Null for null
 * or a range that does not parse.
 */
export function platformReleases(range: string | null): string | null {
  const r = range === null ? null : parseRange(range);
  if (!r) return null;
  if (r.max && r.minInclusive && r.maxInclusive && compareVersions(r.min, r.max) === 0) return `${printVersion(r.min)} only`;
  const zero = r.min.major === 0 && r.min.minor === 0 && r.min.micro === 0 && r.min.qualifier === '';
  const low = r.minInclusive ? (zero ? null : minorText(r.min)) : `after ${printVersion(r.min)}`;
  let high: string | null = null;
  if (r.max) high = r.maxInclusive ? printVersion(r.max) : (lastBefore(r.max) ?? `before ${printVersion(r.max)}`);
  if (high === null) return low === null ? 'any release' : r.minInclusive ? `${low} and later` : low;
  if (low === null) return `up to ${high}`;
  if (low === high) return low;
  if (high === `${low}.0`) return high; // [5.2.0,5.2.1): the one micro release
  if (r.minInclusive && r.min.minor === 0 && r.min.micro === 0 && high === `${r.min.major}.x`) return high;
  return r.minInclusive ? `${low} – ${high}` : `${low}, up to ${high}`;
}

// The "## [Version] - YYYY-MM-DD" heading of a Keep a Changelog release. We read the heading's
// inline *source*, so "[1.0.0]" parses the same whether markdown-it sees plain text or a
// reference link (Keep a Changelog puts compare links in reference definitions at the end), and
// "[1.0.0](https://…)" (an inline link) is accepted too.

export type ReleaseHeading =
  | { version: string; date: string | null; unreleased: boolean; yanked: boolean }
  | { error: string };

const SHAPE = '"## [Version] - YYYY-MM-DD" or "## [Unreleased]"';
// Keep a Changelog 2.0 allows non-SemVer versions: SemVer, OSGi "1.2.3.v2024…", "1.2", "5".
const VERSION = /^[0-9][0-9A-Za-z.+_-]*$/;

export function parseReleaseHeading(source: string): ReleaseHeading {
  // "[label]" optionally followed by an inline "(url)" or a reference "[ref]".
  const m = /^\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])?(.*)$/.exec(source);
  if (!m) {
    const hint = /^v?\d/i.test(source) ? '; put the version in square brackets' : '';
    return { error: `"## ${source}" is not a release heading: expected ${SHAPE}${hint}` };
  }
  const label = (m[1] ?? '').trim();
  const rest = (m[2] ?? '').trim();
  const unreleased = label.toLowerCase() === 'unreleased';
  if (unreleased) {
    if (rest !== '') return { error: '"## [Unreleased]" takes no date or other text after it' };
    return { version: 'Unreleased', date: null, unreleased: true, yanked: false };
  }
  const versionError = checkVersion(label);
  if (versionError) return { error: versionError };
  if (rest === '') return { error: `release ${label} has no date: expected "## [${label}] - YYYY-MM-DD"` };
  // Hyphen as Keep a Changelog writes it; en/em dashes appear when editors "fix" typography.
  const d = /^[-\u2013\u2014]\s*(\S+)(?:\s+\[(yanked)\])?$/i.exec(rest);
  if (!d) return { error: `expected " - YYYY-MM-DD" after "[${label}]" (optionally " [YANKED]"), found "${rest}"` };
  const date = d[1] ?? '';
  if (!isCalendarDate(date)) return { error: `invalid date "${date}" for ${label}: expected a real date as YYYY-MM-DD` };
  return { version: label, date, unreleased: false, yanked: d[2] !== undefined };
}

function checkVersion(version: string): string | null {
  if (VERSION.test(version)) return null;
  const hint = /^v\d/i.test(version) ? ' (drop the leading "v")' : '';
  return `invalid version "${version}"${hint}: a version starts with a digit and contains only letters, digits, ".", "+", "-" and "_"`;
}

/** YYYY-MM-DD naming a day that exists (2023-02-29 does not, 2024-02-29 does). */
export function isCalendarDate(value: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1) return false;
  // Gregorian leap rule; computed directly because Date maps years 0–99 to 1900–1999.
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
  return day <= days;
}

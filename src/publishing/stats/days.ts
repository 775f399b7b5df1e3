/**
 * UTC calendar days as `YYYY-MM-DD` (RFC 3339 full-date) and as day numbers since 1970-01-01,
 * by integer arithmetic (proleptic Gregorian calendar), not `Date`: `Date.UTC` maps years 0–99
 * to 1900–1999, and a string parser accepts more spellings than a full-date.
 */

const FULL_DATE = /^([0-9]{4})-([0-9]{2})-([0-9]{2})$/;

const MS_PER_DAY = 86_400_000;

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

function daysInMonth(y: number, m: number): number {
  return m === 2 ? (isLeap(y) ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31;
}

/** Days since 1970-01-01 of a civil date (H. Hinnant's days_from_civil). */
function fromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/** The day number of a full-date, or null when it is not one (a wrong form, month or day of month). */
export function parseDay(s: string): number | null {
  const m = FULL_DATE.exec(s);
  if (!m) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo)) return null;
  return fromCivil(y, mo, d);
}

/** The full-date of a day number (H. Hinnant's civil_from_days). */
export function formatDay(n: number): string {
  const z = n + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  const y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  return `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
}

/** The UTC day number of a time in milliseconds since the epoch. */
export function dayOf(ms: number): number {
  return Math.floor(ms / MS_PER_DAY);
}

/** When the UTC day `n` begins, in milliseconds since the epoch. */
export function dayStartMs(n: number): number {
  return n * MS_PER_DAY;
}

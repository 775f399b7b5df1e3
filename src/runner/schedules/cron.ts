import { Cron, CronPattern } from 'croner';
import { type FieldProblem, ValidationError } from '../../infra/errors.js';

/** Longest cron expression and time-zone name accepted (both well beyond any real one). */
export const MAX_CRON_LENGTH = 200;
export const MAX_TIME_ZONE_LENGTH = 64;

/** How many fire times every schedule answer lists. */
export const NEXT_FIRE_TIMES = 5;

/** A cron expression read in a time zone: what decides when a schedule fires. */
export interface CronSpec {
  cron: string;
  timeZone: string;
}

const NICKNAME = /^@(yearly|annually|monthly|weekly|daily|hourly)$/i;

/**
 * The cron rule of the runner, on top of croner's syntax (https://croner.56k.guru/usage/pattern/):
 * 5 fields (minute hour day-of-month month day-of-week), or 6 with a leading seconds field that
 * must be one fixed second (0-59), or a nickname (@hourly, @daily, @weekly, @monthly, @yearly).
 * A fixed second keeps every schedule at most once a minute: a scheduler ticks about once a
 * second and each fire queues a run, so `* * * * * *` would flood the queue.
 */
function shapeProblem(cron: string): string | null {
  const expr = cron.trim();
  if (expr === '') return 'must not be empty';
  if (NICKNAME.test(expr)) return null;
  const fields = expr.split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) return `has ${fields.length} fields; use 5 (minute hour day month weekday) or 6 with a leading fixed second`;
  // croner reads `?` as the value of the moment the job is made, not as "any" (Quartz's sense).
  if (fields.some((f) => f.includes('?'))) return 'uses "?", which this cron syntax reads as the current date\'s value, not as "any"; write * instead';
  // croner reads `5L` in the weekday field as every Friday, not the last one of the month.
  if (/L/i.test(fields.at(-1) ?? '')) return 'uses "L" in the weekday field, which would fire on every such weekday, not only the last one; use # (5#4 is the fourth Friday) or L in the day-of-month field';
  if (fields.length === 6 && !/^[0-5]?[0-9]$/.test(fields[0]!)) return 'the seconds field (first of 6) must be one number from 0 to 59: a schedule fires at most once a minute';
  return null;
}

/**
 * The IANA time zone as given, in ICU's spelling of its case (`utc` → `UTC`); 400 naming `timeZone` when
 * neither Intl nor croner knows it. UTC offsets (`+01:00`) are refused: they ignore daylight
 * saving time, which is the reason to give a zone at all.
 */
export function canonicalTimeZone(timeZone: string): string {
  const fail = (message: string) => new ValidationError(`timeZone ${message}`, [{ field: 'timeZone', message }]);
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/.test(timeZone)) throw fail('is not an IANA time zone name such as Europe/Berlin or UTC');
  let canonical: string;
  try {
    // ICU answers some zones by an older alias (Asia/Kolkata → Asia/Calcutta): keep the name the
    // user gave, only in ICU's spelling when they differ in case alone (utc → UTC).
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone }).resolvedOptions().timeZone;
    canonical = resolved.toLowerCase() === timeZone.toLowerCase() ? resolved : timeZone;
  } catch {
    throw fail(`"${timeZone}" is not a known IANA time zone`);
  }
  try {
    new Cron('* * * * *', { timezone: canonical, paused: true });
  } catch {
    throw fail(`"${timeZone}" is not a known IANA time zone`);
  }
  return canonical;
}

/** A croner job (never started: it only computes times) for a valid spec; 400 naming `cron` otherwise. */
function cronOf(spec: CronSpec): Cron {
  const fail = (message: string) => new ValidationError(`cron ${message}`, [{ field: 'cron', message }]);
  const shape = shapeProblem(spec.cron);
  if (shape) throw fail(shape);
  try {
    // Parsed as a pattern first: croner's Cron reads some strings as a one-off date instead.
    new CronPattern(spec.cron.trim(), spec.timeZone);
    return new Cron(spec.cron.trim(), { timezone: spec.timeZone, paused: true });
  } catch (e) {
    throw fail(e instanceof Error ? e.message.replace(/^CronPattern: /, '') : 'is not a valid cron expression');
  }
}

/** The longest each month can be (February in a leap year), January first. */
const LONGEST_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Whether the day-of-month field can never meet the month field (`0 0 31 2,4,6,9,11 *`), decided
 * from the parsed pattern instead of by searching: croner searches year by year up to year 3000,
 * recursing per step, and overflows the stack before it gives up when several months are listed.
 * Standard cron reads day-of-month and weekday as OR when both are restricted (croner's legacy
 * mode, its default), and every weekday, its last and its fifth occurrence exist in every month
 * in some year; so only a restricted day-of-month under a `*` weekday can be impossible.
 */
function neverFires(expr: string, timeZone: string): boolean {
  const p = new CronPattern(expr, timeZone);
  if (p.starDOM || !p.starDOW || p.lastDayOfMonth) return false;
  return !p.month.some((inMonth, m) => inMonth && p.day.some((onDay, d) => onDay && d < LONGEST_MONTH[m]!));
}

/**
 * Checks a spec and returns it normalised (canonical zone, trimmed expression). Raises a 400
 * naming `timeZone` or `cron`; an expression that never fires (`0 0 30 2 *`) is refused too.
 */
export function checkCronSpec(spec: CronSpec, now: Date): CronSpec {
  const problems: FieldProblem[] = [];
  const attempt = <T>(f: () => T): T | null => {
    try {
      return f();
    } catch (e) {
      if (!(e instanceof ValidationError)) throw e;
      problems.push(...e.errors);
      return null;
    }
  };
  // Both fields are checked, so one answer names every problem (the expression in UTC when the
  // zone itself is wrong).
  const timeZone = attempt(() => canonicalTimeZone(spec.timeZone));
  const normalised = { cron: spec.cron.trim(), timeZone: timeZone ?? 'UTC' };
  const cron = attempt(() => cronOf(normalised));
  if (cron && (neverFires(normalised.cron, normalised.timeZone) || !cron.nextRun(now))) {
    problems.push({ field: 'cron', message: 'never fires (no such date)' });
  }
  if (problems.length) throw new ValidationError(problems.map((p) => `${p.field} ${p.message}`).join('; '), problems);
  return normalised;
}

/**
 * The next `count` fire instants strictly after `after`, in order. Daylight saving time follows
 * croner: a wall-clock time that does not exist (skipped at spring-forward) fires at the same
 * minute of the next hour, once; a wall-clock time that occurs twice (fall-back) fires once, at
 * its second occurrence (test/runner/schedule-cron.test.ts pins both).
 */
export function nextFireTimes(spec: CronSpec, after: Date, count: number): Date[] {
  return cronOf(spec).nextRuns(count, after);
}

/** The next fire strictly after `after`, or null when the expression has no later time. */
export function nextFireAfter(spec: CronSpec, after: Date): Date | null {
  return cronOf(spec).nextRun(after);
}

/**
 * Download statistics (issue 20 "Download counts"): installs per day and label for the vendor
 * (`GET /api/products/<id>/stats`), and the product page's total and 90-day chart. What counts
 * as an install is decided where downloads are counted (stats/artifact.ts, repository.ts).
 */
import { ValidationError } from '../../infra/errors.js';
import { dayOf, formatDay, parseDay } from './days.js';
import type { DownloadCountsRepository } from './repository.js';

/** Days the report covers when `from` is not given: the last 90 through `to`. */
export const DEFAULT_DAYS = 90;
/** The longest range one report covers (about ten years): bounds the answer's size. */
export const MAX_DAYS = 3660;
/** Days the product page's chart shows. */
export const CHART_DAYS = 90;
/**
 * The product page shows complete UTC days only, from this long after midnight on: every
 * download host has flushed the day's last counts by then (counter.ts FLUSH_MS, with a margin
 * for a slow database). So a product's page re-renders for its counts once a day, not on every
 * flush (web/service.ts).
 */
export const DAY_SETTLED_MS = 60_000;

export interface DayInstalls {
  day: string;
  installs: number;
}

export interface StatsReport {
  productId: string;
  from: string;
  to: string;
  total: number;
  days: DayInstalls[];
  labels: { label: string; total: number; days: DayInstalls[] }[];
}

/** The product page's chart: complete days only (see DAY_SETTLED_MS). */
export interface DownloadsChartModel {
  /** Every install counted through `through`. */
  total: number;
  /** The last CHART_DAYS days through `through`, oldest first, zeros included. */
  days: DayInstalls[];
  /** The last day shown (yesterday, UTC, once settled). */
  through: string;
}

/**
 * The report's range from the query: `to` defaults to today (UTC), `from` to DEFAULT_DAYS − 1
 * days before `to`. A bad date, `from` after `to` or more than MAX_DAYS days is a 400 naming the field.
 */
export function statsRange(query: { from?: string; to?: string }, today: number): { from: number; to: number } {
  const parse = (field: 'from' | 'to', value: string | undefined): number | null => {
    if (value === undefined) return null;
    const n = parseDay(value);
    if (n === null) throw new ValidationError(`${field} must be a calendar date YYYY-MM-DD (UTC)`, [{ field, message: `"${value.slice(0, 40)}" is not a date of the form YYYY-MM-DD` }]);
    return n;
  };
  const to = parse('to', query.to) ?? today;
  const from = parse('from', query.from) ?? to - (DEFAULT_DAYS - 1);
  if (from > to) throw new ValidationError('from must not be after to', [{ field: 'from', message: `${formatDay(from)} is after to (${formatDay(to)})` }]);
  if (to - from + 1 > MAX_DAYS) {
    throw new ValidationError(`a report covers at most ${MAX_DAYS} days`, [{ field: query.from === undefined ? 'to' : 'from', message: `the range has ${to - from + 1} days; at most ${MAX_DAYS}` }]);
  }
  return { from, to };
}

/** Every day of from…to with its installs (0 when none). */
function series(from: number, to: number, installs: Map<string, number>): DayInstalls[] {
  const days: DayInstalls[] = [];
  for (let d = from; d <= to; d++) {
    const day = formatDay(d);
    days.push({ day, installs: installs.get(day) ?? 0 });
  }
  return days;
}

export interface StatsService {
  report(productId: string, query: { from?: string; to?: string }): Promise<StatsReport>;
  chart(productId: string): Promise<DownloadsChartModel>;
  /** The last complete day the product page shows now (see DAY_SETTLED_MS), as a day number (days.ts). */
  chartDay(): number;
}

export function statsService({ repo, now = Date.now }: { repo: DownloadCountsRepository; now?: () => number }): StatsService {
  const chartDay = () => dayOf(now() - DAY_SETTLED_MS) - 1;
  return {
    async report(productId, query) {
      const { from, to } = statsRange(query, dayOf(now()));
      const rows = await repo.installs(productId, formatDay(from), formatDay(to));
      const total = new Map<string, number>();
      const byLabel = new Map<string, Map<string, number>>();
      for (const r of rows) {
        total.set(r.day, (total.get(r.day) ?? 0) + r.installs);
        let days = byLabel.get(r.label);
        if (!days) {
          days = new Map();
          byLabel.set(r.label, days);
        }
        days.set(r.day, r.installs);
      }
      const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
      const labels = [...byLabel]
        .map(([label, days]) => ({ label, total: sum(days), days: series(from, to, days) }))
        .sort((a, b) => b.total - a.total || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
      return { productId, from: formatDay(from), to: formatDay(to), total: sum(total), days: series(from, to, total), labels };
    },

    async chart(productId) {
      const through = chartDay();
      const [rows, total] = await Promise.all([
        repo.installs(productId, formatDay(through - (CHART_DAYS - 1)), formatDay(through)),
        repo.totalInstalls(productId, formatDay(through)),
      ]);
      const perDay = new Map<string, number>();
      for (const r of rows) perDay.set(r.day, (perDay.get(r.day) ?? 0) + r.installs);
      return { total, days: series(through - (CHART_DAYS - 1), through, perDay), through: formatDay(through) };
    },

    chartDay,
  };
}

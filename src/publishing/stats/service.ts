/**
 * Download statistics (README "Download counts"): installs per day and label for the vendor
 * (`GET /api/products/<id>/stats`), and the product page's total and 90-day chart. What counts
 * as an install is decided where downloads are counted (stats/artifact.ts, repository.ts).
 *
 * Every answer is bounded whatever the number of labels and the days they were installed on: a
 * report covers at most MAX_DAYS days, lists days with installs only, and gives a series to at
 * most MAX_TOP labels (the most installed of all, or the one asked for), every other label
 * summed into one `other` series; it reads the rolled-up installs (tables/stats.ts) through
 * their keys, at most (top + 2) × MAX_DAYS rows, so it costs the serving loop little.
 */
import { ValidationError } from '../../infra/errors.js';
import { isLabel } from '../files/tree.js';
import { dayOf, formatDay, parseDay } from './days.js';
import type { DayInstalls, InstallsRepository } from './installs-repository.js';

export type { DayInstalls } from './installs-repository.js';

/** Days the report covers when `from` is not given: the last 90 through `to`. */
export const DEFAULT_DAYS = 90;
/** The longest range one report covers (a leap year): bounds every series of the answer. */
export const MAX_DAYS = 366;
/** Labels given a series of their own when the query does not say. */
export const DEFAULT_TOP = 10;
/**
 * The most labels one report gives a series of their own: with the day totals and `other`, a
 * report reads and answers at most (MAX_TOP + 2) × MAX_DAYS entries (about 4,400).
 */
export const MAX_TOP = 10;
/** Days the product page's chart shows. */
export const CHART_DAYS = 90;
/**
 * The product page shows complete UTC days only, from this long after midnight on: every
 * download host has flushed the day's last counts by then (counter.ts FLUSH_MS, with a margin
 * for a slow database). So a product's page re-renders for its counts once a day, not on every
 * flush (web/service.ts).
 */
export const DAY_SETTLED_MS = 60_000;

export interface LabelSeries {
  label: string;
  /** Installs in the range. */
  total: number;
  /** Every install of the label so far: what orders the labels. */
  allTime: number;
  /** Days of the range with installs, oldest first. */
  days: DayInstalls[];
}

export interface StatsReport {
  productId: string;
  from: string;
  to: string;
  /** Installs of every label in the range. */
  total: number;
  /** Days of the range with installs (all labels), oldest first. */
  days: DayInstalls[];
  labels: LabelSeries[];
  /** Every label not in `labels`, summed: its installs in the range and its days with installs. */
  other: { total: number; days: DayInstalls[] };
}

export interface StatsQuery {
  from?: string;
  to?: string;
  top?: number;
  label?: string;
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

/** The labels a report gives a series of their own: the one asked for, or the `top` most installed. */
function checkedLabelQuery(query: StatsQuery): { top: number; label: string | null } {
  const top = query.top ?? DEFAULT_TOP;
  if (!Number.isInteger(top) || top < 0 || top > MAX_TOP) throw new ValidationError(`top must be a whole number from 0 to ${MAX_TOP}`, [{ field: 'top', message: `${String(top).slice(0, 20)} is not 0…${MAX_TOP}` }]);
  if (query.label !== undefined && !isLabel(query.label)) throw new ValidationError('label must be a label name', [{ field: 'label', message: 'letters, digits, ".", "_" and "-", at most 128' }]);
  return { top, label: query.label ?? null };
}

/** Every day of from…to with its installs (0 when none): the chart's bars, a fixed CHART_DAYS of them. */
function filled(from: number, to: number, sparse: readonly DayInstalls[]): DayInstalls[] {
  const byDay = new Map(sparse.map((d) => [d.day, d.installs]));
  const days: DayInstalls[] = [];
  for (let d = from; d <= to; d++) {
    const day = formatDay(d);
    days.push({ day, installs: byDay.get(day) ?? 0 });
  }
  return days;
}

const sum = (days: readonly DayInstalls[]) => days.reduce((a, d) => a + d.installs, 0);

export interface StatsService {
  report(productId: string, query: StatsQuery): Promise<StatsReport>;
  /** Today (UTC) as a day number (days.ts), by the service's clock: what a report's defaults resolve against. */
  today(): number;
  chart(productId: string): Promise<DownloadsChartModel>;
  /** The last complete day the product page shows now (see DAY_SETTLED_MS), as a day number (days.ts). */
  chartDay(): number;
}

/** A report's query, checked and resolved against today (day number): what a report depends on. */
export interface ReportRequest {
  from: string;
  to: string;
  top: number;
  label: string | null;
}

/** The query checked (a 400 naming the field when bad) and its defaults resolved against `today`. */
export function reportRequest(query: StatsQuery, today: number): ReportRequest {
  const range = statsRange(query, today);
  const { top, label } = checkedLabelQuery(query);
  return { from: formatDay(range.from), to: formatDay(range.to), top, label };
}

/** The report of a checked request, read through `repo` (on the serving thread or in the catalog worker). */
export async function buildReport(repo: InstallsRepository, productId: string, { from, to, top, label }: ReportRequest): Promise<StatsReport> {
  const shown = label === null ? await repo.topLabels(productId, top) : [{ label, installs: await repo.labelTotal(productId, label) }];
  const [days, labelDays] = await Promise.all([repo.days(productId, from, to), repo.labelDays(productId, shown.map((l) => l.label), from, to)]);
  const byLabel = new Map<string, DayInstalls[]>(shown.map((l) => [l.label, []]));
  const shownOn = new Map<string, number>();
  for (const r of labelDays) {
    byLabel.get(r.label)?.push({ day: r.day, installs: r.installs });
    shownOn.set(r.day, (shownOn.get(r.day) ?? 0) + r.installs);
  }
  const labels = shown.map((l) => {
    const series = byLabel.get(l.label) ?? [];
    return { label: l.label, total: sum(series), allTime: l.installs, days: series };
  });
  const otherDays = days.map((d) => ({ day: d.day, installs: d.installs - (shownOn.get(d.day) ?? 0) })).filter((d) => d.installs > 0);
  const total = sum(days);
  return { productId, from, to, total, days, labels, other: { total: sum(otherDays), days: otherDays } };
}

export function statsService({ repo, now = Date.now }: { repo: InstallsRepository; now?: () => number }): StatsService {
  const chartDay = () => dayOf(now() - DAY_SETTLED_MS) - 1;
  return {
    today: () => dayOf(now()),

    report: async (productId, query) => buildReport(repo, productId, reportRequest(query, dayOf(now()))),

    async chart(productId) {
      const through = chartDay();
      const first = through - (CHART_DAYS - 1);
      const [days, total] = await Promise.all([repo.days(productId, formatDay(first), formatDay(through)), repo.totalThrough(productId, formatDay(through))]);
      return { total, days: filled(first, through, days), through: formatDay(through) };
    },

    chartDay,
  };
}

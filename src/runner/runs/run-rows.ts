import type { Selectable } from 'kysely';
import type { RunLogsTable, RunOutputsTable, RunsTable, RunStatus } from '../db/schema.js';

/*
 * A run's rows as stored (runs, run_logs, run_outputs) and the statuses a run moves through:
 * what the repository modules of this folder and everything that reads runs share.
 */

export type RunRow = Selectable<RunsTable>;
export type RunLogRow = Selectable<RunLogsTable>;
export type RunOutputRow = Selectable<RunOutputsTable>;

/** A run as it is queued: the counters that start at 0 are filled in by `insertRun`. */
export type NewRunRow = Omit<RunRow, 'log_ack' | 'handbacks'>;

/** The one list of statuses a run never leaves. */
export const TERMINAL: readonly RunStatus[] = ['succeeded', 'failed', 'cancelled'];
/** The statuses a run can still leave (cancel applies to these). */
export const ACTIVE: readonly RunStatus[] = ['queued', 'running', 'cancelling'];
/** The statuses in which an executor holds the run: they count against its capacity. */
export const HELD: readonly RunStatus[] = ['running', 'cancelling'];

export function isTerminal(status: RunStatus): boolean {
  return TERMINAL.includes(status);
}

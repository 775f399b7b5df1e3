import { setImmediate as nextTurn } from 'node:timers/promises';
import { ERROR_LINE, TailCollector } from './log-excerpt.js';
import type { RunsRepository } from './repository.js';
import type { RunRow } from './run-rows.js';

/*
 * A run's log read from its end (log-excerpt.ts collects the lines): what an assistant asks for
 * (the last lines, the error lines, the whole log within a size) costs what the answer costs,
 * not what the log costs. The caller has checked the caller's access to the run.
 */

export interface ExcerptInput {
  /** The attempt to read (default: the run's latest). */
  attempt?: number;
  /** The last this many lines (after the filter). */
  lines: number;
  /** At most this many bytes of text. */
  bytes: number;
  /** Only lines that name a failure (ERROR_LINE). */
  errorsOnly: boolean;
}

export interface LogExcerpt {
  run: RunRow;
  attempt: number;
  lines: string[];
  bytes: number;
  /** Lines of the attempt were left out (older ones, or by the filter). */
  truncated: boolean;
  /** The scan stopped at EXCERPT_SCAN_BYTES before reaching the attempt's start. */
  scanLimited: boolean;
}

/** An excerpt reads at most this much of a log backwards (errors-only on a huge log stops here). */
export const EXCERPT_SCAN_BYTES = 32 * 1024 * 1024;
const PAGE = 200;
/** Sequences are PostgreSQL integers: the first bound must fit one (int4), as every sequence does. */
const INT32_MAX = 2_147_483_647;

type LogSource = Pick<RunsRepository, 'logsBefore'>;

/** The last lines of one attempt's log within a line and byte budget. */
export async function readExcerpt(runs: LogSource, run: RunRow, input: ExcerptInput): Promise<LogExcerpt> {
  const attempt = input.attempt ?? Math.max(run.attempt, 1);
  const tail = new TailCollector({ lines: input.lines, bytes: input.bytes, keep: input.errorsOnly ? (l) => ERROR_LINE.test(l) : undefined });
  const scanLimited = !(await readBack(runs, run.id, attempt, tail, EXCERPT_SCAN_BYTES));
  // A scan cut short holds part of a line: it is left out rather than shown as if whole.
  if (!scanLimited) tail.finish();
  return { run, attempt, lines: tail.lines(), bytes: tail.bytes, truncated: tail.skipped || scanLimited, scanLimited };
}

/**
 * The log of every attempt as one text, each attempt under a heading when there are several;
 * its end when it is longer than `bytes` or `lines` (empty lines cost no bytes: the line limit
 * bounds them).
 */
export async function readLogText(runs: LogSource, run: RunRow, bytes: number, lines: number): Promise<{ run: RunRow; text: string; truncated: boolean }> {
  const tail = new TailCollector({ lines, bytes });
  let attempt = run.attempt;
  let cut = false;
  for (; attempt >= 1 && !tail.full; attempt--) {
    cut = !(await readBack(runs, run.id, attempt, tail, textScanBudget(bytes, lines)));
    tail.finish(run.attempt > 1 ? `--- attempt ${attempt} ---` : undefined);
    if (cut) break;
  }
  const kept = tail.lines();
  // Attempts not reached (the budget was spent on later ones) are left out too.
  return { run, text: kept.length ? `${kept.join('\n')}\n` : '', truncated: tail.skipped || cut || attempt >= 1 };
}

/**
 * How much of an attempt the whole-log read scans before it stops. Kept lines cost at least
 * their length in bytes and one newline each, so once more than `2 * bytes + lines` characters
 * were read without filling the budget, the oldest (pending) line is longer than the budget:
 * it is held clipped to its end (TailCollector.hold) and its start would not be shown anyway.
 * Without this bound a log with no line breaks was read whole for every request.
 */
function textScanBudget(bytes: number, lines: number): number {
  return 2 * bytes + lines + 64;
}

/** Feeds an attempt's chunks to `tail` from the end; false when `scanBytes` ran out first. */
async function readBack(runs: LogSource, runId: string, attempt: number, tail: TailCollector, scanBytes: number): Promise<boolean> {
  let before = INT32_MAX;
  let scanned = 0;
  while (!tail.full) {
    const rows = await runs.logsBefore(runId, attempt, before, PAGE);
    for (const row of rows) {
      tail.prepend(row.text);
      scanned += row.text.length;
      before = row.seq;
      if (tail.full) return true;
    }
    if (rows.length < PAGE) return true;
    if (scanned >= scanBytes) return false;
    // On SQLite every page is read synchronously: let other requests in between pages.
    await nextTurn();
  }
  return true;
}

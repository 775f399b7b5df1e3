import type { Kysely } from 'kysely';
import type { RunnerDB } from '../db/schema.js';
import { type Lease, lockLeased } from './leases-repository.js';
import { withinLogLimit } from './log-limit.js';
import type { RunLogRow } from './run-rows.js';

/*
 * A run's log as numbered chunks per attempt: appending what an executor ships under its lease
 * (idempotent, acknowledged up to the first gap, bounded by RUNNER_MAX_LOG_BYTES) and reading
 * it forward or back. RunsRepository (repository.ts) answers with these.
 */

/**
 * A log chunk may run at most this far ahead of the acknowledged sequence: sequences stay
 * bounded and nearly contiguous, so one stray chunk cannot push the log into nonsense numbers.
 */
export const LOG_WINDOW = 10_000;

/** A position in a run's log: chunks are ordered by attempt, then sequence. */
export interface LogPosition {
  attempt: number;
  seq: number;
}

/** `full` (set only when true): the attempt's log reached its limit; later chunks are acknowledged and dropped. */
export type AppendOutcome = { ack: number; full?: true } | 'stale-lease' | 'out-of-window';

/**
 * Stores numbered chunks of the lease's attempt; a sequence already stored is kept as it was
 * (retries are idempotent). Answers the highest sequence up to which this attempt's log has no
 * gap. The first statement writes the run row, which checks the lease and serialises appends
 * to one run (PostgreSQL row lock; SQLite write transaction), so `log_ack` never goes back.
 *
 * An attempt stores at most `maxBytes` of text (UTF-8): the chunk that crosses the limit is cut
 * there and ends with LOG_LIMIT_MARKER; later chunks are acknowledged (the executor must not
 * send them again) and dropped, so what an executor sends cannot grow the database further.
 */
export async function appendLogs(
  db: Kysely<RunnerDB>,
  runId: string,
  lease: Lease,
  chunks: { seq: number; text: string }[],
  now: string,
  maxBytes: number,
): Promise<AppendOutcome> {
  return db.transaction().execute(async (trx): Promise<AppendOutcome> => {
    const run = await lockLeased(trx, runId, lease);
    if (!run) return 'stale-lease';
    let ack = run.log_ack;
    if (chunks.some((c) => c.seq > ack + LOG_WINDOW)) return 'out-of-window';
    const size = await trx.selectFrom('run_log_sizes').select('bytes').where('run_id', '=', runId).where('attempt', '=', lease.attempt).executeTakeFirst();
    const before = Number(size?.bytes ?? 0);
    const { stored, bytes, full } = withinLogLimit(
      chunks.filter((c) => c.seq > ack),
      before,
      maxBytes,
    );
    if (stored.length > 0) {
      await trx
        .insertInto('run_logs')
        .values(stored.map((c) => ({ run_id: runId, attempt: lease.attempt, seq: c.seq, text: c.text, created_at: now })))
        .onConflict((oc) => oc.columns(['run_id', 'attempt', 'seq']).doNothing())
        .execute();
    }
    if (full) {
      // Nothing after the limit is kept: every sequence sent is taken as delivered.
      ack = Math.max(ack, ...chunks.map((c) => c.seq));
    } else if (stored.length > 0) {
      const seqs = await trx
        .selectFrom('run_logs')
        .select('seq')
        .where('run_id', '=', runId)
        .where('attempt', '=', lease.attempt)
        .where('seq', '>', ack)
        .orderBy('seq')
        .limit(LOG_WINDOW + 1)
        .execute();
      for (const { seq } of seqs) {
        if (seq !== ack + 1) break;
        ack = seq;
      }
    }
    if (ack !== run.log_ack) await trx.updateTable('runs').set({ log_ack: ack }).where('id', '=', runId).execute();
    if (bytes !== before) {
      await trx
        .insertInto('run_log_sizes')
        .values({ run_id: runId, attempt: lease.attempt, bytes })
        .onConflict((oc) => oc.columns(['run_id', 'attempt']).doUpdateSet({ bytes }))
        .execute();
    }
    return full ? { ack, full } : { ack };
  });
}

/** Chunks after `after`, of one attempt or of all attempts in order (attempt, then sequence). */
export function logsAfter(db: Kysely<RunnerDB>, runId: string, after: LogPosition, limit: number, attempt?: number): Promise<RunLogRow[]> {
  let q = db.selectFrom('run_logs').selectAll().where('run_id', '=', runId);
  if (attempt !== undefined) q = q.where('attempt', '=', attempt).where('seq', '>', after.seq);
  else q = q.where((eb) => eb.or([eb('attempt', '>', after.attempt), eb.and([eb('attempt', '=', after.attempt), eb('seq', '>', after.seq)])]));
  return q.orderBy('attempt').orderBy('seq').limit(limit).execute();
}

/** Chunks of one attempt before sequence `before`, newest first (reading a log from its end). */
export function logsBefore(db: Kysely<RunnerDB>, runId: string, attempt: number, before: number, limit: number): Promise<RunLogRow[]> {
  return db
    .selectFrom('run_logs')
    .selectAll()
    .where('run_id', '=', runId)
    .where('attempt', '=', attempt)
    .where('seq', '<', before)
    .orderBy('seq', 'desc')
    .limit(limit)
    .execute();
}

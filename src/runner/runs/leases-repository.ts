import { type Kysely, sql, type Transaction } from 'kysely';
import type { DialectName } from '../../infra/database/index.js';
import type { RunnerDB } from '../db/schema.js';
import { HELD, type RunRow } from './run-rows.js';

/*
 * The leases by which executors hold runs: checking and extending them, ending them (a
 * completion, a hand-back, an executor restarted or removed) and the lost-executor sweep that
 * takes runs back from leases that ran out. A run that goes back to the queue loses its
 * attempt's outputs in the same transaction. RunsRepository (repository.ts) answers with these.
 */

/** Default of RUNNER_MAX_ATTEMPTS: a run whose executor vanished is taken this many times in all. */
export const MAX_ATTEMPTS = 3;

export interface Lease {
  hash: string;
  attempt: number;
}

/** A run put back in the queue and the attempt it lost (whose outputs are dropped). */
export interface LostAttempt {
  id: string;
  attempt: number;
}

export interface SweepResult {
  requeued: string[];
  /** The requeued runs with the attempt each lost: their output rows are gone, files to remove. */
  lost: LostAttempt[];
  failed: string[];
  cancelled: string[];
}

/** What a completion did: `refused` when the run was being cancelled and the executor reported another end. */
export type CompleteOutcome = { run: RunRow; refused: boolean } | null;

/**
 * A requeued run loses the outputs its lost attempt uploaded: the next attempt starts clean, so
 * a run never lists a file an earlier attempt left. Same transaction as the requeue.
 */
async function dropOutputs(trx: Kysely<RunnerDB>, runIds: string[]): Promise<void> {
  if (runIds.length > 0) await trx.deleteFrom('run_outputs').where('run_id', 'in', runIds).execute();
}

/**
 * Locks the run if `lease` still holds it, by a no-op write of its row (PostgreSQL row lock;
 * on SQLite it makes the transaction a write transaction from its start); undefined otherwise.
 */
export function lockLeased(trx: Transaction<RunnerDB>, id: string, lease: Lease) {
  return trx
    .updateTable('runs')
    .set((eb) => ({ log_ack: eb.ref('log_ack') }))
    .where('id', '=', id)
    .where('status', 'in', HELD)
    .where('lease_hash', '=', lease.hash)
    .where('attempt', '=', lease.attempt)
    .returning(['log_ack', 'status'])
    .executeTakeFirst();
}

/**
 * The lost-executor sweep: runs whose lease ran out (their executor stopped sending
 * heartbeats, or was removed) go back to the queue to be taken again as attempt + 1, or fail
 * as "executor lost" once they were taken `maxAttempts` times; a run being cancelled ends as
 * cancelled. Each statement only touches rows still matching, so racing sweeps are harmless.
 */
export async function sweepExpiredLeases(db: Kysely<RunnerDB>, now: string, maxAttempts: number): Promise<SweepResult> {
  return db.transaction().execute(async (trx) => {
    const expired = (q: typeof trx) => q.updateTable('runs').where('lease_expires_at', '<', now);
    const cancelled = await expired(trx)
      .set({ status: 'cancelled', finished_at: now, lease_hash: null, lease_expires_at: null, error: 'executor lost while cancelling' })
      .where('status', '=', 'cancelling')
      .returning('id')
      .execute();
    const failed = await expired(trx)
      .set({ status: 'failed', finished_at: now, lease_hash: null, lease_expires_at: null, error: 'executor lost' })
      .where('status', '=', 'running')
      .where((eb) => eb(eb('attempt', '-', eb.ref('handbacks')), '>=', maxAttempts))
      .returning('id')
      .execute();
    const requeued = await expired(trx)
      .set({ status: 'queued', executor_id: null, lease_hash: null, lease_expires_at: null, log_ack: 0 })
      .where('status', '=', 'running')
      .returning(['id', 'attempt'])
      .execute();
    await dropOutputs(trx, requeued.map((r) => r.id));
    return {
      requeued: requeued.map((r) => r.id),
      lost: requeued.map((r) => ({ id: r.id, attempt: r.attempt })),
      failed: failed.map((r) => r.id),
      cancelled: cancelled.map((r) => r.id),
    };
  });
}

/**
 * Runs `work` unless another instance runs work under the same `lockKey` right now; null then.
 * PostgreSQL: a transaction-level advisory lock held while `work` runs (released on commit,
 * also if this process dies). SQLite: one process serves the file, `work` just runs.
 */
export async function exclusively<T>(db: Kysely<RunnerDB>, dialect: DialectName, lockKey: number, work: () => Promise<T>): Promise<T | null> {
  if (dialect !== 'postgres') return work();
  return db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ locked: boolean }>`SELECT pg_try_advisory_xact_lock(${lockKey}) AS locked`.execute(trx);
    if (!rows[0]?.locked) return null;
    return work();
  });
}

/** The run, if `lease` still holds it (running or cancelling, same lease and attempt); else null. */
export async function leasedRun(db: Kysely<RunnerDB>, id: string, lease: Lease): Promise<RunRow | null> {
  const row = await db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row || !HELD.includes(row.status) || row.lease_hash !== lease.hash || row.attempt !== lease.attempt) return null;
  return row;
}

/**
 * Extends the leases of the held runs the executor reported in its heartbeat (`runIds`). A
 * held run it does not report (say the claim's answer never reached it) is left to expire, and
 * the sweeper re-queues it: extending every held run would keep a forgotten one forever.
 */
export async function extendLeases(db: Kysely<RunnerDB>, executorId: string, runIds: string[], leaseExpiresAt: string): Promise<void> {
  if (runIds.length === 0) return;
  await db
    .updateTable('runs')
    .set({ lease_expires_at: leaseExpiresAt })
    .where('executor_id', '=', executorId)
    .where('id', 'in', runIds)
    .where('status', 'in', HELD)
    .execute();
}

/**
 * Ends now the leases of every run `executorId` holds: its process restarted and holds none of
 * them. The sweeper then re-queues them (attempt + 1) or fails them, as for a lost executor.
 */
export async function endLeasesOf(db: Kysely<RunnerDB>, executorId: string, now: string): Promise<void> {
  await db
    .updateTable('runs')
    .set({ lease_expires_at: now })
    .where('executor_id', '=', executorId)
    .where('status', 'in', HELD)
    .where('lease_expires_at', '>', now)
    .execute();
}

/**
 * Undoes a claim whose answer could not be delivered (the client went away): the run goes back
 * to the queue as it was, without using up an attempt. Only while the claim's lease still holds
 * it and nothing was logged or uploaded under it.
 */
export async function unclaim(db: Kysely<RunnerDB>, id: string, lease: Lease): Promise<boolean> {
  const row = await db
    .updateTable('runs')
    .set((eb) => ({ status: 'queued', executor_id: null, lease_hash: null, lease_expires_at: null, log_ack: 0, attempt: eb('attempt', '-', 1) }))
    .where('id', '=', id)
    .where('status', '=', 'running')
    .where('lease_hash', '=', lease.hash)
    .where('attempt', '=', lease.attempt)
    .where('log_ack', '=', 0)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Ids of the executor's runs that are being cancelled (its next heartbeat delivers them). */
export async function cancellingIds(db: Kysely<RunnerDB>, executorId: string): Promise<string[]> {
  const rows = await db.selectFrom('runs').select('id').where('executor_id', '=', executorId).where('status', '=', 'cancelling').execute();
  return rows.map((r) => r.id);
}

/** Of `ids`, those the executor does not hold any more (re-queued, taken by another, ended). */
export async function notHeldBy(db: Kysely<RunnerDB>, executorId: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const held = await db
    .selectFrom('runs')
    .select('id')
    .where('id', 'in', ids)
    .where('executor_id', '=', executorId)
    .where('status', 'in', HELD)
    .execute();
  const keep = new Set(held.map((r) => r.id));
  return ids.filter((id) => !keep.has(id));
}

/**
 * Finishes a held run; null when the lease no longer holds it. Cancel and completion race for
 * the run row and the first to commit wins: a cancel that committed first made the run
 * `cancelling`, and then only the executor's confirmation (`cancelled`) is taken as reported; a
 * success or failure reported now is refused (`refused`): the run ends cancelled without an
 * exit code. A run that ends cancelled keeps no outputs (rows dropped here, files by the caller),
 * so status, exit code and outputs agree. A completion that committed first leaves the run
 * finished, and the cancel finds nothing to cancel.
 */
export async function complete(
  db: Kysely<RunnerDB>,
  id: string,
  lease: Lease,
  result: { status: 'succeeded' | 'failed' | 'cancelled'; exitCode: number | null; error: string | null },
  now: string,
): Promise<CompleteOutcome> {
  return db.transaction().execute(async (trx): Promise<CompleteOutcome> => {
    const held = await lockLeased(trx, id, lease);
    if (!held) return null;
    const refused = held.status === 'cancelling' && result.status !== 'cancelled';
    const end = refused
      ? { status: 'cancelled' as const, exit_code: null, error: 'cancelled while it was finishing: its result and outputs were discarded' }
      : { status: held.status === 'cancelling' ? ('cancelled' as const) : result.status, exit_code: result.exitCode, error: result.error };
    const run = await trx
      .updateTable('runs')
      .set({ ...end, finished_at: now, lease_hash: null, lease_expires_at: null })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (run.status === 'cancelled') await dropOutputs(trx, [id]);
    return { run, refused };
  });
}

/**
 * Puts a held run back in the queue (its executor shuts down and hands it back); it is taken
 * again as attempt + 1, but the hand-back does not count toward the maximum of attempts
 * (`handbacks`). A run being cancelled ends as cancelled instead. Null: lease gone.
 */
export async function release(db: Kysely<RunnerDB>, id: string, lease: Lease, now: string): Promise<RunRow | null> {
  return db.transaction().execute(async (trx) => {
    const held = (q: typeof trx) =>
      q.updateTable('runs').where('id', '=', id).where('lease_hash', '=', lease.hash).where('attempt', '=', lease.attempt);
    const cancelled = await held(trx)
      .set({ status: 'cancelled', finished_at: now, lease_hash: null, lease_expires_at: null })
      .where('status', '=', 'cancelling')
      .returningAll()
      .executeTakeFirst();
    if (cancelled) return cancelled;
    const queued = await held(trx)
      .set((eb) => ({ status: 'queued', executor_id: null, lease_hash: null, lease_expires_at: null, log_ack: 0, handbacks: eb('handbacks', '+', 1) }))
      .where('status', '=', 'running')
      .returningAll()
      .executeTakeFirst();
    if (queued) await dropOutputs(trx, [queued.id]);
    return queued ?? null;
  });
}

/**
 * Puts the runs an executor held back in the queue (executor removed), dropping the lost
 * attempts' output rows; cancelling ones end. Answers the requeued runs and attempts lost, and
 * how many runs ended cancelled.
 */
export async function requeueExecutorRuns(db: Kysely<RunnerDB>, executorId: string, now: string): Promise<{ lost: LostAttempt[]; cancelled: number }> {
  return db.transaction().execute(async (trx) => {
    const cancelled = await trx
      .updateTable('runs')
      .set({ status: 'cancelled', finished_at: now, lease_hash: null, lease_expires_at: null })
      .where('executor_id', '=', executorId)
      .where('status', '=', 'cancelling')
      .executeTakeFirst();
    const rows = await trx
      .updateTable('runs')
      .set((eb) => ({ status: 'queued', executor_id: null, lease_hash: null, lease_expires_at: null, log_ack: 0, handbacks: eb('handbacks', '+', 1) }))
      .where('executor_id', '=', executorId)
      .where('status', '=', 'running')
      .returning(['id', 'attempt'])
      .execute();
    await dropOutputs(trx, rows.map((r) => r.id));
    return { lost: rows.map((r) => ({ id: r.id, attempt: r.attempt })), cancelled: Number(cancelled.numUpdatedRows) };
  });
}

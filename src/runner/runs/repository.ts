import type { Kysely, Selectable } from 'kysely';
import type { DialectName } from '../../infra/database/index.js';
import type { RunLogsTable, RunnerDB, RunOutputsTable, RunsTable, RunStatus } from '../db/schema.js';

export type RunRow = Selectable<RunsTable>;
export type RunLogRow = Selectable<RunLogsTable>;
export type RunOutputRow = Selectable<RunOutputsTable>;

/** The one list of statuses a run never leaves. */
export const TERMINAL: readonly RunStatus[] = ['succeeded', 'failed', 'cancelled'];
/** The statuses a run can still leave (cancel applies to these). */
export const ACTIVE: readonly RunStatus[] = ['queued', 'running'];

export function isTerminal(status: RunStatus): boolean {
  return TERMINAL.includes(status);
}
/** A run whose executor vanished is retried this many times in all, then fails as "executor lost". */
export const MAX_ATTEMPTS = 3;

export interface RunFilter {
  /** Restrict to projects this user is a member of; null = all projects. */
  memberUserId: string | null;
  projectId?: string;
  workflowId?: string;
  status?: RunStatus;
  limit: number;
  /** Keyset cursor: the last row of the previous page (runs are listed newest first). */
  after?: { createdAt: string; id: string };
}

export interface Lease {
  hash: string;
  attempt: number;
}

export class RunsRepository {
  constructor(
    private readonly db: Kysely<RunnerDB>,
    private readonly dialect: DialectName,
  ) {}

  async create(row: RunRow): Promise<RunRow> {
    await this.db.insertInto('runs').values(row).execute();
    return row;
  }

  findById(id: string): Promise<RunRow | undefined> {
    return this.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst();
  }

  list(f: RunFilter): Promise<RunRow[]> {
    let q = this.db.selectFrom('runs').selectAll();
    if (f.memberUserId !== null) {
      const userId = f.memberUserId;
      q = q.where('project_id', 'in', (eb) =>
        eb.selectFrom('project_members').select('project_id').where('user_id', '=', userId),
      );
    }
    if (f.projectId) q = q.where('project_id', '=', f.projectId);
    if (f.workflowId) q = q.where('workflow_id', '=', f.workflowId);
    if (f.status) q = q.where('status', '=', f.status);
    if (f.after) {
      const { createdAt, id } = f.after;
      q = q.where((eb) => eb.or([eb('created_at', '<', createdAt), eb.and([eb('created_at', '=', createdAt), eb('id', '<', id)])]));
    }
    return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(f.limit).execute();
  }

  /** Cancels a queued or running run; returns the updated row, or null when it already ended. */
  async cancel(id: string, now: string): Promise<RunRow | null> {
    const r = await this.db
      .updateTable('runs')
      .set({ status: 'cancelled', finished_at: now, lease_hash: null, lease_expires_at: null })
      .where('id', '=', id)
      .where('status', 'in', ACTIVE)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) return null;
    return (await this.findById(id)) ?? null;
  }

  /**
   * Runs whose lease ran out (their executor stopped sending heartbeats) go back to the queue,
   * or fail as "executor lost" after MAX_ATTEMPTS.
   */
  async expireLeases(now: string): Promise<void> {
    await this.db
      .updateTable('runs')
      .set({ status: 'failed', finished_at: now, lease_hash: null, lease_expires_at: null, error: 'executor lost' })
      .where('status', '=', 'running')
      .where('lease_expires_at', '<', now)
      .where('attempt', '>=', MAX_ATTEMPTS)
      .execute();
    await this.db
      .updateTable('runs')
      .set({ status: 'queued', executor_id: null, lease_hash: null, lease_expires_at: null })
      .where('status', '=', 'running')
      .where('lease_expires_at', '<', now)
      .execute();
  }

  /**
   * Atomically takes the oldest queued run for an executor: one UPDATE whose subquery picks the
   * row (`FOR UPDATE SKIP LOCKED` on PostgreSQL, so concurrent claims skip each other's row;
   * SQLite runs the single statement under its database write lock).
   */
  async claim(executorId: string, leaseHash: string, leaseExpiresAt: string, now: string): Promise<RunRow | null> {
    return this.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('runs')
        .set((eb) => ({
          status: 'running',
          executor_id: executorId,
          lease_hash: leaseHash,
          lease_expires_at: leaseExpiresAt,
          attempt: eb('attempt', '+', 1),
          started_at: now,
        }))
        .where('status', '=', 'queued')
        .where('id', '=', (eb) => {
          const pick = eb
            .selectFrom('runs')
            .select('id')
            .where('status', '=', 'queued')
            .orderBy('created_at')
            .orderBy('id')
            .limit(1);
          return this.dialect === 'postgres' ? pick.forUpdate().skipLocked() : pick;
        })
        .returningAll()
        .executeTakeFirst();
      return row ?? null;
    });
  }

  /** The run, if `lease` still holds it (status running, same lease and attempt); else null. */
  async leased(id: string, lease: Lease): Promise<RunRow | null> {
    const row = await this.findById(id);
    if (row?.status !== 'running' || row.lease_hash !== lease.hash || row.attempt !== lease.attempt) return null;
    return row;
  }

  /** Extends the leases of the executor's running runs (its heartbeat). */
  async extendLeases(executorId: string, leaseExpiresAt: string): Promise<void> {
    await this.db
      .updateTable('runs')
      .set({ lease_expires_at: leaseExpiresAt })
      .where('executor_id', '=', executorId)
      .where('status', '=', 'running')
      .execute();
  }

  async runningCount(executorId: string): Promise<number> {
    const r = await this.db
      .selectFrom('runs')
      .where('executor_id', '=', executorId)
      .where('status', '=', 'running')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Next log sequence number of a run (sequences continue across attempts). */
  async nextLogSeq(runId: string): Promise<number> {
    const r = await this.db
      .selectFrom('run_logs')
      .where('run_id', '=', runId)
      .select((eb) => eb.fn.max<number | null>('seq').as('m'))
      .executeTakeFirst();
    return Number(r?.m ?? 0) + 1;
  }

  /**
   * Stores numbered chunks; a sequence already stored is kept as it was (retries are
   * idempotent). Returns the highest sequence up to which the log has no gap.
   */
  async appendLogs(runId: string, attempt: number, chunks: { seq: number; text: string }[], now: string): Promise<number> {
    if (chunks.length) {
      await this.db
        .insertInto('run_logs')
        .values(chunks.map((c) => ({ run_id: runId, seq: c.seq, attempt, text: c.text, created_at: now })))
        .onConflict((oc) => oc.columns(['run_id', 'seq']).doNothing())
        .execute();
    }
    const seqs = await this.db.selectFrom('run_logs').select('seq').where('run_id', '=', runId).orderBy('seq').execute();
    let ack = 0;
    for (const { seq } of seqs) {
      if (seq !== ack + 1) break;
      ack = seq;
    }
    return ack;
  }

  logs(runId: string, after: number, limit: number): Promise<RunLogRow[]> {
    return this.db
      .selectFrom('run_logs')
      .selectAll()
      .where('run_id', '=', runId)
      .where('seq', '>', after)
      .orderBy('seq')
      .limit(limit)
      .execute();
  }

  /** Finishes a leased run and records its outputs; null when the lease no longer holds. */
  async complete(
    id: string,
    lease: Lease,
    result: { status: 'succeeded' | 'failed'; exitCode: number | null; error: string | null },
    outputs: Omit<RunOutputRow, 'run_id' | 'created_at'>[],
    now: string,
  ): Promise<RunRow | null> {
    return this.db.transaction().execute(async (trx) => {
      const r = await trx
        .updateTable('runs')
        .set({
          status: result.status,
          exit_code: result.exitCode,
          error: result.error,
          finished_at: now,
          lease_hash: null,
          lease_expires_at: null,
        })
        .where('id', '=', id)
        .where('status', '=', 'running')
        .where('lease_hash', '=', lease.hash)
        .where('attempt', '=', lease.attempt)
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0) return null;
      if (outputs.length) {
        await trx
          .insertInto('run_outputs')
          .values(outputs.map((o) => ({ ...o, run_id: id, created_at: now })))
          .onConflict((oc) => oc.columns(['run_id', 'name']).doNothing())
          .execute();
      }
      return (await trx.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst()) ?? null;
    });
  }

  outputs(runId: string): Promise<RunOutputRow[]> {
    return this.db.selectFrom('run_outputs').selectAll().where('run_id', '=', runId).orderBy('name').execute();
  }

  /** Puts the runs an executor was running back in the queue (executor removed). */
  async requeueExecutorRuns(executorId: string): Promise<void> {
    await this.db
      .updateTable('runs')
      .set({ status: 'queued', executor_id: null, lease_hash: null, lease_expires_at: null })
      .where('executor_id', '=', executorId)
      .where('status', '=', 'running')
      .execute();
  }
}

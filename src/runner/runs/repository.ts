import type { ExpressionBuilder, Kysely } from 'kysely';
import type { DialectName } from '../../infra/database/index.js';
import type { RunnerDB, RunStatus } from '../db/schema.js';
import { type ClaimOutcome, claimRun, heldCount, queueDepth } from './claims-repository.js';
import {
  type CompleteOutcome,
  cancellingIds,
  complete,
  endLeasesOf,
  exclusively,
  extendLeases,
  type Lease,
  type LostAttempt,
  leasedRun,
  notHeldBy,
  release,
  requeueExecutorRuns,
  type SweepResult,
  sweepExpiredLeases,
  unclaim,
} from './leases-repository.js';
import { type AppendOutcome, appendLogs, type LogPosition, logsAfter, logsBefore } from './logs-repository.js';
import { outputOf, outputsOf, type RecordOutcome, recordOutput } from './outputs-repository.js';
import { runListQuery } from './list-query.js';
import { ACTIVE, type NewRunRow, type RunLogRow, type RunOutputRow, type RunRow } from './run-rows.js';

export interface RunFilter {
  /** Restrict to projects this user is a member of; null = all projects. */
  memberUserId: string | null;
  projectId?: string;
  workflowId?: string;
  status?: RunStatus;
  scheduleId?: string;
  createdBy?: string;
  /** Created at or after / before these instants (ISO 8601, as stored). */
  since?: string;
  until?: string;
  limit: number;
  /** Keyset cursor: the last row of the previous page (runs are listed newest first). */
  after?: { createdAt: string; id: string };
}

/**
 * Inserts a new run on `db`, which may be a transaction of another repository (the scheduler
 * queues a run in the same transaction that takes the fire, schedules/repository.ts).
 */
export async function insertRun(db: Kysely<RunnerDB>, row: NewRunRow): Promise<RunRow> {
  const full = { ...row, log_ack: 0, handbacks: 0 };
  await db.insertInto('runs').values(full).execute();
  return full;
}

/**
 * The runs table group (runs, run_logs, run_log_sizes, run_outputs) as one repository, so a service
 * holds one object. Queueing, reading and cancelling a run are here; the rest is answered by
 * the module of its concern, where its rules are written down: the queue as executors take it
 * (claims-repository.ts), the leases that hold runs and the sweep that takes them back
 * (leases-repository.ts), log chunks (logs-repository.ts) and outputs (outputs-repository.ts).
 */
export class RunsRepository {
  constructor(
    private readonly db: Kysely<RunnerDB>,
    private readonly dialect: DialectName,
  ) {}

  create(row: NewRunRow): Promise<RunRow> {
    return insertRun(this.db, row);
  }

  findById(id: string): Promise<RunRow | undefined> {
    return this.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async list(f: RunFilter): Promise<RunRow[]> {
    const { memberUserId, ...rest } = f;
    const projectIds =
      memberUserId === null ? null : (await this.db.selectFrom('project_members').select('project_id').where('user_id', '=', memberUserId).orderBy('project_id').execute()).map((r) => r.project_id);
    return (await runListQuery(this.db, { ...rest, projectIds })?.execute()) ?? [];
  }

  /**
   * Cancels a run: a queued one ends as `cancelled` at once; a running one becomes `cancelling`
   * and keeps its lease, so it still counts against its executor's capacity until the executor
   * confirms the kill (its process may still be running). Returns the updated row, or null
   * when it already ended.
   */
  async cancel(id: string, now: string): Promise<RunRow | null> {
    // ONE statement for both cases: as two UPDATEs, a sweep requeueing the run between them made
    // both miss (409 "already ended", and the run ran again). On PostgreSQL a row
    // changed meanwhile is re-read and the CASEs see its new status.
    const queued = (eb: ExpressionBuilder<RunnerDB, 'runs'>) => eb('status', '=', 'queued');
    return (
      (await this.db
        .updateTable('runs')
        .set((eb) => ({
          status: eb.case().when(queued(eb)).then('cancelled').else('cancelling').end().$castTo<RunStatus>(),
          finished_at: eb.case().when(queued(eb)).then(now).else(eb.ref('finished_at')).end(),
          lease_hash: eb.case().when(queued(eb)).then(null).else(eb.ref('lease_hash')).end(),
          lease_expires_at: eb.case().when(queued(eb)).then(null).else(eb.ref('lease_expires_at')).end(),
        }))
        .where('id', '=', id)
        .where('status', 'in', ACTIVE)
        .returningAll()
        .executeTakeFirst()) ?? null
    );
  }

  // The queue as executors take it (claims-repository.ts).

  claim(executorId: string, address: string, leaseHash: string, leaseExpiresAt: string, now: string): Promise<ClaimOutcome> {
    return claimRun(this.db, this.dialect, executorId, address, leaseHash, leaseExpiresAt, now);
  }

  heldCount(executorId: string): Promise<number> {
    return heldCount(this.db, executorId);
  }

  queueDepth(labels: string[]): Promise<{ total: number; byLabel: Map<string, number> }> {
    return queueDepth(this.db, this.dialect, labels);
  }

  // Leases, their ends and the lost-executor sweep (leases-repository.ts).

  sweepExpiredLeases(now: string, maxAttempts: number): Promise<SweepResult> {
    return sweepExpiredLeases(this.db, now, maxAttempts);
  }

  exclusively<T>(lockKey: number, work: () => Promise<T>): Promise<T | null> {
    return exclusively(this.db, this.dialect, lockKey, work);
  }

  leased(id: string, lease: Lease): Promise<RunRow | null> {
    return leasedRun(this.db, id, lease);
  }

  extendLeases(executorId: string, runIds: string[], leaseExpiresAt: string): Promise<void> {
    return extendLeases(this.db, executorId, runIds, leaseExpiresAt);
  }

  endLeasesOf(executorId: string, now: string): Promise<void> {
    return endLeasesOf(this.db, executorId, now);
  }

  unclaim(id: string, lease: Lease): Promise<boolean> {
    return unclaim(this.db, id, lease);
  }

  cancellingIds(executorId: string): Promise<string[]> {
    return cancellingIds(this.db, executorId);
  }

  notHeldBy(executorId: string, ids: string[]): Promise<string[]> {
    return notHeldBy(this.db, executorId, ids);
  }

  complete(
    id: string,
    lease: Lease,
    result: { status: 'succeeded' | 'failed' | 'cancelled'; exitCode: number | null; error: string | null },
    now: string,
  ): Promise<CompleteOutcome> {
    return complete(this.db, id, lease, result, now);
  }

  release(id: string, lease: Lease, now: string): Promise<RunRow | null> {
    return release(this.db, id, lease, now);
  }

  requeueExecutorRuns(executorId: string, now: string): Promise<{ lost: LostAttempt[]; cancelled: number }> {
    return requeueExecutorRuns(this.db, executorId, now);
  }

  // Log chunks (logs-repository.ts).

  appendLogs(runId: string, lease: Lease, chunks: { seq: number; text: string }[], now: string, maxBytes = Number.POSITIVE_INFINITY): Promise<AppendOutcome> {
    return appendLogs(this.db, runId, lease, chunks, now, maxBytes);
  }

  logs(runId: string, after: LogPosition, limit: number, attempt?: number): Promise<RunLogRow[]> {
    return logsAfter(this.db, runId, after, limit, attempt);
  }

  logsBefore(runId: string, attempt: number, before: number, limit: number): Promise<RunLogRow[]> {
    return logsBefore(this.db, runId, attempt, before, limit);
  }

  // Outputs (outputs-repository.ts).

  recordOutput(id: string, lease: Lease, output: Omit<RunOutputRow, 'run_id'>): Promise<RecordOutcome> {
    return recordOutput(this.db, id, lease, output);
  }

  outputs(runId: string): Promise<RunOutputRow[]> {
    return outputsOf(this.db, runId);
  }

  output(runId: string, name: string): Promise<RunOutputRow | undefined> {
    return outputOf(this.db, runId, name);
  }
}

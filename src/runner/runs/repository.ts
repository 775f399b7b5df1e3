import { type ExpressionBuilder, type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import type { DialectName } from '../../infra/database/index.js';
import type { RunLogsTable, RunnerDB, RunOutputsTable, RunsTable, RunStatus } from '../db/schema.js';
import { runListQuery } from './list-query.js';

export type RunRow = Selectable<RunsTable>;
export type RunLogRow = Selectable<RunLogsTable>;
export type RunOutputRow = Selectable<RunOutputsTable>;

/** The one list of statuses a run never leaves. */
export const TERMINAL: readonly RunStatus[] = ['succeeded', 'failed', 'cancelled'];
/** The statuses a run can still leave (cancel applies to these). */
export const ACTIVE: readonly RunStatus[] = ['queued', 'running', 'cancelling'];
/** The statuses in which an executor holds the run: they count against its capacity. */
export const HELD: readonly RunStatus[] = ['running', 'cancelling'];

export function isTerminal(status: RunStatus): boolean {
  return TERMINAL.includes(status);
}
/** Default of RUNNER_MAX_ATTEMPTS: a run whose executor vanished is taken this many times in all. */
export const MAX_ATTEMPTS = 3;
/**
 * A log chunk may run at most this far ahead of the acknowledged sequence: sequences stay
 * bounded and nearly contiguous, so one stray chunk cannot push the log into nonsense numbers.
 */
export const LOG_WINDOW = 10_000;

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

export interface Lease {
  hash: string;
  attempt: number;
}

/** A position in a run's log: chunks are ordered by attempt, then sequence. */
export interface LogPosition {
  attempt: number;
  seq: number;
}

export type ClaimOutcome = { run: RunRow } | 'unknown-executor' | 'draining' | 'at-capacity' | 'nothing-queued';

/** `full` (set only when true): the attempt's log reached its limit; later chunks are acknowledged and dropped. */
export type AppendOutcome = { ack: number; full?: true } | 'stale-lease' | 'out-of-window';

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
function lockLeased(trx: Transaction<RunnerDB>, id: string, lease: Lease) {
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

/** What a completion did: `refused` when the run was being cancelled and the executor reported another end. */
export type CompleteOutcome = { run: RunRow; refused: boolean } | null;

/** What an output record did: `cancelling` when the run is being cancelled (it takes no outputs). */
export type RecordOutcome = 'recorded' | 'stale-lease' | 'cancelling';

/** A run as it is queued: the counters that start at 0 are filled in by `insertRun`. */
export type NewRunRow = Omit<RunRow, 'log_ack' | 'handbacks'>;

/**
 * Inserts a new run on `db`, which may be a transaction of another repository (the scheduler
 * queues a run in the same transaction that takes the fire, schedules/repository.ts).
 */
export async function insertRun(db: Kysely<RunnerDB>, row: NewRunRow): Promise<RunRow> {
  const full = { ...row, log_ack: 0, handbacks: 0 };
  await db.insertInto('runs').values(full).execute();
  return full;
}

/** The line that ends an attempt's log cut at RUNNER_MAX_LOG_BYTES. */
export function logLimitMarker(maxBytes: number): string {
  return `[pier] this attempt's log reached its limit of ${formatBytes(maxBytes)} (RUNNER_MAX_LOG_BYTES): the rest of its output was dropped\n`;
}

function formatBytes(n: number): string {
  for (const [unit, size] of [['GiB', 1024 ** 3], ['MiB', 1024 ** 2], ['KiB', 1024]] as const) {
    if (n >= size && n % size === 0) return `${n / size} ${unit}`;
  }
  return `${n} bytes`;
}

/**
 * The longest start of `text` that is at most `maxBytes` in UTF-8, never splitting a character
 * (a surrogate pair counts as one four-byte character).
 */
export function utf8Prefix(text: string, maxBytes: number): string {
  let bytes = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    const size = pair ? 4 : c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
    if (bytes + size > maxBytes) break;
    bytes += size;
    i += pair ? 2 : 1;
  }
  return text.slice(0, i);
}

/**
 * The chunks (by sequence) that fit in an attempt's log holding `before` bytes of `maxBytes`:
 * the one that crosses the limit is cut there and ends with the marker, which takes the count
 * past `maxBytes`: from then on the log is `full` and nothing more is stored. Out-of-order chunks count too, so the bound holds
 * whatever order an executor sends them in.
 */
export function withinLogLimit(
  chunks: { seq: number; text: string }[],
  before: number,
  maxBytes: number,
): { stored: { seq: number; text: string }[]; bytes: number; full: boolean } {
  let bytes = before;
  // Past the limit only once the marker was stored (it takes the count beyond `maxBytes`).
  let full = bytes > maxBytes;
  const stored: { seq: number; text: string }[] = [];
  for (const c of [...chunks].sort((a, b) => a.seq - b.seq)) {
    if (full) break;
    const size = Buffer.byteLength(c.text);
    if (bytes + size <= maxBytes) {
      stored.push(c);
      bytes += size;
      continue;
    }
    const head = utf8Prefix(c.text, maxBytes - bytes);
    const marker = logLimitMarker(maxBytes);
    const text = `${head}${head === '' || head.endsWith('\n') ? '' : '\n'}${marker}`;
    stored.push({ seq: c.seq, text });
    bytes += Buffer.byteLength(text);
    full = true;
  }
  return { stored, bytes, full };
}

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

  /**
   * The lost-executor sweep: runs whose lease ran out (their executor stopped sending
   * heartbeats, or was removed) go back to the queue to be taken again as attempt + 1, or fail
   * as "executor lost" once they were taken `maxAttempts` times; a run being cancelled ends as
   * cancelled. Each statement only touches rows still matching, so racing sweeps are harmless.
   */
  async sweepExpiredLeases(now: string, maxAttempts: number): Promise<SweepResult> {
    return this.db.transaction().execute(async (trx) => {
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
  async exclusively<T>(lockKey: number, work: () => Promise<T>): Promise<T | null> {
    if (this.dialect !== 'postgres') return work();
    return this.db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ locked: boolean }>`SELECT pg_try_advisory_xact_lock(${lockKey}) AS locked`.execute(trx);
      if (!rows[0]?.locked) return null;
      return work();
    });
  }

  /**
   * Takes the oldest queued run the executor may run, in ONE write transaction that also checks
   * its capacity (checked outside it, ten parallel claims of a capacity-1 executor got ten
   * runs). On PostgreSQL the steps run as one function call (migration 0008 `pier_claim_run`),
   * on SQLite as below:
   * 1. the executor row is written first (its heartbeat): on PostgreSQL that locks the row, so
   *    claims of one executor queue behind each other and each counts the runs of the previous
   *    one; on SQLite the first statement being a write makes the transaction a write
   *    transaction from its start (as BEGIN IMMEDIATE), and this process has one connection;
   * 2. one UPDATE marks the oldest queued run whose required labels are all among the
   *    executor's labels running with attempt + 1, if its held runs (running + cancelling)
   *    are fewer than its capacity; the run is picked `FOR UPDATE SKIP LOCKED` on PostgreSQL,
   *    so concurrent claimers, also on other instances, skip each other's row.
   */
  async claim(
    executorId: string,
    address: string,
    leaseHash: string,
    leaseExpiresAt: string,
    now: string,
  ): Promise<ClaimOutcome> {
    if (this.dialect === 'postgres') {
      // The same steps in one round trip: migration 0008's pier_claim_run.
      const { rows } = await sql<{ outcome: Exclude<ClaimOutcome, { run: RunRow }> | 'claimed'; claimed: RunRow | null }>`
        SELECT outcome, claimed FROM pier_claim_run(${executorId}, ${address}, ${leaseHash}, ${leaseExpiresAt}, ${now})`.execute(this.db);
      const row = rows[0];
      if (!row) throw new Error('pier_claim_run answered nothing');
      return row.outcome === 'claimed' && row.claimed ? { run: row.claimed } : row.outcome === 'claimed' ? 'nothing-queued' : row.outcome;
    }
    return this.db.transaction().execute(async (trx): Promise<ClaimOutcome> => {
      const executor = await trx
        .updateTable('executors')
        .set({ last_heartbeat_at: now, last_ip: address })
        .where('id', '=', executorId)
        .returning(['labels', 'capacity', 'draining'])
        .executeTakeFirst();
      if (!executor) return 'unknown-executor';
      if (executor.draining) return 'draining';
      // One statement, inside the write transaction (nothing else writes meanwhile).
      const { rows } = await sql<RunRow>`UPDATE runs SET status = 'running', executor_id = ${executorId}, lease_hash = ${leaseHash},
          lease_expires_at = ${leaseExpiresAt}, attempt = attempt + 1, started_at = ${now}, log_ack = 0
        WHERE id = (SELECT id FROM runs WHERE status = 'queued' AND (required_labels = '[]' OR ${this.labelsSubset(executor.labels)})
                    ORDER BY created_at, id LIMIT 1)
          AND status = 'queued'
          AND (SELECT COUNT(*) FROM runs WHERE executor_id = ${executorId} AND status IN ('running', 'cancelling')) < ${executor.capacity}
        RETURNING *`.execute(trx);
      const run = rows[0];
      if (run) return { run };
      // Nothing taken: say why (the long-poll waits either way).
      return (await this.heldCountIn(trx, executorId)) >= executor.capacity ? 'at-capacity' : 'nothing-queued';
    });
  }

  private async heldCountIn(db: Kysely<RunnerDB>, executorId: string): Promise<number> {
    const r = await db
      .selectFrom('runs')
      .where('executor_id', '=', executorId)
      .where('status', 'in', HELD)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /**
   * Queued runs in all, and for each of `labels` the queued runs that require it (metrics, read
   * at scrape; `labels` are the executors' own, so the answer has at most that many entries).
   */
  async queueDepth(labels: string[]): Promise<{ total: number; byLabel: Map<string, number> }> {
    const counted = await this.db
      .selectFrom('runs')
      .where('status', '=', 'queued')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirstOrThrow();
    const total = Number(counted.n);
    const byLabel = new Map(labels.map((l) => [l, 0]));
    if (labels.length > 0 && total > 0) {
      const labelsJson = JSON.stringify(labels);
      const { rows } =
        this.dialect === 'postgres'
          ? await sql<{ label: string; n: number | string }>`SELECT l AS label, COUNT(*) AS n
              FROM runs CROSS JOIN LATERAL jsonb_array_elements_text(runs.required_labels::jsonb) AS l
              WHERE runs.status = 'queued' AND l IN (SELECT jsonb_array_elements_text(${labelsJson}::jsonb)) GROUP BY l`.execute(this.db)
          : await sql<{ label: string; n: number | string }>`SELECT r.value AS label, COUNT(*) AS n
              FROM runs, json_each(runs.required_labels) r
              WHERE runs.status = 'queued' AND r.value IN (SELECT value FROM json_each(${labelsJson})) GROUP BY r.value`.execute(this.db);
      for (const r of rows) byLabel.set(r.label, Number(r.n));
    }
    return { total, byLabel };
  }

  /** SQL: every label of `runs.required_labels` (a JSON array) is in `labelsJson`. */
  private labelsSubset(labelsJson: string) {
    return this.dialect === 'postgres'
      ? sql<boolean>`required_labels::jsonb <@ ${labelsJson}::jsonb`
      : sql<boolean>`NOT EXISTS (SELECT 1 FROM json_each(required_labels) r WHERE r.value NOT IN (SELECT value FROM json_each(${labelsJson})))`;
  }

  /** The run, if `lease` still holds it (running or cancelling, same lease and attempt); else null. */
  async leased(id: string, lease: Lease): Promise<RunRow | null> {
    const row = await this.findById(id);
    if (!row || !HELD.includes(row.status) || row.lease_hash !== lease.hash || row.attempt !== lease.attempt) return null;
    return row;
  }

  /**
   * Extends the leases of the held runs the executor reported in its heartbeat (`runIds`). A
   * held run it does not report (say the claim's answer never reached it) is left to expire, and
   * the sweeper re-queues it: extending every held run would keep a forgotten one forever.
   */
  async extendLeases(executorId: string, runIds: string[], leaseExpiresAt: string): Promise<void> {
    if (runIds.length === 0) return;
    await this.db
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
  async endLeasesOf(executorId: string, now: string): Promise<void> {
    await this.db
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
  async unclaim(id: string, lease: Lease): Promise<boolean> {
    const row = await this.db
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

  /** Runs held by the executor (running and cancelling both use up its capacity). */
  async heldCount(executorId: string): Promise<number> {
    return this.heldCountIn(this.db, executorId);
  }

  /** Ids of the executor's runs that are being cancelled (its next heartbeat delivers them). */
  async cancellingIds(executorId: string): Promise<string[]> {
    const rows = await this.db.selectFrom('runs').select('id').where('executor_id', '=', executorId).where('status', '=', 'cancelling').execute();
    return rows.map((r) => r.id);
  }

  /** Of `ids`, those the executor does not hold any more (re-queued, taken by another, ended). */
  async notHeldBy(executorId: string, ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const held = await this.db
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
   * Stores numbered chunks of the lease's attempt; a sequence already stored is kept as it was
   * (retries are idempotent). Answers the highest sequence up to which this attempt's log has no
   * gap. The first statement writes the run row, which checks the lease and serialises appends
   * to one run (PostgreSQL row lock; SQLite write transaction), so `log_ack` never goes back.
   *
   * An attempt stores at most `maxBytes` of text (UTF-8): the chunk that crosses the limit is cut
   * there and ends with LOG_LIMIT_MARKER; later chunks are acknowledged (the executor must not
   * send them again) and dropped, so what an executor sends cannot grow the database further.
   */
  async appendLogs(
    runId: string,
    lease: Lease,
    chunks: { seq: number; text: string }[],
    now: string,
    maxBytes = Number.POSITIVE_INFINITY,
  ): Promise<AppendOutcome> {
    return this.db.transaction().execute(async (trx): Promise<AppendOutcome> => {
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
  logs(runId: string, after: LogPosition, limit: number, attempt?: number): Promise<RunLogRow[]> {
    let q = this.db.selectFrom('run_logs').selectAll().where('run_id', '=', runId);
    if (attempt !== undefined) q = q.where('attempt', '=', attempt).where('seq', '>', after.seq);
    else q = q.where((eb) => eb.or([eb('attempt', '>', after.attempt), eb.and([eb('attempt', '=', after.attempt), eb('seq', '>', after.seq)])]));
    return q.orderBy('attempt').orderBy('seq').limit(limit).execute();
  }

  /** Chunks of one attempt before sequence `before`, newest first (reading a log from its end). */
  logsBefore(runId: string, attempt: number, before: number, limit: number): Promise<RunLogRow[]> {
    return this.db
      .selectFrom('run_logs')
      .selectAll()
      .where('run_id', '=', runId)
      .where('attempt', '=', attempt)
      .where('seq', '<', before)
      .orderBy('seq', 'desc')
      .limit(limit)
      .execute();
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
  async complete(
    id: string,
    lease: Lease,
    result: { status: 'succeeded' | 'failed' | 'cancelled'; exitCode: number | null; error: string | null },
    now: string,
  ): Promise<CompleteOutcome> {
    return this.db.transaction().execute(async (trx): Promise<CompleteOutcome> => {
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
  async release(id: string, lease: Lease, now: string): Promise<RunRow | null> {
    return this.db.transaction().execute(async (trx) => {
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
   * Records (or replaces) one uploaded output of a held run that is running; a run being
   * cancelled takes none (it will end cancelled, without outputs).
   */
  async recordOutput(id: string, lease: Lease, output: Omit<RunOutputRow, 'run_id'>): Promise<RecordOutcome> {
    return this.db.transaction().execute(async (trx): Promise<RecordOutcome> => {
      const run = await lockLeased(trx, id, lease);
      if (!run) return 'stale-lease';
      if (run.status !== 'running') return 'cancelling';
      await trx
        .insertInto('run_outputs')
        .values({ ...output, run_id: id })
        .onConflict((oc) =>
          oc.columns(['run_id', 'name']).doUpdateSet({ size: output.size, sha256: output.sha256, content_type: output.content_type, created_at: output.created_at }),
        )
        .execute();
      return 'recorded';
    });
  }

  outputs(runId: string): Promise<RunOutputRow[]> {
    return this.db.selectFrom('run_outputs').selectAll().where('run_id', '=', runId).orderBy('name').execute();
  }

  output(runId: string, name: string): Promise<RunOutputRow | undefined> {
    return this.db.selectFrom('run_outputs').selectAll().where('run_id', '=', runId).where('name', '=', name).executeTakeFirst();
  }

  /**
   * Puts the runs an executor held back in the queue (executor removed), dropping the lost
   * attempts' output rows; cancelling ones end. Answers the requeued runs and attempts lost, and
   * how many runs ended cancelled.
   */
  async requeueExecutorRuns(executorId: string, now: string): Promise<{ lost: LostAttempt[]; cancelled: number }> {
    return this.db.transaction().execute(async (trx) => {
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
}

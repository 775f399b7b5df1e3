import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../../infra/database/index.js';
import type { RunnerDB } from '../db/schema.js';
import { HELD, type RunRow } from './run-rows.js';

/*
 * The queue as executors see it: taking the oldest run an executor may run within its
 * capacity, the runs it holds, and the queue's depth per label. RunsRepository (repository.ts)
 * answers with these.
 */

export type ClaimOutcome = { run: RunRow } | 'unknown-executor' | 'draining' | 'at-capacity' | 'nothing-queued';

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
export async function claimRun(
  db: Kysely<RunnerDB>,
  dialect: DialectName,
  executorId: string,
  address: string,
  leaseHash: string,
  leaseExpiresAt: string,
  now: string,
): Promise<ClaimOutcome> {
  if (dialect === 'postgres') {
    // The same steps in one round trip: migration 0008's pier_claim_run.
    const { rows } = await sql<{ outcome: Exclude<ClaimOutcome, { run: RunRow }> | 'claimed'; claimed: RunRow | null }>`
      SELECT outcome, claimed FROM pier_claim_run(${executorId}, ${address}, ${leaseHash}, ${leaseExpiresAt}, ${now})`.execute(db);
    const row = rows[0];
    if (!row) throw new Error('pier_claim_run answered nothing');
    return row.outcome === 'claimed' && row.claimed ? { run: row.claimed } : row.outcome === 'claimed' ? 'nothing-queued' : row.outcome;
  }
  return db.transaction().execute(async (trx): Promise<ClaimOutcome> => {
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
      WHERE id = (SELECT id FROM runs WHERE status = 'queued' AND (required_labels = '[]' OR ${labelsSubset(dialect, executor.labels)})
                  ORDER BY created_at, id LIMIT 1)
        AND status = 'queued'
        AND (SELECT COUNT(*) FROM runs WHERE executor_id = ${executorId} AND status IN ('running', 'cancelling')) < ${executor.capacity}
      RETURNING *`.execute(trx);
    const run = rows[0];
    if (run) return { run };
    // Nothing taken: say why (the long-poll waits either way).
    return (await heldCount(trx, executorId)) >= executor.capacity ? 'at-capacity' : 'nothing-queued';
  });
}

/** Runs held by the executor (running and cancelling both use up its capacity). */
export async function heldCount(db: Kysely<RunnerDB>, executorId: string): Promise<number> {
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
export async function queueDepth(db: Kysely<RunnerDB>, dialect: DialectName, labels: string[]): Promise<{ total: number; byLabel: Map<string, number> }> {
  const counted = await db
    .selectFrom('runs')
    .where('status', '=', 'queued')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow();
  const total = Number(counted.n);
  const byLabel = new Map(labels.map((l) => [l, 0]));
  if (labels.length > 0 && total > 0) {
    const labelsJson = JSON.stringify(labels);
    const { rows } =
      dialect === 'postgres'
        ? await sql<{ label: string; n: number | string }>`SELECT l AS label, COUNT(*) AS n
            FROM runs CROSS JOIN LATERAL jsonb_array_elements_text(runs.required_labels::jsonb) AS l
            WHERE runs.status = 'queued' AND l IN (SELECT jsonb_array_elements_text(${labelsJson}::jsonb)) GROUP BY l`.execute(db)
        : await sql<{ label: string; n: number | string }>`SELECT r.value AS label, COUNT(*) AS n
            FROM runs, json_each(runs.required_labels) r
            WHERE runs.status = 'queued' AND r.value IN (SELECT value FROM json_each(${labelsJson})) GROUP BY r.value`.execute(db);
    for (const r of rows) byLabel.set(r.label, Number(r.n));
  }
  return { total, byLabel };
}

/** SQL: every label of `runs.required_labels` (a JSON array) is in `labelsJson`. */
function labelsSubset(dialect: DialectName, labelsJson: string) {
  return dialect === 'postgres'
    ? sql<boolean>`required_labels::jsonb <@ ${labelsJson}::jsonb`
    : sql<boolean>`NOT EXISTS (SELECT 1 FROM json_each(required_labels) r WHERE r.value NOT IN (SELECT value FROM json_each(${labelsJson})))`;
}

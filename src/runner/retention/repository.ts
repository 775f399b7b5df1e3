import { type Kysely, sql } from 'kysely';
import type { RunnerDB } from '../db/schema.js';
import { TERMINAL } from '../runs/run-rows.js';

/** The query of `finishedBefore` (its plan is tested). */
export function finishedBeforeQuery(db: Kysely<RunnerDB>, cutoff: string, limit: number) {
  return (
    db
      .selectFrom('runs')
      .select('id')
      .where('finished_at', '<', cutoff)
      // `status || ''` keeps SQLite's planner off the (status, lease) index: with it, the pass
      // read every finished run and sorted them (200,000 runs: 100 ms holding the serving loop
      // every pass), where `runs_finished` reads just the oldest, in order, up to the limit.
      .where(sql<string>`${sql.ref('status')} || ''`, 'in', TERMINAL)
      .orderBy('finished_at')
      .orderBy('id')
      .limit(limit)
  );
}

/** The runs retention may delete: finished (terminal status) before the cutoff. */
export class RetentionRepository {
  constructor(private readonly db: Kysely<RunnerDB>) {}

  /** Of `ids`, those that are runs. */
  async existing(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db.selectFrom('runs').select('id').where('id', 'in', ids).execute();
    return new Set(rows.map((r) => r.id));
  }

  /** Ids of up to `limit` runs that finished before `cutoff`, oldest first. Queued and running runs never qualify. */
  async finishedBefore(cutoff: string, limit: number): Promise<string[]> {
    const rows = await finishedBeforeQuery(this.db, cutoff, limit).execute();
    return rows.map((r) => r.id);
  }

  /**
   * Deletes up to `limit` log chunks of these runs (if they are still finished before the
   * cutoff); returns how many. A chatty run has many thousands of chunks: deleting them a bounded
   * number at a time keeps every write statement short.
   */
  async deleteLogChunk(ids: string[], cutoff: string, limit: number): Promise<number> {
    if (ids.length === 0) return 0;
    const r = await this.db
      .deleteFrom('run_logs')
      .where(({ eb, refTuple, selectFrom }) =>
        eb(
          // (run_id, attempt, seq) names one chunk whether sequences run per run or per attempt.
          refTuple('run_id', 'attempt', 'seq'),
          'in',
          selectFrom('run_logs')
            .select(['run_id', 'attempt', 'seq'])
            .where('run_id', 'in', (sub) =>
              sub.selectFrom('runs').select('id').where('id', 'in', ids).where('finished_at', '<', cutoff).where('status', 'in', TERMINAL),
            )
            .limit(limit)
            .$asTuple('run_id', 'attempt', 'seq'),
        ),
      )
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  /**
   * Deletes these runs with their log chunks and output rows in one short transaction. The
   * conditions are checked again, so a run can never be deleted unless it is still finished
   * before the cutoff. Returns how many runs were deleted.
   */
  async deleteRuns(ids: string[], cutoff: string): Promise<number> {
    if (ids.length === 0) return 0;
    return this.db.transaction().execute(async (trx) => {
      const doomed = trx
        .selectFrom('runs')
        .select('id')
        .where('id', 'in', ids)
        .where('finished_at', '<', cutoff)
        .where('status', 'in', TERMINAL);
      await trx.deleteFrom('run_logs').where('run_id', 'in', doomed).execute();
      await trx.deleteFrom('run_outputs').where('run_id', 'in', doomed).execute();
      const r = await trx
        .deleteFrom('runs')
        .where('id', 'in', ids)
        .where('finished_at', '<', cutoff)
        .where('status', 'in', TERMINAL)
        .executeTakeFirst();
      return Number(r.numDeletedRows);
    });
  }
}

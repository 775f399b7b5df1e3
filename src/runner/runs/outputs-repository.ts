import type { Kysely } from 'kysely';
import type { RunnerDB } from '../db/schema.js';
import { type Lease, lockLeased } from './leases-repository.js';
import type { RunOutputRow } from './run-rows.js';

/*
 * The rows of the files a run's attempt uploaded (the files themselves: output-storage.ts).
 * A run that goes back to the queue or ends cancelled loses them with its lease
 * (leases-repository.ts). RunsRepository (repository.ts) answers with these.
 */

/** What an output record did: `cancelling` when the run is being cancelled (it takes no outputs). */
export type RecordOutcome = 'recorded' | 'stale-lease' | 'cancelling';

/**
 * Records (or replaces) one uploaded output of a held run that is running; a run being
 * cancelled takes none (it will end cancelled, without outputs).
 */
export async function recordOutput(db: Kysely<RunnerDB>, id: string, lease: Lease, output: Omit<RunOutputRow, 'run_id'>): Promise<RecordOutcome> {
  return db.transaction().execute(async (trx): Promise<RecordOutcome> => {
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

export function outputsOf(db: Kysely<RunnerDB>, runId: string): Promise<RunOutputRow[]> {
  return db.selectFrom('run_outputs').selectAll().where('run_id', '=', runId).orderBy('name').execute();
}

export function outputOf(db: Kysely<RunnerDB>, runId: string, name: string): Promise<RunOutputRow | undefined> {
  return db.selectFrom('run_outputs').selectAll().where('run_id', '=', runId).where('name', '=', name).executeTakeFirst();
}

import type { Kysely } from 'kysely';
import type { RunnerDB } from '../db/schema.js';

/** An output record with the attempt its run is at (outputs are stored per attempt). */
export interface OutputRecord {
  run_id: string;
  name: string;
  size: number;
  sha256: string | null;
  attempt: number;
}

/**
 * The runner's records of stored files, whole: what a restore compares with the files it
 * restored (workflow archives, run outputs). Read once per restore, never on a request path.
 */
export class StoredFileRecordsRepository {
  constructor(private readonly db: Kysely<RunnerDB>) {}

  /** Every workflow version's archive. */
  archives(): Promise<{ workflow_id: string; storage_key: string }[]> {
    return this.db.selectFrom('workflow_versions').select(['workflow_id', 'storage_key']).execute();
  }

  /** Every output record, with its run's current attempt. */
  async outputs(): Promise<OutputRecord[]> {
    const rows = await this.db
      .selectFrom('run_outputs')
      .innerJoin('runs', 'runs.id', 'run_outputs.run_id')
      .select(['run_outputs.run_id', 'run_outputs.name', 'run_outputs.size', 'run_outputs.sha256', 'runs.attempt'])
      .execute();
    return rows.map((r) => ({ ...r, size: Number(r.size), attempt: Number(r.attempt) }));
  }

  async dropOutput(runId: string, name: string): Promise<void> {
    await this.db.deleteFrom('run_outputs').where('run_id', '=', runId).where('name', '=', name).execute();
  }

  /** Makes an output record describe the file that is stored under its name. */
  async correctOutput(runId: string, name: string, size: number, sha256: string): Promise<void> {
    await this.db.updateTable('run_outputs').set({ size, sha256 }).where('run_id', '=', runId).where('name', '=', name).execute();
  }
}

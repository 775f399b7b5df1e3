import type { Kysely, Selectable } from 'kysely';
import type { RunnerDB, WorkflowsTable, WorkflowVersionsTable } from '../db/schema.js';
import { lockProjects } from '../projects/repository.js';

export type WorkflowRow = Selectable<WorkflowsTable>;
export type WorkflowVersionRow = Selectable<WorkflowVersionsTable>;
/** A version as listed: with the name and email of who uploaded it (null once they are deleted). */
export type VersionListing = WorkflowVersionRow & { author_name: string | null; author_email: string | null };
/** A workflow with its latest version's declared parameters (JSON). */
export type WorkflowWithParameters = WorkflowRow & { declared_parameters: string };
/** A version to store: its declared parameters default to none. */
type NewVersion = Omit<WorkflowVersionRow, 'workflow_id' | 'version' | 'declared_parameters'> & { declared_parameters?: string };
/** Bytes a project's stored versions take, and its quota (0: no limit). */
export interface StorageUsage {
  usedBytes: number;
  limitBytes: number;
}
/** Answer of an insert refused because the project's stored versions would pass its quota. */
export interface StorageFull {
  full: StorageUsage;
}

/** The bytes of every stored version of the project's workflows. */
async function storageUsed(db: Kysely<RunnerDB>, projectId: string): Promise<number> {
  const { used } = await db
    .selectFrom('workflow_versions')
    .innerJoin('workflows', 'workflows.id', 'workflow_versions.workflow_id')
    .where('workflows.project_id', '=', projectId)
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('workflow_versions.size'), eb.lit(0)).as('used'))
    .executeTakeFirstOrThrow();
  // PostgreSQL answers a sum of bigint as numeric, which pg hands over as a string.
  return Number(used);
}

/**
 * Inside a transaction that is about to store `adding` bytes for the project: null when they fit
 * its quota, else the usage that refuses them. The project's row is locked first (a row lock on
 * PostgreSQL, taken by a no-op UPDATE since SQLite has no SELECT … FOR UPDATE; SQLite's write
 * transactions begin IMMEDIATE and are serialized anyway), so concurrent uploads to the project,
 * also through other instances, sum and insert one after the other and cannot pass the quota
 * together. With no limit nothing is locked or summed.
 */
async function refusedByQuota(trx: Kysely<RunnerDB>, projectId: string, adding: number, limitBytes: number): Promise<StorageFull | null> {
  if (limitBytes === 0) return null;
  await lockProjects(trx, [projectId]);
  const usedBytes = await storageUsed(trx, projectId);
  return usedBytes + adding > limitBytes ? { full: { usedBytes, limitBytes } } : null;
}

export class WorkflowsRepository {
  constructor(private readonly db: Kysely<RunnerDB>) {}

  /** Inserts the workflow with its version 1, without a quota (see createWithin). */
  async create(w: Omit<WorkflowRow, 'latest_version'>, v: NewVersion): Promise<WorkflowRow> {
    return (await this.createWithin(w, v, 0)) as WorkflowRow;
  }

  /**
   * Inserts the workflow with its version 1, unless the version would take the project past
   * `limitBytes` (0: no limit); then nothing is written and the usage is answered.
   */
  async createWithin(w: Omit<WorkflowRow, 'latest_version'>, v: NewVersion, limitBytes: number): Promise<WorkflowRow | StorageFull> {
    const row: WorkflowRow = { ...w, latest_version: 1 };
    return this.db.transaction().execute(async (trx) => {
      const refused = await refusedByQuota(trx, w.project_id, Number(v.size), limitBytes);
      if (refused) return refused;
      await trx.insertInto('workflows').values(row).execute();
      await trx.insertInto('workflow_versions').values({ declared_parameters: '[]', ...v, workflow_id: w.id, version: 1 }).execute();
      return row;
    });
  }

  /** What the project's stored versions take now, against `limitBytes`. */
  async storage(projectId: string, limitBytes: number): Promise<StorageUsage> {
    return { usedBytes: await storageUsed(this.db, projectId), limitBytes };
  }

  /**
   * Adds the next version and returns it, or undefined when the workflow is gone. The number is
   * taken by incrementing the workflow's counter in the inserting transaction: the UPDATE locks
   * the workflow row (PostgreSQL) or the database (SQLite), so a concurrent upload waits for this
   * one to commit and then increments the committed value. No upload can lose the race. A version
   * that would take the project past `limitBytes` (0: no limit) is refused with nothing written
   * (see refusedByQuota; the project is locked before the workflow, in the order every path takes).
   */
  async addNextVersionWithin(v: NewVersion & { workflow_id: string }, now: string, limitBytes: number): Promise<WorkflowVersionRow | StorageFull | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const owner = await trx.selectFrom('workflows').select('project_id').where('id', '=', v.workflow_id).executeTakeFirst();
      if (!owner) return undefined;
      const refused = await refusedByQuota(trx, owner.project_id, Number(v.size), limitBytes);
      if (refused) return refused;
      const taken = await trx
        .updateTable('workflows')
        .set((eb) => ({ latest_version: eb('latest_version', '+', 1), updated_at: now }))
        .where('id', '=', v.workflow_id)
        .returning('latest_version')
        .executeTakeFirst();
      if (!taken) return undefined;
      const row: WorkflowVersionRow = { declared_parameters: '[]', ...v, version: Number(taken.latest_version) };
      await trx.insertInto('workflow_versions').values(row).execute();
      return row;
    });
  }

  /** Adds the next version without a quota (see addNextVersionWithin). */
  async addNextVersion(v: NewVersion & { workflow_id: string }, now: string): Promise<WorkflowVersionRow | undefined> {
    return (await this.addNextVersionWithin(v, now, 0)) as WorkflowVersionRow | undefined;
  }

  findById(id: string): Promise<WorkflowRow | undefined> {
    return this.db.selectFrom('workflows').selectAll().where('id', '=', id).executeTakeFirst();
  }

  listByProject(projectId: string): Promise<WorkflowRow[]> {
    return this.db.selectFrom('workflows').selectAll().where('project_id', '=', projectId).orderBy('name').orderBy('id').execute();
  }

  /**
   * Workflows with the parameters their latest version declares, by name: of one project, or of
   * the projects `memberUserId` belongs to (null: every project).
   */
  listWithLatest(f: { memberUserId: string | null; projectId?: string; limit: number }): Promise<WorkflowWithParameters[]> {
    let q = this.db
      .selectFrom('workflows')
      .innerJoin('workflow_versions', (j) =>
        j.onRef('workflow_versions.workflow_id', '=', 'workflows.id').onRef('workflow_versions.version', '=', 'workflows.latest_version'),
      )
      .selectAll('workflows')
      .select('workflow_versions.declared_parameters');
    const userId = f.memberUserId;
    if (userId !== null) q = q.where('workflows.project_id', 'in', (eb) => eb.selectFrom('project_members').select('project_id').where('user_id', '=', userId));
    if (f.projectId) q = q.where('workflows.project_id', '=', f.projectId);
    return q.orderBy('workflows.name').orderBy('workflows.id').limit(f.limit).execute();
  }

  private listed() {
    return this.db
      .selectFrom('workflow_versions')
      .leftJoin('users', 'users.id', 'workflow_versions.created_by')
      .selectAll('workflow_versions')
      .select(['users.name as author_name', 'users.email as author_email']);
  }

  versions(workflowId: string): Promise<VersionListing[]> {
    return this.listed().where('workflow_versions.workflow_id', '=', workflowId).orderBy('workflow_versions.version', 'desc').execute();
  }

  version(workflowId: string, version: number): Promise<VersionListing | undefined> {
    return this.listed().where('workflow_versions.workflow_id', '=', workflowId).where('workflow_versions.version', '=', version).executeTakeFirst();
  }

  /**
   * Deletes the workflow with its versions and runs (foreign keys cascade). Answers the ids of
   * the runs deleted, whose output files the caller removes; null when there was no workflow.
   */
  async delete(id: string): Promise<string[] | null> {
    return this.db.transaction().execute(async (trx) => {
      const runs = await trx.selectFrom('runs').select('id').where('workflow_id', '=', id).execute();
      const r = await trx.deleteFrom('workflows').where('id', '=', id).executeTakeFirst();
      return Number(r.numDeletedRows) > 0 ? runs.map((row) => row.id) : null;
    });
  }
}

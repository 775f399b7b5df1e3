import type { Kysely, Selectable } from 'kysely';
import type { RunnerDB, WorkflowsTable, WorkflowVersionsTable } from '../db/schema.js';

export type WorkflowRow = Selectable<WorkflowsTable>;
export type WorkflowVersionRow = Selectable<WorkflowVersionsTable>;
/** A version as listed: with the name and email of who uploaded it (null once they are deleted). */
export type VersionListing = WorkflowVersionRow & { author_name: string | null; author_email: string | null };
/** A workflow with its latest version's declared parameters (JSON). */
export type WorkflowWithParameters = WorkflowRow & { declared_parameters: string };
/** A version to store: its declared parameters default to none. */
type NewVersion = Omit<WorkflowVersionRow, 'workflow_id' | 'version' | 'declared_parameters'> & { declared_parameters?: string };

export class WorkflowsRepository {
  constructor(private readonly db: Kysely<RunnerDB>) {}

  async create(w: Omit<WorkflowRow, 'latest_version'>, v: NewVersion): Promise<WorkflowRow> {
    const row: WorkflowRow = { ...w, latest_version: 1 };
    await this.db.transaction().execute(async (trx) => {
      await trx.insertInto('workflows').values(row).execute();
      await trx.insertInto('workflow_versions').values({ declared_parameters: '[]', ...v, workflow_id: w.id, version: 1 }).execute();
    });
    return row;
  }

  /**
   * Adds the next version and returns it, or undefined when the workflow is gone. The number is
   * taken by incrementing the workflow's counter in the inserting transaction: the UPDATE locks
   * the workflow row (PostgreSQL) or the database (SQLite), so a concurrent upload waits for this
   * one to commit and then increments the committed value. No upload can lose the race.
   */
  async addNextVersion(v: NewVersion & { workflow_id: string }, now: string): Promise<WorkflowVersionRow | undefined> {
    return this.db.transaction().execute(async (trx) => {
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

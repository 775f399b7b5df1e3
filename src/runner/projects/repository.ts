import type { Kysely, Selectable } from 'kysely';
import type { ProjectMembersTable, ProjectsTable, RunnerDB } from '../db/schema.js';

export type ProjectRow = Selectable<ProjectsTable>;
export type MemberRole = ProjectMembersTable['role'];
export type MemberRow = Selectable<ProjectMembersTable> & { email: string; name: string };
export type ProjectSummaryRow = ProjectRow & { role: MemberRole | null; workflow_count: number; member_count: number; run_count: number };

export class ProjectsRepository {
  constructor(private readonly db: Kysely<RunnerDB>) {}

  /** Creates the project with its creator as owner, in one transaction. */
  async create(p: { id: string; name: string; description: string; ownerId: string; now: string }): Promise<ProjectRow> {
    const row: ProjectRow = {
      id: p.id,
      name: p.name,
      description: p.description,
      created_by: p.ownerId,
      created_at: p.now,
      updated_at: p.now,
    };
    await this.db.transaction().execute(async (trx) => {
      await trx.insertInto('projects').values(row).execute();
      await trx
        .insertInto('project_members')
        .values({ project_id: p.id, user_id: p.ownerId, role: 'owner', created_at: p.now })
        .execute();
    });
    return row;
  }

  findById(id: string): Promise<ProjectRow | undefined> {
    return this.db.selectFrom('projects').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * The projects `viewerId` is a member of (or all of them, for administrators), by name, each
   * with the viewer's role and how many workflows, members and runs it holds.
   */
  async list(viewerId: string, all: boolean): Promise<ProjectSummaryRow[]> {
    const rows = await this.db
      .selectFrom('projects')
      .leftJoin('project_members as mine', (j) => j.onRef('mine.project_id', '=', 'projects.id').on('mine.user_id', '=', viewerId))
      .selectAll('projects')
      .select('mine.role as role')
      .select((eb) => [
        eb.selectFrom('workflows').select(eb.fn.countAll().as('n')).whereRef('workflows.project_id', '=', 'projects.id').as('workflow_count'),
        eb.selectFrom('project_members').select(eb.fn.countAll().as('n')).whereRef('project_members.project_id', '=', 'projects.id').as('member_count'),
        eb.selectFrom('runs').select(eb.fn.countAll().as('n')).whereRef('runs.project_id', '=', 'projects.id').as('run_count'),
      ])
      .$if(!all, (q) => q.where('mine.user_id', 'is not', null))
      .orderBy('projects.name')
      .orderBy('projects.id')
      .execute();
    // COUNT is a bigint on PostgreSQL (a string in the driver), an integer on SQLite.
    return rows.map((r) => ({ ...r, role: r.role ?? null, workflow_count: Number(r.workflow_count), member_count: Number(r.member_count), run_count: Number(r.run_count) }));
  }

  async update(id: string, changes: { name?: string; description?: string }, now: string): Promise<ProjectRow | undefined> {
    await this.db
      .updateTable('projects')
      .set({ ...changes, updated_at: now })
      .where('id', '=', id)
      .execute();
    return this.findById(id);
  }

  /**
   * Deletes the project with its workflows, runs and schedules (foreign keys cascade). Answers
   * the ids of its workflows and runs deleted, whose files the caller removes; null when there
   * was no project.
   */
  async delete(id: string): Promise<{ workflowIds: string[]; runIds: string[] } | null> {
    return this.db.transaction().execute(async (trx) => {
      const workflows = await trx.selectFrom('workflows').select('id').where('project_id', '=', id).execute();
      const runs = await trx.selectFrom('runs').select('id').where('project_id', '=', id).execute();
      const r = await trx.deleteFrom('projects').where('id', '=', id).executeTakeFirst();
      if (Number(r.numDeletedRows) === 0) return null;
      return { workflowIds: workflows.map((w) => w.id), runIds: runs.map((row) => row.id) };
    });
  }

  async roleOf(projectId: string, userId: string): Promise<MemberRole | null> {
    const row = await this.db
      .selectFrom('project_members')
      .select('role')
      .where('project_id', '=', projectId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row?.role ?? null;
  }

  members(projectId: string): Promise<MemberRow[]> {
    return this.db
      .selectFrom('project_members')
      .innerJoin('users', 'users.id', 'project_members.user_id')
      .select([
        'project_members.project_id',
        'project_members.user_id',
        'project_members.role',
        'project_members.created_at',
        'users.email',
        'users.name',
      ])
      .where('project_members.project_id', '=', projectId)
      .orderBy('users.email')
      .execute();
  }

  /** The member of the project whose account has this (normalized) address. */
  memberByEmail(projectId: string, email: string): Promise<MemberRow | undefined> {
    return this.db
      .selectFrom('project_members')
      .innerJoin('users', 'users.id', 'project_members.user_id')
      .select(['project_members.project_id', 'project_members.user_id', 'project_members.role', 'project_members.created_at', 'users.email', 'users.name'])
      .where('project_members.project_id', '=', projectId)
      .where('users.email', '=', email)
      .executeTakeFirst();
  }

  async member(projectId: string, userId: string): Promise<MemberRow | undefined> {
    return (await this.members(projectId)).find((m) => m.user_id === userId);
  }

  /**
   * Adds or changes a membership. Refuses (returns false) to take the owner role from the last
   * owner. The check and the write share one transaction that first locks the project row:
   * under READ COMMITTED two owners demoting each other would each count two owners and both
   * commit (write skew), leaving none.
   */
  async setRole(projectId: string, userId: string, role: MemberRole, now: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await lockProjects(trx, [projectId]);
      const current = await memberRole(trx, projectId, userId);
      if (current) {
        if (current.role === 'owner' && role !== 'owner' && (await this.ownerCount(trx, projectId)) <= 1) return false;
        await trx
          .updateTable('project_members')
          .set({ role })
          .where('project_id', '=', projectId)
          .where('user_id', '=', userId)
          .execute();
      } else {
        await trx.insertInto('project_members').values({ project_id: projectId, user_id: userId, role, created_at: now }).execute();
      }
      return true;
    });
  }

  /** 'removed', 'absent', or 'last_owner' when the member is the project's only owner. */
  async removeMember(projectId: string, userId: string): Promise<'removed' | 'absent' | 'last_owner'> {
    return this.db.transaction().execute(async (trx) => {
      await lockProjects(trx, [projectId]);
      const current = await memberRole(trx, projectId, userId);
      if (!current) return 'absent';
      if (current.role === 'owner' && (await this.ownerCount(trx, projectId)) <= 1) return 'last_owner';
      await trx.deleteFrom('project_members').where('project_id', '=', projectId).where('user_id', '=', userId).execute();
      return 'removed';
    });
  }

  private ownerCount(db: Kysely<RunnerDB>, projectId: string): Promise<number> {
    return ownerCount(db, projectId);
  }
}

/**
 * Locks project rows until the transaction ends: a no-op UPDATE takes the row lock on PostgreSQL
 * (concurrent membership changes of the project wait for each other) and the write lock on
 * SQLite, and works unchanged on both dialects (SQLite has no SELECT … FOR UPDATE).
 */
export async function lockProjects(trx: Kysely<RunnerDB>, projectIds: string[]): Promise<void> {
  if (projectIds.length === 0) return;
  // Sorted ids: two transactions locking the same projects take the locks in the same order.
  await trx
    .updateTable('projects')
    .set((eb) => ({ updated_at: eb.ref('updated_at') }))
    .where('id', 'in', [...projectIds].sort())
    .execute();
}

/**
 * The projects whose only owner is this user (call with those projects locked). Deleting the
 * user would leave them without an owner.
 */
export async function projectsSolelyOwnedBy(trx: Kysely<RunnerDB>, userId: string): Promise<string[]> {
  // Every project of the user is locked, then its role is read again: a promotion to owner or a
  // demotion of a co-owner committed meanwhile is seen.
  const memberOf = await trx.selectFrom('project_members').select('project_id').where('user_id', '=', userId).execute();
  await lockProjects(trx, memberOf.map((m) => m.project_id));
  const owned = await trx
    .selectFrom('project_members')
    .select('project_id')
    .where('user_id', '=', userId)
    .where('role', '=', 'owner')
    .execute();
  const sole: string[] = [];
  for (const { project_id } of owned) if ((await ownerCount(trx, project_id)) <= 1) sole.push(project_id);
  return sole;
}

async function ownerCount(db: Kysely<RunnerDB>, projectId: string): Promise<number> {
  const r = await db
    .selectFrom('project_members')
    .where('project_id', '=', projectId)
    .where('role', '=', 'owner')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** A member's row (its role) inside a transaction, for the owner checks above. */
function memberRole(trx: Kysely<RunnerDB>, projectId: string, userId: string) {
  return trx
    .selectFrom('project_members')
    .select('role')
    .where('project_id', '=', projectId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

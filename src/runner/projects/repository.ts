import type { Kysely, Selectable } from 'kysely';
import type { ProjectMembersTable, ProjectsTable, RunnerDB } from '../db/schema.js';

export type ProjectRow = Selectable<ProjectsTable>;
export type MemberRole = ProjectMembersTable['role'];
export type MemberRow = Selectable<ProjectMembersTable> & { email: string; name: string };

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

  /** All projects (admins) or the ones the user is a member of, by name. */
  list(userId: string | null): Promise<ProjectRow[]> {
    let q = this.db.selectFrom('projects').selectAll('projects');
    if (userId !== null) {
      q = q
        .innerJoin('project_members', 'project_members.project_id', 'projects.id')
        .where('project_members.user_id', '=', userId);
    }
    return q.orderBy('projects.name').orderBy('projects.id').execute();
  }

  async update(id: string, changes: { name?: string; description?: string }, now: string): Promise<ProjectRow | undefined> {
    await this.db
      .updateTable('projects')
      .set({ ...changes, updated_at: now })
      .where('id', '=', id)
      .execute();
    return this.findById(id);
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('projects').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
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

  async member(projectId: string, userId: string): Promise<MemberRow | undefined> {
    return (await this.members(projectId)).find((m) => m.user_id === userId);
  }

  /**
   * Adds or changes a membership. Refuses (returns false) to take the owner role from the last
   * owner; the check and the write share one transaction.
   */
  async setRole(projectId: string, userId: string, role: MemberRole, now: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
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
      const current = await memberRole(trx, projectId, userId);
      if (!current) return 'absent';
      if (current.role === 'owner' && (await this.ownerCount(trx, projectId)) <= 1) return 'last_owner';
      await trx.deleteFrom('project_members').where('project_id', '=', projectId).where('user_id', '=', userId).execute();
      return 'removed';
    });
  }

  private async ownerCount(db: Kysely<RunnerDB>, projectId: string): Promise<number> {
    const r = await db
      .selectFrom('project_members')
      .where('project_id', '=', projectId)
      .where('role', '=', 'owner')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }
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

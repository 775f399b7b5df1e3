import type { Kysely, Selectable } from 'kysely';
import type { ProjectInvitationsTable, RunnerDB } from '../db/schema.js';
import { lockProjects, type MemberRole } from './repository.js';

export type InvitationRow = Selectable<ProjectInvitationsTable>;
/** An invitation with what its lists show: the project's name and who invited. */
export type InvitationView = InvitationRow & { project_name: string; inviter_name: string | null; inviter_email: string | null };

const RANK: Record<MemberRole, number> = { viewer: 1, editor: 2, owner: 3 };

/** Pending invitations to projects, looked up by project (owners) or by address hash (the invitee). */
export class InvitationsRepository {
  constructor(private readonly db: Kysely<RunnerDB>) {}

  /**
   * Invites the address (or renews its invitation with the new role and expiry), unless the
   * project already holds `max` pending invitations: then null. Expired invitations of the project
   * go first. The project row is locked, so concurrent invitations cannot pass the cap together.
   */
  async put(inv: InvitationRow, now: string, max: number): Promise<InvitationRow | null> {
    return this.db.transaction().execute(async (trx) => {
      await lockProjects(trx, [inv.project_id]);
      await trx.deleteFrom('project_invitations').where('project_id', '=', inv.project_id).where('expires_at', '<=', now).execute();
      const existing = await trx
        .selectFrom('project_invitations')
        .select('id')
        .where('project_id', '=', inv.project_id)
        .where('email_hash', '=', inv.email_hash)
        .executeTakeFirst();
      if (existing) {
        const renewed = { role: inv.role, email_hint: inv.email_hint, invited_by: inv.invited_by, created_at: inv.created_at, expires_at: inv.expires_at };
        await trx.updateTable('project_invitations').set(renewed).where('id', '=', existing.id).execute();
        return { ...inv, id: existing.id };
      }
      const pending = await trx
        .selectFrom('project_invitations')
        .where('project_id', '=', inv.project_id)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      if (Number(pending.n) >= max) return null;
      await trx.insertInto('project_invitations').values(inv).execute();
      return inv;
    });
  }

  private view() {
    return this.db
      .selectFrom('project_invitations as i')
      .innerJoin('projects as p', 'p.id', 'i.project_id')
      .leftJoin('users as u', 'u.id', 'i.invited_by')
      .selectAll('i')
      .select(['p.name as project_name', 'u.name as inviter_name', 'u.email as inviter_email']);
  }

  /** The project's pending invitations, newest first (at most the cap of `put`). */
  forProject(projectId: string, now: string): Promise<InvitationView[]> {
    return this.view().where('i.project_id', '=', projectId).where('i.expires_at', '>', now).orderBy('i.created_at', 'desc').orderBy('i.id').execute();
  }

  /** Pending invitations of an address, newest first, at most `limit`. */
  forAddress(emailHash: string, now: string, limit: number): Promise<InvitationView[]> {
    return this.view()
      .where('i.email_hash', '=', emailHash)
      .where('i.expires_at', '>', now)
      .orderBy('i.created_at', 'desc')
      .orderBy('i.id')
      .limit(limit)
      .execute();
  }

  /** An owner withdraws an invitation; false when the project has no such invitation. */
  async cancel(projectId: string, id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('project_invitations').where('id', '=', id).where('project_id', '=', projectId).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** The invitee declines; false when the address has no such pending invitation. */
  async decline(id: string, emailHash: string): Promise<boolean> {
    const r = await this.db.deleteFrom('project_invitations').where('id', '=', id).where('email_hash', '=', emailHash).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /**
   * The invitee accepts: the invitation is used up and the user becomes a member with its role
   * (a member already holding a higher role keeps it), in one transaction that locks the project
   * as every membership change does (ProjectsRepository.setRole). Null when the address has no
   * such pending invitation (declined, withdrawn, expired, or accepted by a concurrent request).
   */
  async accept(id: string, emailHash: string, userId: string, now: string): Promise<{ projectId: string; role: MemberRole } | null> {
    return this.db.transaction().execute(async (trx) => {
      const found = await trx
        .selectFrom('project_invitations')
        .select('project_id')
        .where('id', '=', id)
        .where('email_hash', '=', emailHash)
        .where('expires_at', '>', now)
        .executeTakeFirst();
      if (!found) return null;
      await lockProjects(trx, [found.project_id]);
      const taken = await trx.deleteFrom('project_invitations').where('id', '=', id).where('email_hash', '=', emailHash).returning('role').executeTakeFirst();
      if (!taken) return null;
      const current = await trx
        .selectFrom('project_members')
        .select('role')
        .where('project_id', '=', found.project_id)
        .where('user_id', '=', userId)
        .executeTakeFirst();
      if (!current) {
        await trx.insertInto('project_members').values({ project_id: found.project_id, user_id: userId, role: taken.role, created_at: now }).execute();
        return { projectId: found.project_id, role: taken.role };
      }
      if (RANK[taken.role] <= RANK[current.role]) return { projectId: found.project_id, role: current.role };
      await trx.updateTable('project_members').set({ role: taken.role }).where('project_id', '=', found.project_id).where('user_id', '=', userId).execute();
      return { projectId: found.project_id, role: taken.role };
    });
  }
}

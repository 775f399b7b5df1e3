import { ConflictError, NotFoundError } from '../../infra/errors.js';
import { randomUUID, sha256 } from '../../infra/secrets.js';
import type { Principal } from '../auth/authenticate.js';
import { normalizeEmail, type UserRow } from '../users/repository.js';
import { loadProject, type ScopeRepositories } from './access.js';
import type { InvitationRow, InvitationsRepository, InvitationView } from './invitations-repository.js';
import type { MemberRole, MemberRow } from './repository.js';

/** How long an invitation waits for its address to accept it. */
export const INVITATION_TTL_DAYS = 30;
/** Pending invitations one project may hold: the owners' list and each invitation's cost stay bounded. */
export const MAX_PENDING_INVITATIONS = 100;
/** Invitations an account is shown at once (newest first). */
export const MAX_LISTED_INVITATIONS = 100;

/** The key of an address: its normalized form's SHA-256 (the address itself is not stored). */
export function addressHash(email: string): string {
  return sha256(normalizeEmail(email));
}

/**
 * What owners see of an invited address: its first character and its domain
 * (`n…@example.com`), enough to tell invitations apart without keeping the address.
 */
export function addressHint(email: string): string {
  const address = normalizeEmail(email);
  const at = address.lastIndexOf('@');
  if (at <= 0) return '…';
  return `${[...address.slice(0, at)][0]}…${address.slice(at)}`;
}

export interface InvitationsDeps extends ScopeRepositories {
  invitations: InvitationsRepository;
  now: () => Date;
}

/** What adding someone by email did: a member's role changed, or an invitation waits. */
export type AddedByEmail = { member: MemberRow } | { invitation: InvitationView };

/**
 * Adding people to projects by address. Addresses are set by administrators (or proven, see
 * users/profile.ts), so an address names its holder; still, an owner's answer is the same whether
 * or not an account holds the address: an invitation that the account with that address (now or
 * once it is created) sees, and accepts or declines.
 */
export class InvitationsService {
  constructor(private readonly d: InvitationsDeps) {}

  /**
   * An owner adds the address. A current member of the project (whose address the owner already
   * sees in the member list) gets the role at once; anyone else is invited, whether an account
   * holds the address or not, so the answer tells nothing about other accounts.
   */
  async addByEmail(p: Principal, projectId: string, email: string, role: MemberRole): Promise<AddedByEmail> {
    const project = await loadProject(this.d, p, projectId, 'manage');
    const member = await this.d.projects.memberByEmail(project.id, normalizeEmail(email));
    if (member) {
      if (!(await this.d.projects.setRole(project.id, member.user_id, role, this.d.now().toISOString()))) {
        throw new ConflictError('a project needs at least one owner', 'last_owner');
      }
      return { member: { ...member, role } };
    }
    const now = this.d.now();
    const row: InvitationRow = {
      id: randomUUID(),
      project_id: project.id,
      email_hash: addressHash(email),
      email_hint: addressHint(email),
      role,
      invited_by: p.type === 'user' ? p.user.id : null,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + INVITATION_TTL_DAYS * 86_400_000).toISOString(),
    };
    const stored = await this.d.invitations.put(row, now.toISOString(), MAX_PENDING_INVITATIONS);
    if (!stored) {
      throw new ConflictError(`the project already has ${MAX_PENDING_INVITATIONS} pending invitations; withdraw some first`, 'too_many_invitations');
    }
    const inviter = p.type === 'user' ? p.user : null;
    return { invitation: { ...stored, project_name: project.name, inviter_name: inviter?.name ?? null, inviter_email: inviter?.email ?? null } };
  }

  /** The project's pending invitations, for its owners (and administrators). */
  async forProject(p: Principal, projectId: string): Promise<InvitationView[]> {
    await loadProject(this.d, p, projectId, 'manage');
    return this.d.invitations.forProject(projectId, this.d.now().toISOString());
  }

  async cancel(p: Principal, projectId: string, id: string): Promise<void> {
    await loadProject(this.d, p, projectId, 'manage');
    if (!(await this.d.invitations.cancel(projectId, id))) throw new NotFoundError('no such invitation');
  }

  /** The invitations waiting for the user's address. */
  mine(user: UserRow): Promise<InvitationView[]> {
    return this.d.invitations.forAddress(addressHash(user.email), this.d.now().toISOString(), MAX_LISTED_INVITATIONS);
  }

  /** Accepts an invitation to the user's address: they become a member with its role. */
  async accept(user: UserRow, id: string): Promise<{ projectId: string; role: MemberRole }> {
    const joined = await this.d.invitations.accept(id, addressHash(user.email), user.id, this.d.now().toISOString());
    if (!joined) throw new NotFoundError('no such invitation');
    return joined;
  }

  async decline(user: UserRow, id: string): Promise<void> {
    if (!(await this.d.invitations.decline(id, addressHash(user.email)))) throw new NotFoundError('no such invitation');
  }
}

import { ForbiddenError, NotFoundError } from '../../infra/errors.js';
import type { Principal } from '../auth/authenticate.js';
import type { MemberRole, ProjectsRepository } from './repository.js';

/** What an operation needs inside a project: viewers read, editors write, owners manage. */
export type ProjectNeed = 'read' | 'write' | 'manage';

const RANK: Record<MemberRole, number> = { viewer: 1, editor: 2, owner: 3 };
const NEEDED: Record<ProjectNeed, number> = { read: 1, write: 2, manage: 3 };

/**
 * Project membership check, after the route-level access check. Administrators and the admin
 * key (where the route admits it) see every project. Non-members get 404 so project ids do not
 * leak; members without the needed role get 403.
 */
export async function requireProjectAccess(
  projects: ProjectsRepository,
  principal: Principal,
  projectId: string,
  need: ProjectNeed,
): Promise<void> {
  if (principal.type === 'api-key' || principal.user.role === 'admin') return;
  const role = await projects.roleOf(projectId, principal.user.id);
  if (!role) throw new NotFoundError('no such project');
  if (RANK[role] < NEEDED[need]) {
    throw new ForbiddenError(`your role "${role}" in this project does not allow this (needs ${need})`, 'project_role');
  }
}

import { useAuth } from './auth.js';
import { type Loaded, useApi } from './hooks.js';
import type { Member, MemberRole } from './types.js';

export interface ProjectAccess {
  members: Loaded<{ items: Member[] }>;
  /** The signed-in user's role here (null: not a member). */
  role: MemberRole | null;
  canWrite: boolean;
  canManage: boolean;
}

/** What the signed-in user may do in a project, from its member list (administrators: everything). */
export function useProjectAccess(projectId: string): ProjectAccess {
  const { me } = useAuth();
  const members = useApi<{ items: Member[] }>(`/api/projects/${encodeURIComponent(projectId)}/members`);
  const role = members.data?.items.find((m) => m.userId === me.id)?.role ?? null;
  const admin = me.role === 'admin';
  return { members, role, canWrite: admin || role === 'owner' || role === 'editor', canManage: admin || role === 'owner' };
}

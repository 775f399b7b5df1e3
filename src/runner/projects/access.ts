import { ForbiddenError, NotFoundError } from '../../infra/errors.js';
import type { Principal } from '../auth/authenticate.js';
import type { RunsRepository } from '../runs/repository.js';
import type { RunRow } from '../runs/run-rows.js';
import type { WorkflowRow, WorkflowsRepository } from '../workflows/repository.js';
import type { MemberRole, ProjectRow, ProjectsRepository } from './repository.js';

/*
 * The steps every project-scoped operation runs, in this order, in the spirit of
 * node-oidc-provider's lib/actions/authorization/check_*.js: load the resource (404), check
 * membership of its project (non-members get the same 404, so ids do not leak), check the role
 * the operation needs (403). The route-level check of the credential (auth/access.ts) ran before.
 */

/** What an operation needs inside a project: viewers read, editors write, owners manage. */
export type ProjectNeed = 'read' | 'write' | 'manage';

const RANK: Record<MemberRole, number> = { viewer: 1, editor: 2, owner: 3 };
const NEEDED: Record<ProjectNeed, number> = { read: 1, write: 2, manage: 3 };

/**
 * Membership and role. Administrators and the admin key (where the route admits it) pass for
 * every project; others need a membership with at least the needed role.
 */
export async function checkMembership(
  projects: ProjectsRepository,
  principal: Principal,
  projectId: string,
  need: ProjectNeed,
  hiddenAs = 'no such project',
): Promise<void> {
  if (principal.type === 'api-key' || principal.user.role === 'admin') return;
  const role = await projects.roleOf(projectId, principal.user.id);
  if (!role) throw new NotFoundError(hiddenAs);
  checkRole(role, need);
}

/** The role rule alone: viewer < editor < owner. */
export function checkRole(role: MemberRole, need: ProjectNeed): void {
  if (RANK[role] < NEEDED[need]) {
    throw new ForbiddenError(`your role "${role}" in this project does not allow this (needs ${need})`, 'project_role');
  }
}

export interface ScopeRepositories {
  projects: ProjectsRepository;
  workflows: WorkflowsRepository;
  runs: RunsRepository;
}

/** Load a project, then check membership. */
export async function loadProject(r: ScopeRepositories, principal: Principal, id: string, need: ProjectNeed): Promise<ProjectRow> {
  const project = await r.projects.findById(id);
  if (!project) throw new NotFoundError('no such project');
  await checkMembership(r.projects, principal, project.id, need);
  return project;
}

/** Load a workflow, then check membership of its project. */
export async function loadWorkflow(r: ScopeRepositories, principal: Principal, id: string, need: ProjectNeed): Promise<WorkflowRow> {
  const workflow = await r.workflows.findById(id);
  if (!workflow) throw new NotFoundError('no such workflow');
  await checkMembership(r.projects, principal, workflow.project_id, need, 'no such workflow');
  return workflow;
}

/** Load a run, then check membership of its project. */
export async function loadRun(r: ScopeRepositories, principal: Principal, id: string, need: ProjectNeed): Promise<RunRow> {
  const run = await r.runs.findById(id);
  if (!run) throw new NotFoundError('no such run');
  await checkMembership(r.projects, principal, run.project_id, need, 'no such run');
  return run;
}

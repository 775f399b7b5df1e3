import { ConflictError, NotFoundError } from '../../infra/errors.js';
import { randomUUID } from '../../infra/secrets.js';
import type { Principal, UserPrincipal } from '../auth/authenticate.js';
import type { RunOutputStorage } from '../runs/output-storage.js';
import type { UsersRepository } from '../users/repository.js';
import type { StorageUsage } from '../workflows/repository.js';
import type { WorkflowStorage } from '../workflows/storage.js';
import { loadProject, type ScopeRepositories } from './access.js';
import type { MemberRole, MemberRow, ProjectRow, ProjectSummaryRow } from './repository.js';

export interface ProjectsDeps extends ScopeRepositories {
  users: UsersRepository;
  storage: WorkflowStorage;
  outputs: RunOutputStorage;
  /** The quota of each project's stored workflow versions (RUNNER_PROJECT_STORAGE_BYTES; 0: no limit). */
  projectStorageBytes: number;
  now: () => Date;
}

/** Projects and their members. Viewers read, editors change, owners manage (projects/access.ts). */
export class ProjectsService {
  constructor(private readonly d: ProjectsDeps) {}

  /** Projects the user is a member of, with their role and counts; administrators see all. */
  list(p: UserPrincipal): Promise<ProjectSummaryRow[]> {
    return this.d.projects.list(p.user.id, p.user.role === 'admin');
  }

  /** The creator becomes the owner. */
  create(p: UserPrincipal, input: { name: string; description?: string }): Promise<ProjectRow> {
    return this.d.projects.create({
      id: randomUUID(),
      name: input.name.trim(),
      description: input.description ?? '',
      ownerId: p.user.id,
      now: this.d.now().toISOString(),
    });
  }

  /** The project with what its stored workflow versions take of its quota. */
  async get(p: Principal, id: string): Promise<{ project: ProjectRow; storage: StorageUsage }> {
    const project = await loadProject(this.d, p, id, 'read');
    return { project, storage: await this.d.workflows.storage(id, this.d.projectStorageBytes) };
  }

  async update(p: Principal, id: string, input: { name?: string; description?: string }): Promise<ProjectRow> {
    await loadProject(this.d, p, id, 'write');
    const changes: { name?: string; description?: string } = {};
    if (input.name !== undefined) changes.name = input.name.trim();
    if (input.description !== undefined) changes.description = input.description;
    const row = await this.d.projects.update(id, changes, this.d.now().toISOString());
    if (!row) throw new NotFoundError('no such project');
    return row;
  }

  /**
   * Deletes the project with its workflows, runs and logs, then the stored archives and the
   * runs' output files (after the rows, see WorkflowsService.delete).
   */
  async delete(p: Principal, id: string): Promise<void> {
    await loadProject(this.d, p, id, 'manage');
    const deleted = await this.d.projects.delete(id);
    if (!deleted) throw new NotFoundError('no such project');
    for (const runId of deleted.runIds) await this.d.outputs.removeRun(runId);
    await Promise.all(deleted.workflowIds.map((w) => this.d.storage.removeWorkflow(w)));
  }

  async members(p: Principal, id: string): Promise<MemberRow[]> {
    await loadProject(this.d, p, id, 'read');
    return this.d.projects.members(id);
  }

  /** Adds a member or changes their role; the last owner keeps the role (409). */
  async setMember(p: Principal, id: string, userId: string, role: MemberRole): Promise<MemberRow> {
    await loadProject(this.d, p, id, 'manage');
    if (!(await this.d.users.findById(userId))) throw new NotFoundError('no such user');
    return this.putMember(id, userId, role);
  }

  /** Gives an existing user the role, keeping the last owner (409); the caller checked the rights. */
  private async putMember(id: string, userId: string, role: MemberRole): Promise<MemberRow> {
    if (!(await this.d.projects.setRole(id, userId, role, this.d.now().toISOString()))) {
      throw new ConflictError('a project needs at least one owner', 'last_owner');
    }
    const m = await this.d.projects.member(id, userId);
    if (!m) throw new NotFoundError('no such member');
    return m;
  }

  async removeMember(p: Principal, id: string, userId: string): Promise<void> {
    await loadProject(this.d, p, id, 'manage');
    const r = await this.d.projects.removeMember(id, userId);
    if (r === 'absent') throw new NotFoundError('no such member');
    if (r === 'last_owner') throw new ConflictError('a project needs at least one owner', 'last_owner');
  }
}

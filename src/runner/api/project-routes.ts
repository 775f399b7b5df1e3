import { Type } from 'typebox';
import { ConflictError, NotFoundError } from '../../infra/errors.js';
import type { HttpApp } from '../../infra/http.js';
import { randomUUID } from '../../infra/secrets.js';
import { USER_READ, USER_WRITE } from '../auth/access.js';
import { access, principalOf, userOf } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import { requireProjectAccess } from '../projects/access.js';
import type { MemberRow, ProjectRow } from '../projects/repository.js';
import { errors, Id, IdParams, items, Name, NoContent, PROTECTED, StringEnum, Timestamp } from './schemas.js';

export const Project = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

const MemberRole = StringEnum(['owner', 'editor', 'viewer']);

const Member = Type.Object({
  userId: Type.String(),
  email: Type.String(),
  name: Type.String(),
  role: MemberRole,
  addedAt: Timestamp,
});

const Description = Type.String({ maxLength: 10_000 });

export function presentProject(p: ProjectRow) {
  return { id: p.id, name: p.name, description: p.description, createdAt: p.created_at, updatedAt: p.updated_at };
}

function presentMember(m: MemberRow) {
  return { userId: m.user_id, email: m.email, name: m.name, role: m.role, addedAt: m.created_at };
}

export function registerProjectRoutes(app: HttpApp, ctx: RunnerContext): void {
  const { projects } = ctx;

  async function load(id: string, req: Parameters<typeof principalOf>[0], need: 'read' | 'write' | 'manage'): Promise<ProjectRow> {
    const project = await projects.findById(id);
    if (!project) throw new NotFoundError('no such project');
    await requireProjectAccess(projects, principalOf(req), id, need);
    return project;
  }

  app.get(
    '/api/projects',
    {
      config: access(USER_READ),
      schema: {
        tags: ['projects'],
        summary: 'List projects',
        description: 'Projects the caller is a member of (administrators: all projects).',
        operationId: 'listProjects',
        response: { 200: items(Project), ...errors(...PROTECTED) },
      },
    },
    async (req) => {
      const p = userOf(req);
      const rows = await projects.list(p.user.role === 'admin' ? null : p.user.id);
      return { items: rows.map(presentProject) };
    },
  );

  app.post(
    '/api/projects',
    {
      config: access(USER_WRITE),
      schema: {
        tags: ['projects'],
        summary: 'Create a project',
        description: 'The caller becomes its owner.',
        operationId: 'createProject',
        body: Type.Object({ name: Name, description: Type.Optional(Description) }, { additionalProperties: false }),
        response: { 201: Project, ...errors(...PROTECTED) },
      },
    },
    async (req, reply) => {
      const p = userOf(req);
      const row = await projects.create({
        id: randomUUID(),
        name: req.body.name.trim(),
        description: req.body.description ?? '',
        ownerId: p.user.id,
        now: ctx.now().toISOString(),
      });
      return reply.code(201).send(presentProject(row));
    },
  );

  app.get(
    '/api/projects/:id',
    {
      config: access(USER_READ),
      schema: {
        tags: ['projects'],
        summary: 'Get a project',
        operationId: 'getProject',
        params: IdParams,
        response: { 200: Project, ...errors(...PROTECTED, 404) },
      },
    },
    async (req) => presentProject(await load(req.params.id, req, 'read')),
  );

  app.patch(
    '/api/projects/:id',
    {
      config: access(USER_WRITE),
      schema: {
        tags: ['projects'],
        summary: 'Change a project',
        description: 'Needs the editor or owner role.',
        operationId: 'updateProject',
        params: IdParams,
        body: Type.Object({ name: Type.Optional(Name), description: Type.Optional(Description) }, { additionalProperties: false }),
        response: { 200: Project, ...errors(...PROTECTED, 404) },
      },
    },
    async (req) => {
      await load(req.params.id, req, 'write');
      const changes: { name?: string; description?: string } = {};
      if (req.body.name !== undefined) changes.name = req.body.name.trim();
      if (req.body.description !== undefined) changes.description = req.body.description;
      const row = await projects.update(req.params.id, changes, ctx.now().toISOString());
      if (!row) throw new NotFoundError('no such project');
      return presentProject(row);
    },
  );

  app.delete(
    '/api/projects/:id',
    {
      config: access(USER_WRITE),
      schema: {
        tags: ['projects'],
        summary: 'Delete a project',
        description: 'Needs the owner role. Deletes its workflows, versions, runs and logs.',
        operationId: 'deleteProject',
        params: IdParams,
        response: { 204: NoContent, ...errors(...PROTECTED, 404) },
      },
    },
    async (req, reply) => {
      await load(req.params.id, req, 'manage');
      const workflowIds = (await ctx.workflows.listByProject(req.params.id)).map((w) => w.id);
      await projects.delete(req.params.id);
      await Promise.all(workflowIds.map((id) => ctx.storage.removeWorkflow(id)));
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/projects/:id/members',
    {
      config: access(USER_READ),
      schema: {
        tags: ['projects'],
        summary: 'List project members',
        operationId: 'listProjectMembers',
        params: IdParams,
        response: { 200: items(Member), ...errors(...PROTECTED, 404) },
      },
    },
    async (req) => {
      await load(req.params.id, req, 'read');
      return { items: (await projects.members(req.params.id)).map(presentMember) };
    },
  );

  const MemberParams = Type.Object({ id: Id, userId: Id });

  app.put(
    '/api/projects/:id/members/:userId',
    {
      config: access(USER_WRITE),
      schema: {
        tags: ['projects'],
        summary: 'Add a member or change their role',
        description: 'Needs the owner role. The last owner cannot be demoted (409).',
        operationId: 'setProjectMember',
        params: MemberParams,
        body: Type.Object({ role: MemberRole }, { additionalProperties: false }),
        response: { 200: Member, ...errors(...PROTECTED, 404, 409) },
      },
    },
    async (req) => {
      await load(req.params.id, req, 'manage');
      if (!(await ctx.users.findById(req.params.userId))) throw new NotFoundError('no such user');
      if (!(await projects.setRole(req.params.id, req.params.userId, req.body.role, ctx.now().toISOString()))) {
        throw new ConflictError('a project needs at least one owner', 'last_owner');
      }
      const m = await projects.member(req.params.id, req.params.userId);
      if (!m) throw new NotFoundError('no such member');
      return presentMember(m);
    },
  );

  app.delete(
    '/api/projects/:id/members/:userId',
    {
      config: access(USER_WRITE),
      schema: {
        tags: ['projects'],
        summary: 'Remove a member',
        description: 'Needs the owner role. The last owner cannot be removed (409).',
        operationId: 'removeProjectMember',
        params: MemberParams,
        response: { 204: NoContent, ...errors(...PROTECTED, 404, 409) },
      },
    },
    async (req, reply) => {
      await load(req.params.id, req, 'manage');
      const r = await projects.removeMember(req.params.id, req.params.userId);
      if (r === 'absent') throw new NotFoundError('no such member');
      if (r === 'last_owner') throw new ConflictError('a project needs at least one owner', 'last_owner');
      return reply.code(204).send(null);
    },
  );
}

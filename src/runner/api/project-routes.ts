import { Type } from 'typebox';
import type { HttpApp } from '../../infra/http.js';
import { USER_READ, USER_WRITE } from '../auth/access.js';
import { access, principalOf, userOf } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import { INVITATION_TTL_DAYS, MAX_PENDING_INVITATIONS } from '../projects/invitations.js';
import {
  Invitation,
  Member,
  MemberRoleSchema,
  Project,
  ProjectDetail,
  ProjectSummary,
  presentInvitation,
  presentMember,
  presentProject,
  presentProjectDetail,
  presentProjectSummary,
} from './presenters.js';
import { Description, Email, errors, Id, IdParams, items, Name, NoContent, PROTECTED } from './schemas.js';

const MemberParams = Type.Object({ id: Id, userId: Id });

/** Projects and members: each handler validates, calls one ProjectsService method, presents. */
export function registerProjectRoutes(app: HttpApp, ctx: RunnerContext): void {
  const { projects, invitations } = ctx;

  app.get(
    '/api/projects',
    {
      config: access(USER_READ),
      schema: {
        tags: ['projects'],
        summary: 'List projects',
        description: 'Projects the caller is a member of (administrators: all projects).',
        operationId: 'listProjects',
        response: { 200: items(ProjectSummary), ...errors(...PROTECTED) },
      },
    },
    async (req) => ({ items: (await projects.list(userOf(req))).map(presentProjectSummary) }),
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
    async (req, reply) => reply.code(201).send(presentProject(await projects.create(userOf(req), req.body))),
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
        response: { 200: ProjectDetail, ...errors(...PROTECTED, 404) },
      },
    },
    async (req) => presentProjectDetail(await projects.get(principalOf(req), req.params.id)),
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
    async (req) => presentProject(await projects.update(principalOf(req), req.params.id, req.body)),
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
      await projects.delete(principalOf(req), req.params.id);
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
    async (req) => ({ items: (await projects.members(principalOf(req), req.params.id)).map(presentMember) }),
  );

  app.post(
    '/api/projects/:id/members',
    {
      config: access(USER_WRITE),
      schema: {
        tags: ['projects'],
        summary: 'Invite someone by email',
        description:
          'Needs the owner role. A member of the project with this address gets the role at once (200, the member). Anyone else is invited ' +
          '(202, the invitation), whether or not an account has the address: the answer is the same either way. The account with the address ' +
          `sees the invitation (\`GET /api/me/invitations\`) and accepts or declines it; it waits ${INVITATION_TTL_DAYS} days. Inviting the address ` +
          `again renews it with the new role. At most ${MAX_PENDING_INVITATIONS} pending invitations per project (409 \`too_many_invitations\`).`,
        operationId: 'addProjectMember',
        params: IdParams,
        body: Type.Object({ email: Email, role: MemberRoleSchema }, { additionalProperties: false }),
        response: { 200: Member, 202: Invitation, ...errors(...PROTECTED, 404, 409) },
      },
    },
    async (req, reply) => {
      const added = await invitations.addByEmail(principalOf(req), req.params.id, req.body.email, req.body.role);
      if ('member' in added) return presentMember(added.member);
      return reply.code(202).send(presentInvitation(added.invitation));
    },
  );

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
        body: Type.Object({ role: MemberRoleSchema }, { additionalProperties: false }),
        response: { 200: Member, ...errors(...PROTECTED, 404, 409) },
      },
    },
    async (req) => presentMember(await projects.setMember(principalOf(req), req.params.id, req.params.userId, req.body.role)),
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
      await projects.removeMember(principalOf(req), req.params.id, req.params.userId);
      return reply.code(204).send(null);
    },
  );
}

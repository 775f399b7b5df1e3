import { Type } from 'typebox';
import type { HttpApp } from '../../infra/http.js';
import { SESSION_ONLY, USER_READ, USER_WRITE } from '../auth/access.js';
import { access, principalOf, userOf } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import { INVITATION_TTL_DAYS, MAX_LISTED_INVITATIONS, MAX_PENDING_INVITATIONS } from '../projects/invitations.js';
import { Invitation, MemberRoleSchema, presentInvitation } from './presenters.js';
import { errors, Id, IdParams, items, NoContent, PROTECTED } from './schemas.js';

const InvitationParams = Type.Object({ id: Id, invitationId: Id });

/**
 * Invitations to projects: owners list and withdraw those of their project (they are made by
 * `POST /api/projects/{id}/members`, project-routes.ts); the signed-in account lists, accepts and
 * declines those sent to its address. Web session only on the account's side: joining a project
 * widens what every token of the account reaches, so no token may do it.
 */
export function registerInvitationRoutes(app: HttpApp, ctx: RunnerContext): void {
  const { invitations } = ctx;

  app.get(
    '/api/projects/:id/invitations',
    {
      config: access(USER_READ),
      schema: {
        tags: ['projects'],
        summary: "List a project's pending invitations",
        description: `Needs the owner role. Newest first; at most ${MAX_PENDING_INVITATIONS} per project. Each shows a hint of the invited address (\`n…@example.com\`): only its SHA-256 is stored.`,
        operationId: 'listProjectInvitations',
        params: IdParams,
        response: { 200: items(Invitation), ...errors(...PROTECTED, 404) },
      },
    },
    async (req) => ({ items: (await invitations.forProject(principalOf(req), req.params.id)).map(presentInvitation) }),
  );

  app.delete(
    '/api/projects/:id/invitations/:invitationId',
    {
      config: access(USER_WRITE),
      schema: {
        tags: ['projects'],
        summary: 'Withdraw an invitation',
        description: 'Needs the owner role.',
        operationId: 'cancelProjectInvitation',
        params: InvitationParams,
        response: { 204: NoContent, ...errors(...PROTECTED, 404) },
      },
    },
    async (req, reply) => {
      await invitations.cancel(principalOf(req), req.params.id, req.params.invitationId);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/me/invitations',
    {
      config: access(SESSION_ONLY),
      schema: {
        tags: ['account'],
        summary: 'Invitations to your address',
        description: `Projects whose owners invited the signed-in account's address, newest first (at most ${MAX_LISTED_INVITATIONS}); each waits ${INVITATION_TTL_DAYS} days.`,
        operationId: 'listMyInvitations',
        response: { 200: items(Invitation), ...errors(...PROTECTED) },
      },
    },
    async (req) => ({ items: (await invitations.mine(userOf(req).user)).map(presentInvitation) }),
  );

  app.post(
    '/api/me/invitations/:id/accept',
    {
      config: access(SESSION_ONLY),
      schema: {
        tags: ['account'],
        summary: 'Accept an invitation',
        description: 'You become a member of the project with the invited role (a member already holding a higher role keeps it).',
        operationId: 'acceptInvitation',
        params: IdParams,
        response: { 200: Type.Object({ projectId: Type.String(), role: MemberRoleSchema }), ...errors(...PROTECTED, 404) },
      },
    },
    async (req) => invitations.accept(userOf(req).user, req.params.id),
  );

  app.delete(
    '/api/me/invitations/:id',
    {
      config: access(SESSION_ONLY),
      schema: {
        tags: ['account'],
        summary: 'Decline an invitation',
        operationId: 'declineInvitation',
        params: IdParams,
        response: { 204: NoContent, ...errors(...PROTECTED, 404) },
      },
    },
    async (req, reply) => {
      await invitations.decline(userOf(req).user, req.params.id);
      return reply.code(204).send(null);
    },
  );
}

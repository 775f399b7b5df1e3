import type { HttpApp } from '../../infra/http.js';
import { SESSION_ONLY } from '../auth/access.js';
import { access, userOf } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import { ConnectedApp, presentConnectedApp } from './presenters.js';
import { errors, IdParams, items, NoContent, PROTECTED } from './schemas.js';

/** Applications the user authorized through OAuth (spec B, OAuth rule 4). Web session only. */
export function registerConnectedAppRoutes(app: HttpApp, ctx: RunnerContext): void {
  app.get(
    '/api/connected-apps',
    {
      config: access(SESSION_ONLY),
      schema: {
        tags: ['account'],
        summary: 'List connected applications',
        description: 'Applications holding a live OAuth grant of the signed-in user, with scope, first authorization and last use.',
        operationId: 'listConnectedApps',
        response: { 200: items(ConnectedApp), ...errors(...PROTECTED) },
      },
    },
    async (req) => ({ items: (await ctx.oauth.connectedApps(userOf(req).user.id)).map(presentConnectedApp) }),
  );

  app.delete(
    '/api/connected-apps/:id',
    {
      config: access(SESSION_ONLY),
      schema: {
        tags: ['account'],
        summary: 'Revoke a connected application',
        description: 'Its access and refresh tokens stop working at once, on every instance.',
        operationId: 'revokeConnectedApp',
        params: IdParams,
        response: { 204: NoContent, ...errors(...PROTECTED, 404) },
      },
    },
    async (req, reply) => {
      await ctx.oauth.revokeConnectedApp(userOf(req).user.id, req.params.id);
      return reply.code(204).send(null);
    },
  );
}

import type { FastifyReply } from 'fastify';
import type { HttpApp } from '../../infra/http.js';
import { toProblem } from '../../infra/http.js';
import { NulCharacterError } from '../../infra/nul.js';
import { PUBLIC } from '../auth/access.js';
import { access } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import { OAuthError } from '../oauth/errors.js';
import { authorizationServerMetadata, OAUTH_PATHS, protectedResourceMetadata } from '../oauth/metadata.js';

/** Endpoints that browser-based clients call across origins (RFC 8414 §3, RFC 7591, RFC 6749 §3.2). */
const CORS_PATHS = [
  OAUTH_PATHS.authorizationServerMetadata,
  OAUTH_PATHS.protectedResourceMetadata,
  OAUTH_PATHS.mcpResourceMetadata,
  OAUTH_PATHS.register,
  OAUTH_PATHS.token,
  OAUTH_PATHS.revoke,
];

/** Endpoints OAuth clients call (the others are pages for people). */
const PROTOCOL_PATHS: string[] = [OAUTH_PATHS.authorize, OAUTH_PATHS.token, OAUTH_PATHS.revoke, OAUTH_PATHS.register];

/**
 * CORS without credentials: these endpoints take no cookies, so any origin may call them.
 * The resource policy is relaxed for the same reason (helmet's default is same-site).
 */
function openCors(reply: FastifyReply): void {
  reply.header('access-control-allow-origin', '*');
  reply.header('cross-origin-resource-policy', 'cross-origin');
}

/** The authorization server's discovery and registration endpoints. */
export function registerOAuthRoutes(app: HttpApp, ctx: RunnerContext): void {
  const runnerUrl = ctx.config.runner.url;
  const options = { config: access(PUBLIC), schema: { hide: true } };

  app.setErrorHandler((err, req, reply) => {
    if (err instanceof NulCharacterError && PROTOCOL_PATHS.includes(req.routeOptions.url ?? '')) {
      // The request-wide NUL rule, in the OAuth error shape (RFC 6749 §5.2, RFC 7591 §3.2.2).
      const code = req.routeOptions.url === OAUTH_PATHS.register ? 'invalid_client_metadata' : 'invalid_request';
      reply.code(400).header('cache-control', 'no-store').send(new OAuthError(400, code, err.message).body());
      return;
    }
    if (err instanceof OAuthError) {
      reply.code(err.status).headers(err.headers).header('cache-control', 'no-store').send(err.body());
      return;
    }
    const { problem, headers } = toProblem(err);
    if (problem.status >= 500) req.log.error({ err }, 'request failed');
    reply.code(problem.status).headers(headers).type('application/problem+json; charset=utf-8').send({ ...problem, requestId: req.id });
  });

  app.addHook('onRequest', (req, reply, done) => {
    const path = req.url.split('?')[0] ?? '';
    if ((CORS_PATHS as string[]).includes(path)) openCors(reply);
    done();
  });

  for (const path of CORS_PATHS) {
    // CORS preflight (Fetch standard): MCP clients send Authorization and MCP-Protocol-Version.
    app.options(path, options, async (_req, reply) => {
      reply
        .code(204)
        .header('access-control-allow-methods', 'GET, POST, OPTIONS')
        .header('access-control-allow-headers', 'authorization, content-type, mcp-protocol-version')
        .header('access-control-max-age', '600');
    });
  }

  app.get(OAUTH_PATHS.authorizationServerMetadata, options, async () => authorizationServerMetadata(runnerUrl));
  app.get(OAUTH_PATHS.protectedResourceMetadata, options, async () => protectedResourceMetadata(runnerUrl));
  app.get(OAUTH_PATHS.mcpResourceMetadata, options, async () => protectedResourceMetadata(runnerUrl, 'mcp'));

  // RFC 7591 §3: dynamic client registration. The body is checked by the service, not a
  // schema, because unknown metadata must be ignored (RFC 7591 §2) and errors take the RFC
  // 7591 §3.2.2 shape.
  app.post(OAUTH_PATHS.register, options, async (req, reply) => {
    const client = await ctx.oauth.register(req.body, req.ip);
    reply.code(201).header('cache-control', 'no-store');
    return client;
  });

  // RFC 6749 §3.2 / §5.1: form-encoded request, JSON response that no cache may keep.
  app.post(OAUTH_PATHS.token, options, async (req, reply) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    return ctx.oauth.token(req.headers.authorization, formOf(req.headers['content-type'], req.body));
  });

  // RFC 7009 §2.2: 200 with an empty body, whether or not the token was known.
  app.post(OAUTH_PATHS.revoke, options, async (req, reply) => {
    await ctx.oauth.revoke(req.headers.authorization, formOf(req.headers['content-type'], req.body));
    reply.header('cache-control', 'no-store').code(200).send();
  });
}

/** RFC 6749 §3.2: the token and revocation endpoints take application/x-www-form-urlencoded only. */
function formOf(contentType: string | undefined, body: unknown): Record<string, unknown> {
  if (!contentType?.toLowerCase().startsWith('application/x-www-form-urlencoded') || typeof body !== 'object' || body === null) {
    throw new OAuthError(400, 'invalid_request', 'send the parameters as application/x-www-form-urlencoded (RFC 6749 §3.2)');
  }
  return body as Record<string, unknown>;
}

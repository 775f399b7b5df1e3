import swagger from '@fastify/swagger';
import type { RouteOptions } from 'fastify';
import type { HttpApp } from '../../infra/http.js';
import { DOCS_PREFIX, isDocumentedApiRoute, missingSchemaKeys, registerDocsUi } from '../../infra/openapi.js';
import { securityOf, SCHEMES } from '../auth/access.js';
import { accessOf } from '../auth/authenticate.js';
import pkg from '../../../package.json' with { type: 'json' };

export { DOCS_PREFIX };

/** A multipart body documented in OpenAPI (fastify does not validate multipart bodies itself). */
export interface MultipartDoc {
  fields: Record<string, { type: 'string'; format?: 'binary'; description?: string; maxLength?: number }>;
  required: string[];
}

export function multipartConfig(doc: MultipartDoc): { multipartDoc: MultipartDoc } {
  return { multipartDoc: doc };
}

/**
 * Every API route must declare its access, tags, summary, operationId and responses, so the
 * documentation can never silently miss a route or its permissions.
 */
function checkRoute(route: RouteOptions): void {
  if (!isDocumentedApiRoute(route)) return;
  const where = `${String(route.method)} ${route.url}`;
  if (!accessOf(route.config)) throw new Error(`${where}: route declares no access`);
  for (const key of missingSchemaKeys(route, ['tags', 'summary', 'operationId', 'response'])) {
    throw new Error(`${where}: route schema has no ${key}`);
  }
}

/** The runner's own authorization server, as the docs declare and use it. */
export interface OpenApiOAuth {
  authorizationUrl: string;
  tokenUrl: string;
  /** The pre-registered public client of the interactive docs (PKCE, no secret). */
  docsClientId: string;
}

/** Where Swagger UI receives the authorization response (served by @fastify/swagger-ui). */
export const DOCS_OAUTH_REDIRECT_PATH = `${DOCS_PREFIX}/static/oauth2-redirect.html`;

/** Registers the OpenAPI generator and the local Swagger UI; call before any API route. */
export async function registerOpenApi(app: HttpApp, serverUrl: string, oauth: OpenApiOAuth): Promise<void> {
  app.addHook('onRoute', checkRoute);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Pier workflow runner API',
        version: pkg.version,
        description:
          'REST API of the Pier workflow runner: every operation of its web UI. Each operation lists the ' +
          'schemes it accepts in `security`, and the full declaration in `x-pier-access`. Errors are ' +
          'RFC 9457 `application/problem+json`.',
      },
      servers: [{ url: serverUrl }],
      tags: [
        { name: 'auth', description: 'Login and first-run setup' },
        { name: 'account', description: 'The signed-in user' },
        { name: 'tokens', description: 'Personal access tokens' },
        { name: 'users', description: 'User administration (admins)' },
        { name: 'projects', description: 'Projects and members' },
        { name: 'workflows', description: 'Workflow archives (.knwf) and versions' },
        { name: 'runs', description: 'Runs, logs and outputs' },
        { name: 'schedules', description: 'Cron schedules that queue runs of a workflow' },
        { name: 'executors', description: 'Executor protocol and management' },
        { name: 'meta', description: 'Service information' },
      ],
      components: {
        securitySchemes: {
          [SCHEMES.pat]: {
            type: 'apiKey',
            in: 'header',
            name: 'Authorization',
            description: 'Personal access token: `Authorization: ApiKey rnr_pat_…` or `Authorization: Bearer rnr_pat_…`. Scope `read` or `write`.',
          },
          [SCHEMES.oauth]: {
            // OpenAPI 3.1 §4.8.27-30: the authorization code flow of the runner's own server
            // (PKCE S256 required). Tokens go in `Authorization: Bearer rnr_oat_…` (as here) or
            // `Authorization: ApiKey rnr_oat_…`.
            type: 'oauth2',
            description:
              'OAuth 2.1 access token from the runner\'s authorization server (discovery: `/.well-known/oauth-authorization-server`). ' +
              'Send it as `Authorization: Bearer rnr_oat_…` or `Authorization: ApiKey rnr_oat_…`. Scope `read` or `write` (write implies read).',
            flows: {
              authorizationCode: {
                authorizationUrl: oauth.authorizationUrl,
                tokenUrl: oauth.tokenUrl,
                refreshUrl: oauth.tokenUrl,
                scopes: {
                  read: 'Read projects, workflows and runs',
                  write: 'Change projects, workflows and runs, and start runs (implies read)',
                },
              },
            },
          },
          [SCHEMES.apiKey]: {
            type: 'apiKey',
            in: 'header',
            name: 'Authorization',
            description: 'Admin API key (the `API_KEY` setting): `Authorization: ApiKey <API_KEY>`. For executors and run operations.',
          },
          [SCHEMES.jwt]: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description: 'Web UI session from `POST /api/auth/login` (valid 7 days). Role `admin` where required.',
          },
        },
      },
    },
    transform: ({ schema, url, route }) => {
      const declared = accessOf(route.config);
      if (!declared || !schema) return { schema, url };
      const out: Record<string, unknown> = { ...schema, security: securityOf(declared), 'x-pier-access': { ...declared } };
      const multipart = (route.config as { multipartDoc?: MultipartDoc } | undefined)?.multipartDoc;
      if (multipart) {
        out.consumes = ['multipart/form-data'];
        out.body = { type: 'object', properties: multipart.fields, required: multipart.required };
      }
      return { schema: out as typeof schema, url };
    },
  });
  await registerDocsUi(app, {
    publicUrl: serverUrl,
    // "Authorize" in the docs runs the authorization code flow with PKCE as the docs client.
    initOAuth: { clientId: oauth.docsClientId, usePkceWithAuthorizationCodeGrant: true, scopes: ['read'] },
    // No policy given: Swagger UI's (hashes of its files), upgrading only for an https RUNNER_URL.
  });
}

/**
 * What the OpenAPI documents of the publishing app and of the runner share: where the docs live,
 * the problem+json schema of errors, the start-up check that every API route documents itself,
 * and the local Swagger UI (assets served by us, no CDN).
 */
import swaggerUi, { type FastifySwaggerUiOptions } from '@fastify/swagger-ui';
import type { RouteOptions } from 'fastify';
import { Type } from 'typebox';
import { type HttpApp, upgradesInsecureRequests, withoutUpgradeInsecureRequests } from './http.js';

/** The docs page; its document is at `${DOCS_PREFIX}/json`. */
export const DOCS_PREFIX = '/api/docs';

/** RFC 9457 problem details as produced by src/infra/http.ts (toProblem). */
export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    code: Type.String({ description: 'stable machine-readable error code, e.g. invalid_field' }),
    detail: Type.String(),
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          field: Type.String(),
          message: Type.String(),
          line: Type.Optional(Type.Integer()),
        }),
      ),
    ),
    requestId: Type.Optional(Type.String({ description: 'the id of the request (also in the X-Request-Id header): quote it when reporting an error' })),
  },
  { description: 'RFC 9457 problem details' },
);

/** The routes a document must describe: everything under /api/ but the docs themselves. */
export function isDocumentedApiRoute(route: Pick<RouteOptions, 'url' | 'method'>): boolean {
  if (!route.url.startsWith('/api/') || route.url === DOCS_PREFIX || route.url.startsWith(`${DOCS_PREFIX}/`)) return false;
  // fastify adds a HEAD route beside each GET; the GET documents both.
  return route.method !== 'HEAD';
}

/** `GET /api/x` as routes are named in start-up errors. */
export function routeName(route: Pick<RouteOptions, 'url' | 'method'>): string {
  return `${[route.method].flat().join(',')} ${route.url}`;
}

/** The schema keys among `keys` that the route does not declare (empty: all there). */
export function missingSchemaKeys(route: Pick<RouteOptions, 'schema'>, keys: readonly string[]): string[] {
  const schema = route.schema as Record<string, unknown> | undefined;
  return keys.filter((key) => schema?.[key] === undefined || schema[key] === null || schema[key] === '');
}

export interface DocsUiOptions {
  /** The app's public URL: CSP `upgrade-insecure-requests` only when it is https (see http.ts). */
  publicUrl: string;
  uiConfig?: FastifySwaggerUiOptions['uiConfig'];
  initOAuth?: FastifySwaggerUiOptions['initOAuth'];
  /**
   * The Content-Security-Policy of the docs routes (page, assets, document). Without it, Swagger
   * UI's own policy (hashes of its static files), upgrading to https only for an https public URL.
   */
  policy?: string;
}

/**
 * Serves Swagger UI at DOCS_PREFIX from node_modules (@fastify/swagger-ui's bundled assets) and
 * the document @fastify/swagger built at `${DOCS_PREFIX}/json`. Register @fastify/swagger first.
 */
export async function registerDocsUi(app: HttpApp, options: DocsUiOptions): Promise<void> {
  await app.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    uiConfig: { deepLinking: true, docExpansion: 'list', ...options.uiConfig },
    ...(options.initOAuth ? { initOAuth: options.initOAuth } : {}),
    ...(options.policy !== undefined
      ? { staticCSP: options.policy }
      : {
          staticCSP: true,
          // Swagger UI's own policy always upgrades; the app's rule (an https public URL only) applies.
          ...(upgradesInsecureRequests(options.publicUrl) ? {} : { transformStaticCSP: withoutUpgradeInsecureRequests }),
        }),
  });
}

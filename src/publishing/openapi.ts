/**
 * The publishing REST API's OpenAPI document (`/api/docs/json`) and docs page (`/api/docs`), and
 * what routes use to describe themselves: the security requirements and problem+json responses.
 * Every `/api/` route must document itself fully or the app does not start (checkPublishingRoute).
 */
import swagger from '@fastify/swagger';
import type { RouteOptions } from 'fastify';
import type { HttpApp } from '../infra/http.js';
import { DOCS_PREFIX, isDocumentedApiRoute, missingSchemaKeys, Problem, registerDocsUi, routeName } from '../infra/openapi.js';
import pkg from '../../package.json' with { type: 'json' };

export { DOCS_PREFIX };

/** One entry of an OpenAPI `security` list: scheme name → scopes (none for bearer schemes). */
export type SecurityRequirement = { [scheme: string]: string[] };

/** Names of the security schemes in the document. */
export const SCHEMES = { editToken: 'editToken', trustedPublishing: 'trustedPublishing' } as const;

/**
 * `security` of a route that takes the product's credential: its edit token, or a trusted-publishing
 * credential exchanged at `POST /api/oidc/token` (either one: the entries of an OpenAPI `security` list are alternatives).
 */
export const VENDOR_SECURITY: SecurityRequirement[] = [{ [SCHEMES.editToken]: [] }, { [SCHEMES.trustedPublishing]: [] }];
/** `security` of a route anyone may call. */
export const PUBLIC_SECURITY: SecurityRequirement[] = [];

const WWW_AUTHENTICATE = {
  type: 'string',
  description: 'RFC 6750 §3 challenge: `Bearer realm="pier", charset="UTF-8"` (with `error="invalid_token"` when a token was sent)',
};
const RETRY_AFTER = { type: 'string', description: 'seconds to wait before the next attempt' };

const PROBLEMS: Record<number, { description: string; headers?: Record<string, object> }> = {
  400: { description: 'Invalid request: problem+json `invalid_field` or `malformed_body` naming each field in `errors`' },
  401: { description: 'Missing or invalid credential (problem+json `unauthorized`)', headers: { 'WWW-Authenticate': WWW_AUTHENTICATE } },
  403: { description: 'Credential valid, but not for this operation' },
  404: { description: 'No such product (problem+json `not_found`)' },
  409: { description: 'Conflict with the current state' },
  413: { description: 'Body larger than the limit (problem+json `payload_too_large`)' },
  415: { description: 'Body is not `application/json` (problem+json `unsupported_media_type`)' },
  422: { description: 'Understood but refused (problem+json naming why)' },
  429: {
    description: 'Too many failed attempts from this address (problem+json `too_many_requests`); see `Retry-After`',
    headers: { 'Retry-After': RETRY_AFTER },
  },
  503: { description: 'Busy or shutting down (problem+json `unavailable`); see `Retry-After`', headers: { 'Retry-After': RETRY_AFTER } },
};

export interface ProblemResponse {
  description: string;
  headers?: Record<string, object>;
  content: { 'application/problem+json': { schema: typeof Problem } };
}

/**
 * One problem+json response; `description` replaces the generic one (say which codes this route
 * answers with this status).
 */
export function problem(status: number, description?: string): ProblemResponse {
  const known = PROBLEMS[status];
  return {
    description: description ?? known?.description ?? 'Error (problem+json)',
    ...(known?.headers ? { headers: known.headers } : {}),
    content: { 'application/problem+json': { schema: Problem } },
  };
}

/** problem+json responses for `statuses`, to spread into a route's `response`. */
export function problems(...statuses: number[]): Record<number, ProblemResponse> {
  const out: Record<number, ProblemResponse> = {};
  for (const s of statuses) out[s] = problem(s);
  return out;
}

/** Statuses every route of a kind can answer (the checks below require them). */
export const STATUSES = {
  /** Any route: a NUL or an over-long value in the path or query (infra/http.ts) is 400. */
  any: [400],
  /** A route that authenticates the product: no or a wrong credential, then the failure limiter. */
  vendor: [401, 429],
  /** A route with path parameters: they name something that may not exist. */
  params: [404],
  /** A route that declares a JSON body: fastify's body limit and the JSON-only parser. */
  body: [413, 415],
} as const;

/** Methods whose routes always take a body; a POST may have none (an action, as a release is). */
const BODY_METHODS = new Set(['PUT', 'PATCH']);

/**
 * What the route lacks to be documented ("schema.operationId", "schema.response[401]"), empty when
 * nothing. Every /api/ route declares tags, summary, operationId, security (an empty list when
 * public) and its responses; params when its path has any, body when it takes one (PUT and PATCH
 * always do); and among its responses a success and every error status its kind can answer
 * (STATUSES), each error as problem+json.
 */
export function undocumented(route: Pick<RouteOptions, 'url' | 'method' | 'schema'>): string[] {
  const missing = missingSchemaKeys(route, ['tags', 'summary', 'operationId', 'security', 'response']).map((k) => `schema.${k}`);
  const schema = (route.schema ?? {}) as Record<string, unknown>;
  const hasParams = route.url.includes(':');
  if (hasParams && !schema.params) missing.push('schema.params');
  if (!schema.body && [route.method].flat().some((m) => BODY_METHODS.has(String(m).toUpperCase()))) missing.push('schema.body');
  const hasBody = schema.body !== undefined;
  const response = schema.response as Record<string, unknown> | undefined;
  if (response) {
    const statuses = Object.keys(response);
    if (!statuses.some((s) => /^2(\d\d|xx)$/i.test(s))) missing.push('schema.response[2xx]');
    const needed: number[] = [...STATUSES.any];
    if (Array.isArray(schema.security) && schema.security.length > 0) needed.push(...STATUSES.vendor);
    if (hasParams) needed.push(...STATUSES.params);
    if (hasBody) needed.push(...STATUSES.body);
    for (const s of needed) if (!(String(s) in response)) missing.push(`schema.response[${s}]`);
    // Errors are answered by infra/http.ts as problem+json: the document must say so (problem()).
    for (const s of statuses.filter((x) => /^[45]/.test(x))) {
      const content = (response[s] as { content?: Record<string, unknown> } | undefined)?.content;
      if (!content?.['application/problem+json']) missing.push(`schema.response[${s}].content['application/problem+json']`);
    }
  }
  return missing;
}

/** The onRoute check: an /api/ route that is not fully documented stops start-up, naming what it lacks. */
export function checkPublishingRoute(route: RouteOptions): void {
  if (!isDocumentedApiRoute(route)) return;
  const missing = undocumented(route);
  if (missing.length === 0) return;
  throw new Error(
    `publishing API route ${routeName(route)} is not documented: it lacks ${missing.join(', ')}. ` +
      'Every /api/ route declares tags, summary, operationId, security (VENDOR_SECURITY or PUBLIC_SECURITY), ' +
      'params and body schemas, and a response schema for every status it answers (see src/publishing/openapi.ts).',
  );
}

/**
 * The docs page runs under the catalog pages' policy (`pagePolicy`, web/routes.ts PAGE_CSP):
 * Swagger UI is scripts and styles from 'self' and style attributes. It also fetches the document
 * from 'self', which pages never need.
 */
export function docsPolicy(pagePolicy: string): string {
  return `${pagePolicy}; connect-src 'self'`;
}

/**
 * Registers the check, the OpenAPI generator and the local Swagger UI. Call before any API route:
 * @fastify/swagger and the check both see only routes added after them.
 */
export async function registerPublishingOpenApi(app: HttpApp, { baseUrl, pagePolicy }: { baseUrl: string; pagePolicy: string }): Promise<void> {
  app.addHook('onRoute', checkPublishingRoute);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Pier publishing API',
        version: pkg.version,
        description:
          'REST API of the Pier extension catalog for vendors and their CI: edit a product\'s page, read its ' +
          'crawl report, release uploaded update sites, and publish from CI without stored secrets (trusted ' +
          'publishing). Files are uploaded over SFTP; `GET /api/publishing` tells where. Errors are RFC 9457 ' +
          '`application/problem+json` with a stable `code` and, for invalid input, `errors: [{ field, message }]`.',
      },
      servers: [{ url: baseUrl }],
      tags: [
        { name: 'products', description: 'The product page: its fields, read and changed by the vendor' },
        { name: 'crawls', description: 'Integrity reports of the uploaded update sites' },
        { name: 'releases', description: 'Labels, their immutable releases and rollbacks' },
        { name: 'files', description: 'What the vendor uploaded over SFTP' },
        { name: 'trusted publishing', description: 'Publishing from CI with its OIDC identity instead of stored secrets' },
        { name: 'publishing', description: 'Where and how to publish to this service' },
        { name: 'stats', description: 'Installs counted by the download host, per day and label' },
      ],
      components: {
        securitySchemes: {
          [SCHEMES.editToken]: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'pier_et_…',
            description:
              'The product\'s edit token (`Authorization: Bearer pier_et_…`), shown once when staff register the ' +
              'product or rotate it. Repeated failures from one address are refused for a while (429).',
          },
          [SCHEMES.trustedPublishing]: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'pier_tp_…',
            description:
              'A trusted-publishing credential (`Authorization: Bearer pier_tp_…`) from `POST /api/oidc/token`: ' +
              'a CI job\'s OIDC ID token exchanged for a 15-minute credential of the product bound to that CI identity.',
          },
        },
      },
    },
    // The document is the REST API's: the pages, feeds and badges (not under /api/) stay out.
    transform: ({ schema, url, route }) => ({ schema: isDocumentedApiRoute(route) ? schema : { ...schema, hide: true }, url }),
  });
  await registerDocsUi(app, {
    publicUrl: baseUrl,
    policy: docsPolicy(pagePolicy),
    // Without Swagger UI's top bar: its logo is an SVG with a <style> element, which the pages'
    // policy refuses, and its box loads any document a visitor types in; this page shows ours.
    uiConfig: { layout: 'BaseLayout' },
  });
}

import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
  type RouteOptions,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify';
import { AppError, type FieldProblem } from './errors.js';
import { countFrameworkError, instrumentHttpApp } from './metrics/http.js';
import { NulCharacterError, nulFieldIn } from './nul.js';
import type { LogLevel, TrustProxy } from './config.js';
import { applySecurityHeaders, securityHeaders } from './security-headers.js';
import { REQUEST_ID_HEADER, requestIdGenerator } from './request-id.js';
import { readinessProbe } from './readiness.js';
import { closeGracefullyWhenDraining } from './drain.js';
import { continueOnFirstRead } from './expect-continue.js';
import { closeOnUnreadBody } from './unread-body.js';

export type HttpApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export interface HttpAppOptions {
  logLevel: LogLevel;
  /** Largest accepted request body in bytes; larger bodies get 413. */
  bodyLimit?: number;
  /** Content-Security-Policy directives to add to helmet's defaults (docs pages need more). */
  contentSecurityPolicy?: Record<string, string[]> | false;
  /**
   * PIER_TRUST_PROXY: whose X-Forwarded-For decides `req.ip` (rate limits, logs). Off by default:
   * believing the header from anyone would let every client choose its own address.
   */
  trustProxy?: TrustProxy;
  /**
   * Longest value of one path parameter, in UTF-16 code units after percent-decoding (how the
   * router counts); default fastify's 100. A longer one is answered 400 problem+json, not 414.
   */
  maxParamLength?: number;
  /**
   * The app's own public URL (RUNNER_URL, PIER_BASE_URL). CSP `upgrade-insecure-requests` is sent
   * only when it is https: over plain http the browser would fetch every asset over https and
   * find nothing there (browsers exempt only localhost).
   */
  publicUrl?: string;
  /**
   * Refuse NUL (U+0000) in every path parameter, query value, body value or key, cookie and Basic
   * credential with 400 naming the field (see nul.ts), before validation and before any handler.
   */
  refuseNul?: boolean;
  /**
   * Refuse NUL in path parameters and query values already at onRequest, before any route's own
   * onRequest hook: routes that authenticate there look the path's resource up in the database,
   * and PostgreSQL fails a statement holding NUL (a 500). Bodies are not read yet at that point.
   */
  refuseNulInAddress?: boolean;
  /** The app's name in metrics (`app` label of pier_http_*: web, runner); see infra/metrics/http.ts. */
  appName?: string;
  /**
   * Why the app should not be sent work now (null: ready), answered at GET /readyz as 503; see
   * readiness.ts. Without it the app is ready unless the process drains.
   */
  notReady?: () => Promise<string | null>;
  /**
   * One info line per answered request (PIER_REQUEST_LOG): method, route template, path without
   * its query, status, time, client address and request id; never headers, bodies or queries,
   * which may carry credentials. On unless false.
   */
  logRequests?: boolean;
}

/** Every route registered on an app made by createHttpApp, in order (the NUL route walk tests use it). */
const routeLists = new WeakMap<object, RouteOptions[]>();

export function registeredRoutes(app: HttpApp): readonly RouteOptions[] {
  return routeLists.get(app) ?? [];
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Body fields (dotted, `*` = any one segment) whose NUL the route replaces instead of refusing. */
    nulReplacedIn?: string[];
  }
}

/** The first place in the request that holds NUL, named as validation errors name fields. */
export function nulFieldOfRequest(req: FastifyRequest): string | null {
  const skip = (req.routeOptions.config?.nulReplacedIn ?? []).map((p) => p.split('.'));
  const cookies = (req as { cookies?: Record<string, unknown> }).cookies;
  return (
    nulFieldIn(req.params) ??
    nulFieldIn(req.query) ??
    nulFieldIn(req.body, [], skip) ??
    (cookies ? nulFieldIn(cookies, ['cookies']) : null) ??
    (basicCredentialsHoldNul(req.headers.authorization) ? 'authorization' : null)
  );
}

/** RFC 7617 §2: the user-id and password of Basic credentials contain no control characters. */
function basicCredentialsHoldNul(header: string | undefined): boolean {
  const m = /^basic\s+(\S+)\s*$/i.exec(header ?? '');
  return !!m && Buffer.from(m[1]!, 'base64').toString('utf8').includes('\u0000');
}

/**
 * Whether pages of an app at `publicUrl` may tell browsers to upgrade their requests to https
 * (W3C Upgrade Insecure Requests §3.1): only when the app itself is served over https.
 */
export function upgradesInsecureRequests(publicUrl: string | undefined): boolean {
  return publicUrl?.toLowerCase().startsWith('https:') === true;
}

/** A policy without `upgrade-insecure-requests`, for a policy built by another library. */
export function withoutUpgradeInsecureRequests(policy: string): string {
  return policy
    .split(';')
    .filter((d) => d.trim().toLowerCase() !== 'upgrade-insecure-requests')
    .join(';');
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  code: string;
  detail: string;
  errors?: FieldProblem[];
  /** The request's id (X-Request-Id): a user's error report leads straight to its log lines. */
  requestId?: string;
}

const PROBLEM_TYPE = 'application/problem+json; charset=utf-8';

/** Ajv's `/style/color1` → `style.color1`; the body itself is "(body)". */
function fieldOf(instancePath: string, extra?: string): string {
  const parts = instancePath.split('/').filter(Boolean);
  if (extra) parts.push(extra);
  return parts.length ? parts.join('.') : '(body)';
}

export interface AjvIssue {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** Ajv's issues as the `errors` of a problem (exported for routes that add their own checks to the schema's). */
export function validationProblems(issues: AjvIssue[]): FieldProblem[] {
  return issues.map((v) => {
    if (v.keyword === 'additionalProperties') {
      const name = String(v.params.additionalProperty);
      return { field: fieldOf(v.instancePath, name), message: `unknown field "${name}"` };
    }
    if (v.keyword === 'required') {
      const name = String(v.params.missingProperty);
      return { field: fieldOf(v.instancePath, name), message: 'is required' };
    }
    return { field: fieldOf(v.instancePath), message: v.message ?? 'is invalid' };
  });
}

/** Maps anything thrown in a request to a problem; 5xx never carries internals. */
export function toProblem(err: unknown): { problem: Problem; headers: Record<string, string> } {
  const make = (status: number, code: string, title: string, detail: string, errors?: FieldProblem[]) => ({
    problem: { type: 'about:blank', title, status, code, detail, ...(errors?.length ? { errors } : {}) },
    headers: {} as Record<string, string>,
  });
  if (err instanceof AppError) {
    const p = make(err.status, err.code, err.title, err.message, err.errors);
    p.headers = err.headers;
    return p;
  }
  const fe = err as FastifyError & { validation?: AjvIssue[]; validationContext?: string };
  if (fe?.validation) {
    const where = fe.validationContext ?? 'request';
    const errors = validationProblems(fe.validation);
    const first = errors[0];
    const detail = first ? `${first.field} ${first.message}` : `invalid ${where}`;
    return make(400, 'invalid_field', 'Invalid request', detail, errors);
  }
  switch (fe?.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return make(415, 'unsupported_media_type', 'Unsupported media type', 'send the body as application/json');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return make(413, 'payload_too_large', 'Payload too large', fe.message);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return make(400, 'malformed_body', 'Malformed request body', fe.message, [{ field: '(body)', message: fe.message }]);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return make(400, 'bad_request', 'Bad request', fe.message);
    case 'SQLITE_BUSY': {
      // Another process held the SQLite file's write lock past the wait (sqlite-driver.ts):
      // nothing was written; the client may try again shortly.
      const p = make(503, 'unavailable', 'Service unavailable', 'the database is busy with another write; try again shortly');
      p.headers = { 'retry-after': '1' };
      return p;
    }
  }
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 500;
  if (status === 429) {
    return make(429, 'too_many_requests', 'Too many requests', 'rate limit exceeded; retry later');
  }
  if (status >= 400 && status < 500) {
    return make(status, 'bad_request', 'Bad request', fe.message);
  }
  return make(500, 'internal_error', 'Internal server error', 'an unexpected error occurred; it has been logged');
}

/** fastify's default limit on one path parameter. */
const DEFAULT_MAX_PARAM_LENGTH = 100;

/** The router found a path parameter longer than any name or id the app accepts. */
function paramTooLong(max: number): { problem: Problem; headers: Record<string, string> } {
  const message = `is longer than ${max} characters`;
  return toProblem(
    new AppError(400, 'invalid_field', 'Invalid request', `a path parameter ${message}: no resource has such a name`, [{ field: '(path)', message }]),
  );
}

/** Line and column of a character offset, both 1-based. */
function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lastBreak = -1;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lastBreak = i;
    }
  }
  return { line, column: offset - lastBreak };
}

/** JSON parser that reports where the body is broken and refuses prototype keys. */
/** Keys that name an object's prototype machinery: refused wherever they appear in a body. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * The first forbidden key in a parsed body, with its path (`labels.__proto__`, as validation
 * errors name fields). JSON.parse keeps such a key as a plain own property; it is refused before
 * any code could copy it onto an object. Walked with a stack: a body nested a million deep must
 * not overflow the call stack.
 */
function forbiddenKeyIn(root: unknown): { key: string; field: string } | null {
  // The root's path is null: an empty key is a path of its own ('' then '.x').
  const stack: [unknown, string | null][] = [[root, null]];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    const isArray = Array.isArray(value);
    for (const key of Object.keys(value)) {
      const field = path === null ? key : `${path}.${key}`;
      if (!isArray && FORBIDDEN_KEYS.has(key)) return { key, field };
      stack.push([(value as Record<string, unknown>)[key], field]);
    }
  }
  return null;
}

export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') {
    throw new AppError(400, 'malformed_body', 'Malformed request body', 'the body is empty; send a JSON object', [
      { field: '(body)', message: 'is empty' },
    ]);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    const pos = /position (\d+)/.exec(message);
    const where = pos ? lineColumn(text, Number(pos[1])) : null;
    const detail = where ? `invalid JSON at line ${where.line}, column ${where.column}: ${message}` : `invalid JSON: ${message}`;
    throw new AppError(400, 'malformed_body', 'Malformed request body', detail, [
      { field: '(body)', message, ...(where ? { line: where.line } : {}) },
    ]);
  }
  const forbidden = forbiddenKeyIn(parsed);
  if (forbidden) {
    throw new AppError(400, 'invalid_field', 'Invalid request', `forbidden key "${forbidden.key}" at ${forbidden.field}`, [{ field: forbidden.field, message: 'this key is not allowed' }]);
  }
  return parsed;
}

/**
 * Fastify 5 ignores a bare hop count (it cannot check the nearest peer), so a count becomes
 * proxy-addr's trust function: the nearest `hops` addresses (the socket's first) are proxies,
 * as Express's `trust proxy = N`. The operator vouches that every connection passes them.
 */
function trustProxyOption(trust: TrustProxy): FastifyServerOptions['trustProxy'] {
  if (typeof trust === 'number') return trust === 0 ? false : (_address: string, hop: number) => hop < trust;
  return trust;
}

/**
 * The one HTTP app factory: strict schema validation (no coercion, unknown fields rejected
 * rather than silently dropped), problem+json errors, security headers, one log line per request.
 */
export function createHttpApp(options: HttpAppOptions): HttpApp {
  const logRequests = options.logRequests !== false;
  /** The request line (see `logRequests`): the id is the logger's `reqId`, as on every line the request causes. */
  const requestLine = (req: FastifyRequest, status: number, ms: number) =>
    req.log.info(
      { method: req.method, route: req.routeOptions?.url ?? null, path: req.url.split('?')[0], status, ms: Math.round(Number.isFinite(ms) ? ms : 0), ip: req.ip },
      'request',
    );
  // Security headers on every answer, 404s and errors included, set before any route runs (a
  // route may still replace one, as the OAuth metadata does with its resource policy).
  const security = securityHeaders({
    contentSecurityPolicy:
      options.contentSecurityPolicy === false
        ? false
        : {
            useDefaults: true,
            directives: {
              ...(options.contentSecurityPolicy ?? {}),
              // helmet's defaults include it; null drops a default directive.
              upgradeInsecureRequests: upgradesInsecureRequests(options.publicUrl) ? [] : null,
            },
          },
    // Pages link to the download host and other origins; a strict CORP would block embeds.
    crossOriginResourcePolicy: { policy: 'same-site' },
  });
  const serverOptions: FastifyServerOptions = {
    logger:
      options.logLevel === 'silent'
        ? false
        : { level: options.logLevel },
    // Requests are logged once, below, without headers or bodies (they carry secrets).
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    trustProxy: trustProxyOption(options.trustProxy ?? false),
    // Every request has an id (the trusted proxy's X-Request-Id, else a new one), answered in
    // X-Request-Id and in problem bodies, and logged as reqId on every line the request logs.
    genReqId: requestIdGenerator(options.trustProxy ?? false),
    requestIdHeader: false,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: true, allErrors: true, allowUnionTypes: true } },
    // Closing is a drain (drain.ts): a request on a connection accepted before the close is
    // answered as usual, with `Connection: close`, not refused.
    return503OnClosing: false,
    routerOptions: { maxParamLength: options.maxParamLength ?? DEFAULT_MAX_PARAM_LENGTH },
    // Errors the router raises before any route runs (a path parameter over maxParamLength, a
    // malformed URL) get the same problem+json as every other error; fastify's own answer to an
    // over-long parameter is a plain-JSON 414, which says the URI is too long for the server.
    frameworkErrors: (err, req, reply) => {
      const { problem, headers } =
        err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? paramTooLong(options.maxParamLength ?? DEFAULT_MAX_PARAM_LENGTH) : toProblem(err);
      countFrameworkError(options.appName ?? 'app', req.method, problem.status);
      applySecurityHeaders(reply.raw, security);
      // No route ran, so no onResponse hook: the request line is written here, or an error
      // report quoting this requestId would find nothing in the log.
      if (logRequests) reply.raw.once('finish', () => requestLine(req, problem.status, (reply as FastifyReply).elapsedTime));
      (reply as FastifyReply).code(problem.status).headers(headers).header(REQUEST_ID_HEADER, req.id).type(PROBLEM_TYPE).send({ ...problem, requestId: req.id });
    },
  };
  const app = Fastify(serverOptions).withTypeProvider<TypeBoxTypeProvider>() as unknown as HttpApp;
  closeGracefullyWhenDraining(app.server);
  // A body over the limit is refused (413) before the client sends it: expect-continue.ts.
  continueOnFirstRead(app.server);
  closeOnUnreadBody(app.server);
  instrumentHttpApp(app, options.appName ?? 'app');

  // JSON only: fastify's default text/plain parser would let a text body reach JSON routes as a
  // string. Parts that take uploads register @fastify/multipart themselves.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (e) {
      done(e as Error, undefined);
    }
  });

  app.addHook('onRequest', (req, reply, done) => {
    applySecurityHeaders(reply.raw, security);
    reply.raw.setHeader(REQUEST_ID_HEADER, req.id);
    done();
  });

  const routes: RouteOptions[] = [];
  routeLists.set(app, routes);
  app.addHook('onRoute', (route) => {
    routes.push(route as RouteOptions);
  });

  if (options.refuseNulInAddress) {
    app.addHook('onRequest', (req, _reply, done) => {
      const field = nulFieldIn(req.params) ?? nulFieldIn(req.query);
      done(field ? new NulCharacterError(field) : undefined);
    });
  }

  if (options.refuseNul) {
    // preValidation: after body parsing and the authentication hook, before schema validation,
    // so the answer names the field holding NUL whatever else is wrong with the request.
    app.addHook('preValidation', (req, _reply, done) => {
      const field = nulFieldOfRequest(req);
      done(field ? new NulCharacterError(field) : undefined);
    });
  }

  if (logRequests) {
    app.addHook('onResponse', (req, reply, done) => {
      requestLine(req, reply.statusCode, reply.elapsedTime);
      done();
    });
  }

  app.setErrorHandler((err, req, reply) => {
    const { problem, headers } = toProblem(err);
    if (problem.status >= 500) req.log.error({ err }, 'request failed');
    reply.code(problem.status).headers(headers).type(PROBLEM_TYPE).send({ ...problem, requestId: req.id });
  });

  app.setNotFoundHandler((req, reply) => {
    const problem: Problem = {
      type: 'about:blank',
      title: 'Not found',
      status: 404,
      code: 'not_found',
      detail: `no route for ${req.method} ${req.url.split('?')[0]}`,
      requestId: req.id,
    };
    reply.code(404).type(PROBLEM_TYPE).send(problem);
  });

  // Liveness: the process answers. Readiness: it should be sent work (not draining, its
  // database answers); load balancers and orchestrators probe both.
  app.get('/healthz', async () => ({ status: 'ok' }));
  const notReady = options.notReady ?? readinessProbe(async () => null);
  app.get('/readyz', async (req, reply) => {
    reply.header('cache-control', 'no-store');
    const problem = await notReady();
    if (problem === null) return { status: 'ready' };
    reply.code(503).type(PROBLEM_TYPE);
    return { type: 'about:blank', title: 'Service Unavailable', status: 503, code: 'not_ready', detail: problem, requestId: req.id };
  });
  return app;
}

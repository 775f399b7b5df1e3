/**
 * Requests of the fastify apps (publishing web + API, runner): pier_http_requests_total and
 * pier_http_request_duration_seconds (see registry.ts). The route label is fastify's route
 * template (`/api/products/:id`), never the URL: a URL is whatever the client sent, so one
 * scanner could make a new series per request. Requests no route matched (404s) are `unmatched`.
 */
import type { FastifyInstance } from 'fastify';
import { Counter, Histogram } from 'prom-client';
import { instruments, LATENCY_BUCKETS, STATUS_CLASSES, statusClassIndex } from './registry.js';

/** Methods named as they are; anything else node:http lets through (PROPFIND, PURGE…) is `other`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const methodLabel = (method: string) => (METHODS.has(method) ? method : 'other');

/** The label value of requests that matched no route: 404s, and URLs the router refused. */
export const UNMATCHED_ROUTE = 'unmatched';

const httpInstruments = instruments((registry) => ({
  requests: new Counter({
    name: 'pier_http_requests_total',
    help: 'HTTP requests answered, by app, method, route template and status class',
    labelNames: ['app', 'method', 'route', 'status_class'] as const,
    registers: [registry],
  }),
  duration: new Histogram({
    name: 'pier_http_request_duration_seconds',
    help: 'Time from request to answer sent, by app, method and route template',
    labelNames: ['app', 'method', 'route'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  }),
}));

/**
 * Counts every answer of `app` (no-op while metrics are off). Called by createHttpApp before any
 * route exists; fastify's hooks apply to the routes registered after them too.
 */
export function instrumentHttpApp(app: FastifyInstance, appName: string): void {
  const m = httpInstruments();
  if (!m) return;
  // Callback style: no promise per request.
  app.addHook('onResponse', (req, reply, done) => {
    // Undefined when the not-found handler answered: the URL matched no template.
    const route = req.routeOptions.url ?? UNMATCHED_ROUTE;
    const method = methodLabel(req.method);
    m.requests.inc({ app: appName, method, route, status_class: STATUS_CLASSES[statusClassIndex(reply.statusCode)] });
    m.duration.observe({ app: appName, method, route }, reply.elapsedTime / 1000);
    done();
  });
}

/**
 * Counts an answer fastify's router gave before any route or hook ran (a malformed URL, a path
 * parameter over the length limit: `frameworkErrors` in infra/http.ts), which onResponse never
 * sees. Such answers are immediate, so they are counted but not timed.
 */
export function countFrameworkError(appName: string, method: string, status: number): void {
  httpInstruments()?.requests.inc({ app: appName, method: methodLabel(method), route: UNMATCHED_ROUTE, status_class: STATUS_CLASSES[statusClassIndex(status)] });
}

/**
 * Requests of the fastify apps (publishing web + API, runner): pier_http_requests_total and
 * pier_http_request_duration_seconds (see registry.ts). The route label is fastify's route
 * template (`/api/products/:id`), never the URL: a URL is whatever the client sent, so one
 * scanner could make a new series per request. Requests no route matched (404s) are `unmatched`.
 *
 * An answer costs two map lookups and a few additions to plain numbers; the series are written
 * out when the page is scraped. (prom-client's own Counter and Histogram hash their label
 * objects on every call: about a microsecond and a half per request here, a few percent of a
 * small API request.)
 */
import type { FastifyInstance } from 'fastify';
import type { Gauge, MetricValue, Registry } from 'prom-client';
import { instruments, LATENCY_BUCKETS, STATUS_CLASSES, statusClassIndex } from './registry.js';

/** Methods named as they are; anything else node:http lets through (PROPFIND, PURGE…) is `other`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const methodLabel = (method: string) => (METHODS.has(method) ? method : 'other');

/** The label value of requests that matched no route: 404s, and URLs the router refused. */
export const UNMATCHED_ROUTE = 'unmatched';

/** One app's requests of one method to one route template. */
interface Series {
  labels: { app: string; method: string; route: string };
  /** Answers by status class (index: statusClassIndex). */
  answers: number[];
  /** Timed answers per latency bucket, not cumulative; the last is above the largest bound. */
  buckets: number[];
  seconds: number;
}

const REQUESTS = 'pier_http_requests_total';
const DURATION = 'pier_http_request_duration_seconds';

const httpInstruments = instruments((registry: Registry) => {
  /** By app, then route template, then method label. */
  const apps = new Map<string, Map<string, Map<string, Series>>>();
  const all = function* () {
    for (const routes of apps.values()) for (const methods of routes.values()) yield* methods.values();
  };
  // Metric objects of prom-client's own shape (name, help, type, get): the registry writes them
  // out with its default labels like any other.
  const metric = (name: string, help: string, type: 'counter' | 'histogram', values: () => MetricValue<string>[]) => {
    const read = () => ({ name, help, type, aggregator: 'sum' as const, values: values() });
    registry.registerMetric({ ...read(), get: async () => read() } as unknown as Gauge);
  };
  metric(REQUESTS, 'HTTP requests answered, by app, method, route template and status class', 'counter', () => {
    const values: MetricValue<string>[] = [];
    for (const s of all()) {
      s.answers.forEach((n, i) => {
        // 1xx-5xx always (zeros included, so rate() has the series); `other` only when seen.
        if (i > 0 || n > 0) values.push({ labels: { ...s.labels, status_class: STATUS_CLASSES[i] as string }, value: n });
      });
    }
    return values;
  });
  metric(DURATION, 'Time from request to answer sent, by app, method and route template', 'histogram', () => {
    const values: MetricValue<string>[] = [];
    for (const s of all()) {
      let cumulative = 0;
      s.buckets.forEach((n, i) => {
        cumulative += n;
        const le = i < LATENCY_BUCKETS.length ? String(LATENCY_BUCKETS[i]) : '+Inf';
        values.push({ labels: { ...s.labels, le }, value: cumulative, metricName: `${DURATION}_bucket` } as MetricValue<string>);
      });
      values.push({ labels: s.labels, value: s.seconds, metricName: `${DURATION}_sum` } as MetricValue<string>);
      values.push({ labels: s.labels, value: cumulative, metricName: `${DURATION}_count` } as MetricValue<string>);
    }
    return values;
  });
  /** The series of `app`, `route`, `method`, made on first use. */
  return (app: string, route: string, method: string): Series => {
    let routes = apps.get(app);
    if (!routes) {
      routes = new Map();
      apps.set(app, routes);
    }
    let methods = routes.get(route);
    if (!methods) {
      methods = new Map();
      routes.set(route, methods);
    }
    const label = methodLabel(method);
    let s = methods.get(label);
    if (!s) {
      s = { labels: { app, method: label, route }, answers: [0, 0, 0, 0, 0, 0], buckets: new Array(LATENCY_BUCKETS.length + 1).fill(0), seconds: 0 };
      methods.set(label, s);
    }
    return s;
  };
});

/**
 * Counts every answer of `app` (no-op while metrics are off). Called by createHttpApp before any
 * route exists; fastify's hooks apply to the routes registered after them too.
 */
export function instrumentHttpApp(app: FastifyInstance, appName: string): void {
  const seriesOf = httpInstruments();
  if (!seriesOf) return;
  // Callback style: no promise per request.
  app.addHook('onResponse', (req, reply, done) => {
    // Undefined when the not-found handler answered: the URL matched no template.
    const s = seriesOf(appName, req.routeOptions.url ?? UNMATCHED_ROUTE, req.method);
    s.answers[statusClassIndex(reply.statusCode)]!++;
    const seconds = reply.elapsedTime / 1000;
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > (LATENCY_BUCKETS[i] as number)) i++;
    s.buckets[i]!++;
    s.seconds += seconds;
    done();
  });
}

/**
 * Counts an answer fastify's router gave before any route or hook ran (a malformed URL, a path
 * parameter over the length limit: `frameworkErrors` in infra/http.ts), which onResponse never
 * sees. Such answers are immediate, so they are counted but not timed.
 */
export function countFrameworkError(appName: string, method: string, status: number): void {
  const seriesOf = httpInstruments();
  if (seriesOf) seriesOf(appName, UNMATCHED_ROUTE, method).answers[statusClassIndex(status)]!++;
}

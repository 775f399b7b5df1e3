/**
 * Prometheus metrics (docs/operators.md#metrics), with prom-client, on a listener of their own
 * (PIER_METRICS_PORT, off by default; endpoint.ts). Off, nothing here exists: no registry, no
 * hooks, no listener, and every instrument module answers null, so each part checks once when
 * it is built and then does no metrics work at all.
 *
 * Label values come only from small fixed sets written in the code (route templates, status
 * classes, outcomes) or from the labels executors registered with the admin key, never from a
 * request path, a product id or anything else a client sends (shared NOTES.md, Prometheus).
 *
 * | name | type | labels | what |
 * |---|---|---|---|
 * | pier_http_requests_total | counter | app (web, runner), method (GET…OPTIONS, other), route (the route template, `unmatched` when no route matched), status_class (1xx…5xx) | requests answered by a fastify app (http.ts) |
 * | pier_http_request_duration_seconds | histogram | app, method, route | request → answer sent, as fastify times it |
 * | pier_host_requests_total | counter | host (downloads, pages), via (fast_path, node_http), status_class | answers of the download host and of the pages' fast path (hosts.ts); pages the app answers count in pier_http_* (app="web") |
 * | pier_host_sent_bytes_total | counter | host, via | bytes written to the connection for those answers, headers included |
 * | pier_sftp_sessions | gauge | — | SFTP connections logged in now |
 * | pier_sftp_logins_total | counter | outcome (ok, failed: wrong credentials, refused: banned address or session cap) | SFTP password logins |
 * | pier_sftp_uploaded_bytes_total | counter | — | bytes written by SFTP WRITE requests |
 * | pier_sftp_downloaded_bytes_total | counter | — | bytes answered to SFTP READ requests |
 * | pier_sftp_uploads_total | counter | outcome (committed, refused) | uploads put in place at CLOSE, or refused (quota, limits, resume, password changed) |
 * | pier_crawl_duration_seconds | histogram | — | one crawl of one label, start to result stored |
 * | pier_crawls_total | counter | outcome (ok, fatal, limit_exceeded, failed, removed) | crawls of a label by how they ended |
 * | pier_runner_queue_depth | gauge | — | queued runs (read from the database at scrape) |
 * | pier_runner_queue_depth_by_label | gauge | executor_label (labels registered executors have, at most 100) | queued runs that require that label |
 * | pier_runner_executors | gauge | status (online, draining, offline) | registered executors (at scrape) |
 * | pier_runner_claim_duration_seconds | histogram | outcome (run, empty, draining, error) | claim request → answer, long-poll wait included |
 * | pier_runner_runs_finished_total | counter | state (succeeded, failed, cancelled) | runs that reached a final state through this process |
 * | pier_runner_schedule_fires_total | counter | outcome (queued, skipped, failed) | schedule fires this process won |
 * | pier_runner_retention_deleted_runs_total | counter | — | finished runs deleted by retention |
 * | pier_runner_oauth_grants_total | counter | — | OAuth grants issued (consent given, code sent) |
 * | pier_runner_oauth_refresh_total | counter | outcome (issued, refused) | refresh-token uses at the token endpoint |
 * | pier_part_process_up | gauge | part (downloads) | 1 when the part's own process answered this scrape (part-process.ts) |
 * | process_*, nodejs_* | | | prom-client's collectDefaultMetrics |
 *
 * Counters count what happened in this process since it started (Prometheus' rate() handles
 * restarts); several instances are told apart by the scrape target. When the download host
 * runs in a process of its own, every series also carries `process` ("serve" or "downloads").
 */
import { collectDefaultMetrics, Registry } from 'prom-client';

let current: Registry | null = null;

/**
 * Turns metrics on for this process (idempotent): a registry with prom-client's process
 * metrics. Instruments made from here on register in it. `labels` go on every series.
 */
export function enableMetrics(labels: Record<string, string> = {}): Registry {
  if (!current) {
    current = new Registry();
    collectDefaultMetrics({ register: current });
  }
  if (Object.keys(labels).length > 0) current.setDefaultLabels(labels);
  return current;
}

/** The registry when metrics are on, else null. */
export function metricsRegistry(): Registry | null {
  return current;
}

/** Tests: metrics off again; the next enableMetrics starts from zero. */
export function disableMetrics(): void {
  current?.clear();
  current = null;
}

/**
 * An instrument module's accessor: null while metrics are off, else its instruments, made once
 * per registry (two parts in one process share them, as they share the process's page).
 */
export function instruments<T>(make: (registry: Registry) => T): () => T | null {
  const made = new WeakMap<Registry, T>();
  return () => {
    const registry = current;
    if (!registry) return null;
    let found = made.get(registry);
    if (found === undefined) {
      found = make(registry);
      made.set(registry, found);
    }
    return found;
  };
}

const CLASSES = ['other', '1xx', '2xx', '3xx', '4xx', '5xx'] as const;

/** Index into STATUS_CLASSES of a status code: 1-5 by its first digit, 0 for anything else. */
export function statusClassIndex(status: number): number {
  const c = (status / 100) | 0;
  return c >= 1 && c <= 5 ? c : 0;
}

/** The label values of statusClassIndex. */
export const STATUS_CLASSES: readonly string[] = CLASSES;

/** Histogram buckets for request latencies, seconds (prom-client's defaults, finer at the low end). */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

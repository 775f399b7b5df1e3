/**
 * Runner instruments (pier_runner_*, table in infra/metrics/registry.ts): null while metrics
 * are off. The queue and the executors are read from the database when the page is scraped
 * (the database is shared by every instance, so each instance's page shows the same numbers:
 * aggregate them with max, not sum). Labels: outcomes and states from the code, and the labels
 * executors registered with (registering takes the admin key), at most
 * MAX_EXECUTOR_LABELS of them; never a label a run asked for, which any user can write.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import { instruments } from '../infra/metrics/registry.js';

/** Label values of pier_runner_queue_depth_by_label, at most: the first by name. */
export const MAX_EXECUTOR_LABELS = 100;

/** What the scrape reads from the runner's database (runner/service.ts wires the repositories). */
export interface RunnerDatabaseGauges {
  /** Queued runs in all, and for each label executors have, the queued runs that require it. */
  queueDepth(): Promise<{ total: number; byLabel: Map<string, number> }>;
  executors(): Promise<{ online: number; draining: number; offline: number }>;
  onError(e: unknown): void;
}

export const runnerMetrics = instruments((registry) => {
  const sources = new Set<RunnerDatabaseGauges>();
  /** The first runner of the process: one per `pier serve`; tests may start more on one database. */
  const source = () => sources.values().next().value as RunnerDatabaseGauges | undefined;
  /**
   * The read in progress: a scrape collects every metric at once (prom-client calls each
   * collect() in the same tick), so both queue gauges share one read, and the next scrape reads anew.
   */
  let queueRead: Promise<{ total: number; byLabel: Map<string, number> } | null> | null = null;
  const queue = () => {
    const s = source();
    if (!s) return Promise.resolve(null);
    queueRead ??= withinScrape(s.queueDepth())
      .catch((e: unknown) => {
        s.onError(e);
        return null;
      })
      .finally(() => {
        queueRead = null;
      });
    return queueRead;
  };
  new Gauge({
    name: 'pier_runner_queue_depth',
    help: 'Queued runs (read from the database at scrape)',
    registers: [registry],
    async collect() {
      const q = await queue();
      this.reset();
      if (q) this.set(q.total);
    },
  });
  new Gauge({
    name: 'pier_runner_queue_depth_by_label',
    help: 'Queued runs that require the executor label (labels registered executors have)',
    labelNames: ['executor_label'] as const,
    registers: [registry],
    async collect() {
      const q = await queue();
      this.reset();
      for (const [label, n] of q?.byLabel ?? []) this.set({ executor_label: label }, n);
    },
  });
  new Gauge({
    name: 'pier_runner_executors',
    help: 'Registered executors by status: online, draining, offline (missed heartbeats for a whole lease)',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      const s = source();
      this.reset();
      if (!s) return;
      const counts = await withinScrape(s.executors()).catch((e: unknown) => {
        s.onError(e);
        return null;
      });
      if (counts) for (const [status, n] of Object.entries(counts)) this.set({ status }, n);
    },
  });
  const runsFinished = new Counter({
    name: 'pier_runner_runs_finished_total',
    help: 'Runs that reached a final state through this process, by state',
    labelNames: ['state'] as const,
    registers: [registry],
  });
  const scheduleFires = new Counter({
    name: 'pier_runner_schedule_fires_total',
    help: 'Schedule fires this process won, by outcome: queued, skipped (overlap), failed',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const oauthRefresh = new Counter({
    name: 'pier_runner_oauth_refresh_total',
    help: 'Refresh-token uses at the token endpoint: issued (new tokens) or refused',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  // Every value from the first scrape on: rate() needs the series to exist.
  for (const state of ['succeeded', 'failed', 'cancelled']) runsFinished.inc({ state }, 0);
  for (const outcome of ['queued', 'skipped', 'failed']) scheduleFires.inc({ outcome }, 0);
  for (const outcome of ['issued', 'refused']) oauthRefresh.inc({ outcome }, 0);
  return {
    sources,
    runsFinished,
    scheduleFires,
    oauthRefresh,
    claimDuration: new Histogram({
      name: 'pier_runner_claim_duration_seconds',
      help: 'Claim request to answer, the long-poll wait included, by outcome: run, empty (time up), draining, error',
      labelNames: ['outcome'] as const,
      // A claim that finds a run answers in milliseconds; one that waits runs up to its `wait` (30 s at most).
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60],
      registers: [registry],
    }),
    retentionDeleted: new Counter({ name: 'pier_runner_retention_deleted_runs_total', help: 'Finished runs deleted by retention (RUNNER_RETENTION_DAYS)', registers: [registry] }),
    oauthGrants: new Counter({ name: 'pier_runner_oauth_grants_total', help: 'OAuth grants issued: consent given and an authorization code sent', registers: [registry] }),
  };
});

/** Reads the queue and executors at scrape from this runner's database until the returned function is called. */
/**
 * A database read made for a scrape gives up after this long: a database that hangs must not
 * take the whole page (downloads, SFTP and the rest) with it; its gauges are left out instead.
 */
const SCRAPE_READ_TIMEOUT_MS = 2000;

function withinScrape<T>(read: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from the database within ${SCRAPE_READ_TIMEOUT_MS} ms`)), SCRAPE_READ_TIMEOUT_MS);
  });
  return Promise.race([read, late]).finally(() => clearTimeout(timer));
}

export function watchRunnerDatabase(gauges: RunnerDatabaseGauges): () => void {
  const m = runnerMetrics();
  if (!m) return () => {};
  m.sources.add(gauges);
  return () => void m.sources.delete(gauges);
}

/** Counts runs that reached a final state (`state` is the state the database answered). */
export function countRunsFinished(state: string, runs = 1): void {
  if (runs > 0 && (state === 'succeeded' || state === 'failed' || state === 'cancelled')) runnerMetrics()?.runsFinished.inc({ state }, runs);
}

/**
 * The metrics of a part that runs in a process of its own (the download host beside the other
 * parts, cli/part-process.ts). It cannot listen on PIER_METRICS_PORT too, so `pier serve` keeps
 * one endpoint for its whole process tree: at each scrape it asks the part's process over the
 * IPC channel for its metrics (prom-client's JSON form) and serves them with its own on one
 * page. Both processes label every series with `process` ("serve", "downloads"), so their
 * process_* and nodejs_* series stay apart and nothing is summed across processes.
 * A part that does not answer within PART_ANSWER_MS is left out of that page, and
 * pier_part_process_up says so; the page still comes.
 */
import type { ChildProcess } from 'node:child_process';
import { Gauge, type MetricObjectWithValues, type MetricValue, Registry } from 'prom-client';
import { instruments, metricsRegistry } from './registry.js';

type Metrics = MetricObjectWithValues<MetricValue<string>>[];

/** Well under Prometheus' default scrape timeout (10 s). */
const PART_ANSWER_MS = 3000;

const REQUEST = 'pier-metrics-request';
const ANSWER = 'pier-metrics-answer';

interface Request {
  type: typeof REQUEST;
  id: number;
}
interface Answer {
  type: typeof ANSWER;
  id: number;
  metrics: Metrics | null;
}

/** Another process's metrics, read at scrape time. */
export interface MetricsSource {
  part: string;
  /** Its metrics, or null when it did not answer in time (or is gone). */
  collect(): Promise<Metrics | null>;
}

const partInstruments = instruments(
  (registry) =>
    new Gauge({
      name: 'pier_part_process_up',
      help: "1 when the part's own process answered this scrape with its metrics, else 0",
      labelNames: ['part'] as const,
      registers: [registry],
    }),
);

/** In `pier serve`: the part's process as a source of metrics, over its IPC channel. */
export function metricsOverIpc(child: ChildProcess, part: string): MetricsSource {
  let next = 0;
  const waiting = new Map<number, (metrics: Metrics | null) => void>();
  child.on('message', (message: Partial<Answer>) => {
    if (message?.type !== ANSWER || typeof message.id !== 'number') return;
    waiting.get(message.id)?.(Array.isArray(message.metrics) ? message.metrics : null);
  });
  const failAll = () => {
    for (const done of waiting.values()) done(null);
  };
  child.once('exit', failAll);
  child.once('disconnect', failAll);
  // The channel never keeps `pier serve` running on its own.
  child.channel?.unref();
  return {
    part,
    collect() {
      if (!child.connected) return Promise.resolve(null);
      const id = next++;
      return new Promise((resolve) => {
        const timer = setTimeout(() => done(null), PART_ANSWER_MS);
        const done = (metrics: Metrics | null) => {
          clearTimeout(timer);
          waiting.delete(id);
          resolve(metrics);
        };
        waiting.set(id, done);
        child.send({ type: REQUEST, id } satisfies Request, (err) => {
          if (err) done(null);
        });
      });
    },
  };
}

/** In a part's own process: answers the parent's requests for this process's metrics. */
export function answerMetricsRequests(): void {
  if (!process.send) return;
  process.on('message', (message: Partial<Request>) => {
    if (message?.type !== REQUEST || typeof message.id !== 'number') return;
    const id = message.id;
    const registry = metricsRegistry();
    const answer = (metrics: Metrics | null) => {
      if (process.connected) process.send?.({ type: ANSWER, id, metrics } satisfies Answer, () => {});
    };
    if (!registry) return answer(null);
    registry.getMetricsAsJSON().then(answer, () => answer(null));
  });
  process.channel?.unref();
}

/**
 * This process's page with the sources' metrics added: the series of one name from every
 * process under one HELP and TYPE (a name twice on a page is invalid in the text format).
 */
export async function pageWith(registry: Registry, sources: readonly MetricsSource[]): Promise<string> {
  const up = partInstruments();
  const theirs = await Promise.all(sources.map((s) => s.collect()));
  for (const [i, s] of sources.entries()) up?.set({ part: s.part }, theirs[i] ? 1 : 0);
  const groups = [await registry.getMetricsAsJSON(), ...theirs.filter((m) => m !== null)];
  const byName = new Map<string, MetricObjectWithValues<MetricValue<string>>>();
  for (const group of groups) {
    for (const metric of group) {
      const known = byName.get(metric.name);
      if (!known) byName.set(metric.name, { ...metric, values: [...metric.values] });
      else if (known.type === metric.type) known.values.push(...metric.values);
    }
  }
  const page = new Registry();
  // prom-client's own way of serving gathered values (AggregatorRegistry.aggregate): an object
  // with the metric's fields whose get() answers them.
  for (const metric of byName.values()) page.registerMetric({ ...metric, get: () => metric } as unknown as Gauge);
  return page.metrics();
}

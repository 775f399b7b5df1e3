/**
 * Metrics for `pier serve` (cli/serve.ts): with PIER_METRICS_PORT set, turned on before any part
 * is built (the parts look once, when built, whether to count) and served on one listener per
 * process tree. A part's own process (the download host or the SFTP server beside other parts) listens on nothing:
 * it answers `pier serve` over the IPC channel, which adds its metrics to the one page
 * (part-process.ts). With the port unset nothing of this runs.
 */
import type { ChildProcess } from 'node:child_process';
import type { Config } from '../config.js';
import { startMetricsEndpoint } from './endpoint.js';
import { answerMetricsRequests, type MetricsSource, metricsOverIpc } from './part-process.js';
import { enableMetrics } from './registry.js';

export interface ServeMetrics {
  url: string;
  /** Give to startPartProcess: opens the part's IPC channel and adds its metrics to the page. */
  partProcess: { ipc(child: ChildProcess, part: string): void };
  close(): Promise<void>;
}

export async function startServeMetrics(config: Config, how: { partProcess: string | null; partsApart: boolean }): Promise<ServeMetrics | null> {
  if (config.metrics.port === 0) return null;
  if (how.partProcess !== null) {
    // The part this process runs apart (the download host or the SFTP server, cli/serve.ts).
    enableMetrics({ process: how.partProcess });
    answerMetricsRequests();
    return null;
  }
  const registry = enableMetrics(how.partsApart ? { process: 'serve' } : {});
  const sources: MetricsSource[] = [];
  const endpoint = await startMetricsEndpoint(registry, {
    host: config.metrics.host,
    port: config.metrics.port,
    sources,
    log: (message) => console.error(`pier: ${message}`),
  });
  return {
    url: endpoint.url,
    partProcess: { ipc: (child, part) => void sources.push(metricsOverIpc(child, part)) },
    close: endpoint.close,
  };
}

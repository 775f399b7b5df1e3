/**
 * The metrics listener: `GET /metrics` in Prometheus' text format 0.0.4 on a port of its own
 * (PIER_METRICS_PORT), apart from the parts' listeners so that it is never public by accident
 * (PIER_METRICS_HOST is loopback unless set) and a scrape never queues behind user requests.
 * A bare node:http server: one path, no plugins.
 */
import http from 'node:http';
import { ConfigError } from '../config.js';
import { listenOn } from '../listen.js';
import type { MetricsSource } from './part-process.js';
import { pageWith } from './part-process.js';
import type { Registry } from 'prom-client';

export interface MetricsEndpoint {
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function startMetricsEndpoint(
  registry: Registry,
  options: {
    host: string;
    port: number;
    /** Parts' processes whose metrics the page includes (may grow after start). */
    sources?: readonly MetricsSource[];
    log?: (message: string) => void;
  },
): Promise<MetricsEndpoint> {
  const sources = options.sources ?? [];
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
      return void res.end('Not found: the metrics are at /metrics\n');
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
      return void res.end('Method not allowed\n');
    }
    const page = sources.length > 0 ? pageWith(registry, sources) : registry.metrics();
    page.then(
      (text) => {
        res.writeHead(200, { 'content-type': registry.contentType, 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (e: unknown) => {
        options.log?.(`metrics: the page could not be built: ${e instanceof Error ? e.message : String(e)}`);
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('The metrics could not be collected; see the server log\n');
      },
    );
  });
  // A scraper keeps its connection between scrapes (Prometheus' default interval is 1 min); close()
  // ends it at once.
  server.keepAliveTimeout = 65_000;
  let address: { address: string; port: number; family: string };
  try {
    address = await listenOn(server, options.port, options.host);
  } catch (e) {
    throw new ConfigError('PIER_METRICS_PORT', `cannot listen on ${options.host}:${options.port} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}/metrics`,
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

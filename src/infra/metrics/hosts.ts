/**
 * Answers of the download host and of the pages' fast path: pier_host_requests_total and
 * pier_host_sent_bytes_total (see registry.ts). These are the hottest paths of the service
 * (bench/downloads.ts, bench/pages.ts), so an answer costs two additions to plain numbers in
 * a HostCounts; prom-client reads them only when the page is scraped (the counters' collect).
 */
import type http from 'node:http';
import { Counter } from 'prom-client';
import { instruments, STATUS_CLASSES, statusClassIndex } from './registry.js';

export type HostName = 'downloads' | 'pages';

/** What a host answered since the process started; written on the answer paths, read at scrape. */
export interface HostCounts {
  /** Answers of the fast path (infra/fast-path: always 200) and their bytes. */
  fastAnswers: number;
  fastBytes: number;
  /** Answers through node:http by status class (index: statusClassIndex) and their bytes. */
  answers: number[];
  bytes: number;
  /** Whether node:http answers are counted here (the pages' are counted by the app, http.ts). */
  countsNodeHttp: boolean;
}

const hostInstruments = instruments((registry) => {
  const hosts = new Map<HostName, HostCounts>();
  new Counter({
    name: 'pier_host_requests_total',
    help: 'Answers of the download host and of the pages fast path, by host, how they were answered and status class',
    labelNames: ['host', 'via', 'status_class'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [host, c] of hosts) {
        this.inc({ host, via: 'fast_path', status_class: '2xx' }, c.fastAnswers);
        if (!c.countsNodeHttp) continue;
        // Every class from the first scrape on (zeros included): rate() needs the series to exist.
        for (let i = 1; i < STATUS_CLASSES.length; i++) this.inc({ host, via: 'node_http', status_class: STATUS_CLASSES[i] as string }, c.answers[i] ?? 0);
        if (c.answers[0]) this.inc({ host, via: 'node_http', status_class: 'other' }, c.answers[0]);
      }
    },
  });
  new Counter({
    name: 'pier_host_sent_bytes_total',
    help: 'Bytes written to connections for those answers, headers included, by host and how they were answered',
    labelNames: ['host', 'via'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [host, c] of hosts) {
        this.inc({ host, via: 'fast_path' }, c.fastBytes);
        if (c.countsNodeHttp) this.inc({ host, via: 'node_http' }, c.bytes);
      }
    },
  });
  return hosts;
});

/**
 * The counts of `host` in this process (shared by every server of that host here), or null
 * while metrics are off: the caller then installs no counting at all.
 */
export function hostCounts(host: HostName, options: { countsNodeHttp: boolean }): HostCounts | null {
  const hosts = hostInstruments();
  if (!hosts) return null;
  let c = hosts.get(host);
  if (!c) {
    c = { fastAnswers: 0, fastBytes: 0, answers: [0, 0, 0, 0, 0, 0], bytes: 0, countsNodeHttp: options.countsNodeHttp };
    hosts.set(host, c);
  }
  return c;
}

/**
 * Counts the answer node:http gives to `req` once it is done or its connection went. Its bytes
 * are what the connection was given meanwhile: the response takes the socket when it is its
 * turn (a pipelined one later, node:http's 'socket' event), and the next only after it ended.
 */
export function countNodeHttpAnswer(counts: HostCounts, req: http.IncomingMessage, res: http.ServerResponse): void {
  const socket = req.socket;
  let from = socket.bytesWritten;
  if (!res.socket) res.once('socket', () => (from = socket.bytesWritten));
  res.once('close', () => {
    counts.answers[statusClassIndex(res.statusCode)]!++;
    counts.bytes += socket.bytesWritten - from;
  });
}

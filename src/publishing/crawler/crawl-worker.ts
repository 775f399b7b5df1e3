/**
 * The crawl's own thread: vendor-controlled work (HTTP reads, XML, xz, jars, Python sources) runs
 * here, under the memory limit the serving process set for this worker, and posts back a plain
 * result. It never touches the database: the serving process validates and stores the result.
 */
import { parentPort } from 'node:worker_threads';
import { type CrawlLimits, crawlRepository } from './crawl.js';

export interface CrawlJob {
  url: string;
  scope: string;
  limits: CrawlLimits;
}

export type CrawlReply = { ok: true; result: unknown } | { ok: false; message: string };

const port = parentPort;
if (port) {
  port.on('message', (job: CrawlJob) => {
    crawlRepository(job.url, job.limits, job.scope).then(
      (result) => port.postMessage({ ok: true, result } satisfies CrawlReply),
      (e: unknown) => port.postMessage({ ok: false, message: e instanceof Error ? e.message : String(e) } satisfies CrawlReply),
    );
  });
  port.postMessage('ready');
}

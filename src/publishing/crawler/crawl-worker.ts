/**
 * The crawl's own thread: vendor-controlled work (HTTP reads, XML, xz, jars, Python sources) runs
 * here, under the memory limit the serving process set for this worker, and posts back a plain
 * result, its node descriptions and icons already sanitized as node pages show them. It never
 * touches the database: the serving process validates and stores the result.
 */
import { parentPort } from 'node:worker_threads';
import type { PlatformCategory } from '../../infra/platform-categories.js';
import { type CrawlLimits, crawlRepository } from './crawl.js';
import { storedResultOf } from './result.js';
import { sanitizeCrawlResult } from './sanitize-node.js';

export interface CrawlJob {
  url: string;
  scope: string;
  limits: CrawlLimits;
  /** PIER_PLATFORM_CORE_PREFIXES. */
  corePrefixes: readonly string[];
  /** PIER_PLATFORM_CATEGORIES. */
  platformCategories: readonly PlatformCategory[];
}

export type CrawlReply = { ok: true; result: unknown } | { ok: false; message: string };

const port = parentPort;
if (port) {
  port.on('message', (job: CrawlJob) => {
    // Descriptions and icons are sanitized and serialized for storage here, once per crawl,
    // never on the serving loop; the result is bounded before it is posted (result.ts).
    crawlRepository(job.url, job.limits, job.scope, job.corePrefixes, job.platformCategories).then((r) => storedResultOf(sanitizeCrawlResult(r, job.limits), job.limits)).then(
      (result) => port.postMessage({ ok: true, result } satisfies CrawlReply),
      (e: unknown) => port.postMessage({ ok: false, message: e instanceof Error ? e.message : String(e) } satisfies CrawlReply),
    );
  });
  port.postMessage('ready');
}

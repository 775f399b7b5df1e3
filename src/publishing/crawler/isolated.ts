/**
 * Runs crawls in a worker thread with a memory limit and a wall-time limit, so that a hostile
 * update site can slow or kill only its own crawl, never the serving event loop (web pages,
 * downloads and SFTP share this process); the kept worker of infra/kept-worker.ts serves a pass
 * of crawls. Whatever the worker posts is validated before anyone stores it.
 */
import { KNIME_CATEGORIES, type PlatformCategory } from '../../infra/platform-categories.js';
import { keptWorker } from '../../infra/kept-worker.js';
import { workerEntry } from '../../infra/module-worker.js';
import type { CrawlLimits } from './crawl.js';
import type { CrawlJob, CrawlReply } from './crawl-worker.js';
import { DEFAULT_CORE_PREFIXES } from './platform-range.js';
import { checkCrawlResult, type StoredCrawlResult } from './result.js';

export interface IsolationLimits {
  /** Heap of the crawl's worker (V8 old generation), MiB. */
  maxMemoryMb: number;
  /** Wall time one crawl may take, ms. */
  timeoutMs: number;
  /** A worker idle this long is ended (its memory returned), ms. */
  idleMs?: number;
}

export const DEFAULT_ISOLATION: IsolationLimits = { maxMemoryMb: 512, timeoutMs: 10 * 60_000 };

/** A crawl that ended by a limit or a broken worker: the caller records it as fatal. */
export class CrawlAborted extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CrawlAborted';
  }
}

export interface IsolatedCrawler {
  crawl(url: string, scope: string): Promise<StoredCrawlResult>;
  /** Ends the worker once the crawl in progress is done, or at once with `cut` (it then fails). */
  close(cut?: boolean): Promise<void>;
}

/** Nice value of the crawl thread: crawls yield the CPU to serving. */
const CRAWL_NICE = 10;

export function isolatedCrawler(
  limits: CrawlLimits,
  isolation: IsolationLimits = DEFAULT_ISOLATION,
  corePrefixes: readonly string[] = DEFAULT_CORE_PREFIXES,
  /** PIER_PLATFORM_CATEGORIES. */
  platformCategories: readonly PlatformCategory[] = KNIME_CATEGORIES,
): IsolatedCrawler {
  const worker = keptWorker<CrawlJob>({
    entry: workerEntry('crawl-worker', import.meta.url),
    maxMemoryMb: isolation.maxMemoryMb,
    timeoutMs: isolation.timeoutMs,
    idleMs: isolation.idleMs ?? 30_000,
    nice: CRAWL_NICE,
    failed: (f) =>
      new CrawlAborted(
        f.kind === 'timeout'
          ? `crawl exceeded ${Math.round(isolation.timeoutMs / 1000)} s (PIER_CRAWL_TIMEOUT_SECONDS)`
          : f.kind === 'memory'
            ? `crawl exceeded the memory limit of ${isolation.maxMemoryMb} MiB (PIER_CRAWL_MAX_MEMORY_MB)`
            : `the crawl worker: ${f.message}`,
      ),
  });

  return {
    // One crawl at a time per worker: a limit ends the worker and only that crawl with it.
    crawl: (url, scope) =>
      worker.run({ url, scope, limits, corePrefixes, platformCategories }, (reply) => {
        const r = reply as CrawlReply;
        if (!r.ok) throw new Error(r.message);
        return checkCrawlResult(r.result, limits);
      }),
    close: (cut = false) => worker.close(!cut),
  };
}

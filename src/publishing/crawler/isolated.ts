/**
 * Runs crawls in a worker thread with a memory limit and a wall-time limit, so that a hostile
 * update site can slow or kill only its own crawl, never the serving event loop (web pages,
 * downloads and SFTP share this process). One worker is kept for a pass of crawls (starting one
 * costs a module load) and ended after a while idle, after a limit was exceeded, or on close.
 * Whatever the worker posts is validated before anyone stores it.
 */
import type { Worker } from 'node:worker_threads';
import { startTsWorker } from '../../infra/ts-worker.js';
import type { CrawlLimits, CrawlResult } from './crawl.js';
import type { CrawlJob, CrawlReply } from './crawl-worker.js';
import { checkCrawlResult } from './result.js';

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
  crawl(url: string, scope: string): Promise<CrawlResult>;
  close(): Promise<void>;
}

interface Running {
  worker: Worker;
  ready: Promise<void>;
}

export function isolatedCrawler(limits: CrawlLimits, isolation: IsolationLimits = DEFAULT_ISOLATION): IsolatedCrawler {
  const idleMs = isolation.idleMs ?? 30_000;
  let current: Running | null = null;
  let queue: Promise<unknown> = Promise.resolve();
  let idleTimer: NodeJS.Timeout | null = null;

  function spawn(): Running {
    const { worker, ready } = startTsWorker(new URL('./crawl-worker.ts', import.meta.url), isolation.maxMemoryMb, (m) => new CrawlAborted(`the crawl worker ${m}`));
    const running = { worker, ready };
    worker.once('exit', () => {
      if (current === running) current = null;
    });
    return running;
  }

  async function end(r: Running | null): Promise<void> {
    if (!r) return;
    if (current === r) current = null;
    await r.worker.terminate();
  }

  async function runOne(job: CrawlJob): Promise<CrawlResult> {
    if (idleTimer) clearTimeout(idleTimer);
    current ??= spawn();
    const r = current;
    r.worker.ref();
    try {
      await r.ready;
      const reply = await new Promise<CrawlReply>((resolve, reject) => {
        const seconds = Math.round(isolation.timeoutMs / 1000);
        const timer = setTimeout(() => reject(new CrawlAborted(`crawl exceeded ${seconds} s (PIER_CRAWL_TIMEOUT_SECONDS)`)), isolation.timeoutMs);
        const done = () => {
          clearTimeout(timer);
          r.worker.off('message', onMessage);
          r.worker.off('error', onError);
          r.worker.off('exit', onExit);
        };
        const onMessage = (m: CrawlReply) => {
          done();
          resolve(m);
        };
        const onError = (e: Error & { code?: string }) => {
          done();
          reject(
            new CrawlAborted(
              e.code === 'ERR_WORKER_OUT_OF_MEMORY'
                ? `crawl exceeded the memory limit of ${isolation.maxMemoryMb} MiB (PIER_CRAWL_MAX_MEMORY_MB)`
                : `the crawl worker failed: ${e.message}`,
            ),
          );
        };
        const onExit = (code: number) => {
          done();
          reject(new CrawlAborted(`the crawl worker ended (exit ${code})`));
        };
        r.worker.on('message', onMessage);
        r.worker.on('error', onError);
        r.worker.on('exit', onExit);
        r.worker.postMessage(job);
      });
      if (!reply.ok) throw new Error(reply.message);
      return checkCrawlResult(reply.result, limits);
    } catch (e) {
      // A worker past a limit, or in an unknown state, is never reused.
      if (e instanceof CrawlAborted) await end(r);
      throw e;
    } finally {
      if (current === r) {
        r.worker.unref();
        idleTimer = setTimeout(() => void end(r), idleMs);
        idleTimer.unref();
      }
    }
  }

  return {
    crawl(url, scope) {
      // One crawl at a time per worker: a limit ends the worker and only that crawl with it.
      const next = queue.then(() => runOne({ url, scope, limits }));
      queue = next.catch(() => {});
      return next;
    },
    async close() {
      if (idleTimer) clearTimeout(idleTimer);
      await queue;
      await end(current);
    },
  };
}

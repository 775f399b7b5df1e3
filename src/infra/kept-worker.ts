/**
 * One worker thread kept for jobs that must never run on the serving event loop (vendor input
 * built to be slow: update sites, page Markdown). Starting a worker costs a module load, so one
 * is kept and reused; jobs run one at a time, at most `maxQueued` wait behind the running one,
 * and each has a wall-time limit. A worker past a limit, or in an unknown state, is ended and
 * the next job starts a fresh one; an idle worker is ended so its memory returns.
 */
import { startTsWorker, type TsWorker } from './ts-worker.js';

/** Why a job got no reply: `message` says it plainly, for logs and callers' own errors. */
export interface WorkerFailure {
  kind: 'start' | 'timeout' | 'memory' | 'crashed' | 'exited';
  message: string;
}

export interface KeptWorkerOptions {
  entry: URL;
  /** Heap of the worker (V8 old generation), MiB. */
  maxMemoryMb: number;
  /** Wall time one job may take, ms. */
  timeoutMs: number;
  /** A worker idle this long is ended, ms. */
  idleMs: number;
  /** Jobs allowed to wait behind the running one; more are refused with `busy()`. */
  maxQueued?: number;
  /**
   * The worker thread's nice value (Linux: per thread). Vendor-driven work then yields the CPU
   * to the serving thread when cores are scarce, instead of competing with it as an equal.
   */
  nice?: number;
  /** The error a job without a reply rejects with. */
  failed(failure: WorkerFailure): Error;
  /** The error a job refused by the queue bound or after `close` rejects with. */
  busy?(reason: 'queue-full' | 'closed'): Error;
}

export interface KeptWorker<Job> {
  /**
   * Runs `job`; `accept` turns the worker's reply into the result. An error `accept` throws is
   * the job's; when `endOn(error)` holds, the worker is not trusted again and is ended.
   */
  run<R>(job: Job, accept: (reply: unknown) => R, endOn?: (error: unknown) => boolean): Promise<R>;
  /** Ends the worker; with `drain`, the running and queued jobs finish first. */
  close(drain?: boolean): Promise<void>;
}

const WORKER_NAME = 'the worker';

export function keptWorker<Job>(options: KeptWorkerOptions): KeptWorker<Job> {
  const maxQueued = options.maxQueued ?? Number.POSITIVE_INFINITY;
  let current: TsWorker | null = null;
  let queue: Promise<unknown> = Promise.resolve();
  let waiting = 0;
  let idleTimer: NodeJS.Timeout | null = null;
  let closed = false;

  class Failed extends Error {
    constructor(readonly failure: WorkerFailure) {
      super(failure.message);
    }
  }

  function spawn(): TsWorker {
    const running = startTsWorker(options.entry, options.maxMemoryMb, (m) => new Failed({ kind: 'start', message: `${WORKER_NAME} ${m}` }), options.nice);
    running.worker.once('exit', () => {
      if (current === running) current = null;
    });
    return running;
  }

  async function end(r: TsWorker | null): Promise<void> {
    if (!r) return;
    if (current === r) current = null;
    await r.worker.terminate();
  }

  function reply(r: TsWorker, job: Job): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const seconds = Math.round(options.timeoutMs / 1000);
      const timer = setTimeout(() => reject(new Failed({ kind: 'timeout', message: `exceeded ${seconds} s` })), options.timeoutMs);
      const done = () => {
        clearTimeout(timer);
        r.worker.off('message', onMessage);
        r.worker.off('error', onError);
        r.worker.off('exit', onExit);
      };
      const onMessage = (m: unknown) => {
        done();
        resolve(m);
      };
      const onError = (e: Error & { code?: string }) => {
        done();
        const memory = e.code === 'ERR_WORKER_OUT_OF_MEMORY';
        reject(new Failed(memory ? { kind: 'memory', message: `exceeded the memory limit of ${options.maxMemoryMb} MiB` } : { kind: 'crashed', message: `${WORKER_NAME} failed: ${e.message}` }));
      };
      const onExit = (code: number) => {
        done();
        reject(new Failed({ kind: 'exited', message: `${WORKER_NAME} ended (exit ${code})` }));
      };
      r.worker.on('message', onMessage);
      r.worker.on('error', onError);
      r.worker.on('exit', onExit);
      r.worker.postMessage(job);
    });
  }

  async function runOne<R>(job: Job, accept: (reply: unknown) => R, endOn: (error: unknown) => boolean): Promise<R> {
    if (idleTimer) clearTimeout(idleTimer);
    if (closed) throw busy('closed');
    current ??= spawn();
    const r = current;
    r.worker.ref();
    try {
      await r.ready;
      return accept(await reply(r, job));
    } catch (e) {
      if (e instanceof Failed) {
        await end(r);
        throw options.failed(e.failure);
      }
      if (endOn(e)) await end(r);
      throw e;
    } finally {
      if (current === r) {
        r.worker.unref();
        idleTimer = setTimeout(() => void end(r), options.idleMs);
        idleTimer.unref();
      }
    }
  }

  function busy(reason: 'queue-full' | 'closed'): Error {
    return options.busy?.(reason) ?? new Error(reason === 'closed' ? `${WORKER_NAME} is closed` : `too many jobs wait for ${WORKER_NAME}`);
  }

  return {
    run(job, accept, endOn = () => false) {
      if (closed) return Promise.reject(busy('closed'));
      if (waiting >= maxQueued) return Promise.reject(busy('queue-full'));
      waiting++;
      const next = queue.then(() => {
        waiting--;
        return runOne(job, accept, endOn);
      });
      queue = next.catch(() => {});
      return next;
    },
    async close(drain = false) {
      if (drain) await queue;
      closed = true;
      if (idleTimer) clearTimeout(idleTimer);
      await end(current);
      await queue;
    },
  };
}

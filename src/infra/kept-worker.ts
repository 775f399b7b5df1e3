/**
 * Worker threads kept for jobs that must never run on the serving event loop (vendor input
 * built to be slow: update sites, page Markdown). Starting a worker costs a module load, so
 * workers are kept and reused; each runs one job at a time (`workers` of them, one by default),
 * at most `maxQueued` jobs wait for a free one in arrival order, and each job has a wall-time
 * limit. A worker past a limit, or in an unknown state, is ended and the next job on its place
 * starts a fresh one; an idle worker is ended so its memory returns.
 */
import { type ModuleWorker, startModuleWorker } from './module-worker.js';

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
  /** Jobs allowed to wait for a free worker; more are refused with `busy()`. */
  maxQueued?: number;
  /** Worker threads running jobs side by side (default 1). */
  workers?: number;
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
   * `started` is called when a worker takes the job (after any wait in the queue), so a caller
   * can measure the time the job itself used.
   */
  run<R>(job: Job, accept: (reply: unknown) => R, endOn?: (error: unknown) => boolean, started?: () => void): Promise<R>;
  /** Ends the worker; with `drain`, the running and queued jobs finish first. */
  close(drain?: boolean): Promise<void>;
}

const WORKER_NAME = 'the worker';

/** One place in the pool: its worker (started on first use, ended when idle) and whether a job holds it. */
interface Slot {
  current: ModuleWorker | null;
  idleTimer: NodeJS.Timeout | null;
  busy: boolean;
}

export function keptWorker<Job>(options: KeptWorkerOptions): KeptWorker<Job> {
  const maxQueued = options.maxQueued ?? Number.POSITIVE_INFINITY;
  const slots: Slot[] = Array.from({ length: Math.max(1, options.workers ?? 1) }, () => ({ current: null, idleTimer: null, busy: false }));
  // Jobs waiting for a free place, first come first served: each is handed the place it gets.
  const waiting: ((slot: Slot) => void)[] = [];
  const inFlight = new Set<Promise<unknown>>();
  let closed = false;

  class Failed extends Error {
    constructor(readonly failure: WorkerFailure) {
      super(failure.message);
    }
  }

  function spawn(slot: Slot): ModuleWorker {
    const running = startModuleWorker(options.entry, options.maxMemoryMb, (m) => new Failed({ kind: 'start', message: `${WORKER_NAME} ${m}` }), options.nice);
    running.worker.once('exit', () => {
      if (slot.current === running) slot.current = null;
    });
    return running;
  }

  async function end(slot: Slot, r: ModuleWorker | null): Promise<void> {
    if (!r) return;
    if (slot.current === r) slot.current = null;
    await r.worker.terminate();
  }

  function reply(r: ModuleWorker, job: Job): Promise<unknown> {
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

  async function runOne<R>(slot: Slot, job: Job, accept: (reply: unknown) => R, endOn: (error: unknown) => boolean, started?: () => void): Promise<R> {
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    if (closed) throw busy('closed');
    slot.current ??= spawn(slot);
    const r = slot.current;
    r.worker.ref();
    try {
      await r.ready;
      started?.();
      return accept(await reply(r, job));
    } catch (e) {
      if (e instanceof Failed) {
        await end(slot, r);
        throw options.failed(e.failure);
      }
      if (endOn(e)) await end(slot, r);
      throw e;
    } finally {
      if (slot.current === r) {
        r.worker.unref();
        slot.idleTimer = setTimeout(() => void end(slot, r), options.idleMs);
        slot.idleTimer.unref();
      }
    }
  }

  /** The place goes to the longest-waiting job, else becomes free. */
  function release(slot: Slot): void {
    const next = waiting.shift();
    if (next) next(slot);
    else slot.busy = false;
  }

  function busy(reason: 'queue-full' | 'closed'): Error {
    return options.busy?.(reason) ?? new Error(reason === 'closed' ? `${WORKER_NAME} is closed` : `too many jobs wait for ${WORKER_NAME}`);
  }

  return {
    run(job, accept, endOn = () => false, started) {
      if (closed) return Promise.reject(busy('closed'));
      const free = slots.find((s) => !s.busy);
      if (!free && waiting.length >= maxQueued) return Promise.reject(busy('queue-full'));
      if (free) free.busy = true;
      const place = free ? Promise.resolve(free) : new Promise<Slot>((resolve) => waiting.push(resolve));
      const next = place.then((slot) => runOne(slot, job, accept, endOn, started).finally(() => release(slot)));
      const settled = next.catch(() => {});
      inFlight.add(settled);
      void settled.then(() => inFlight.delete(settled));
      return next;
    },
    async close(drain = false) {
      if (drain) while (inFlight.size > 0) await Promise.all(inFlight);
      closed = true;
      for (const slot of slots) {
        if (slot.idleTimer) clearTimeout(slot.idleTimer);
        await end(slot, slot.current);
      }
      await Promise.all(inFlight);
    },
  };
}

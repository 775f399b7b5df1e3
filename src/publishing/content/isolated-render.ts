/**
 * Renders product content in a worker thread with a wall-time and a memory limit, so that a
 * vendor's Markdown crafted to be slow (thousands of items and link references, fields up to
 * 512 KiB) can never block the serving event loop. One worker is kept and reused (starting one
 * costs a module load), one render runs at a time, and at most `maxQueued` wait behind it; a
 * worker past a limit or in an unknown state is ended and the next render starts a fresh one.
 * What the worker posts is checked before a page is built from it.
 */
import { ServiceUnavailableError } from '../../infra/errors.js';
import { startTsWorker, type TsWorker } from '../../infra/ts-worker.js';
import type { ProductFields } from '../products/fields.js';
import type { RenderedContent } from './product-content.js';
import { checkRenderedContent } from './rendered-check.js';
import type { RenderJob, RenderReply } from './render-worker.js';

export interface RenderLimits {
  /** Wall time one render may take, ms. */
  timeoutMs: number;
  /** Heap of the worker, MiB. */
  maxMemoryMb?: number;
  /** Renders allowed to wait behind the running one; more are refused with a 503. */
  maxQueued?: number;
  /** A worker idle this long is ended, ms. */
  idleMs?: number;
  /** Tests only: a render in the worker counts itself in cell 1, then waits while cell 0 is 0. */
  hold?: Int32Array;
}

export interface ContentRenderer {
  render(fields: ProductFields, release: string | null, reservedIds: readonly string[]): Promise<RenderedContent>;
  close(): Promise<void>;
}

/** Seconds a client is asked to wait before retrying a page that could not be rendered. */
const RETRY_AFTER_SECONDS = 30;

class RenderFailed extends Error {}

export function isolatedRenderer(limits: RenderLimits): ContentRenderer {
  const maxMemoryMb = limits.maxMemoryMb ?? 256;
  const maxQueued = limits.maxQueued ?? 64;
  const idleMs = limits.idleMs ?? 60_000;
  let current: TsWorker | null = null;
  let queue: Promise<unknown> = Promise.resolve();
  let waiting = 0;
  let idleTimer: NodeJS.Timeout | null = null;
  let closed = false;

  function spawn(): TsWorker {
    const running = startTsWorker(new URL('./render-worker.ts', import.meta.url), maxMemoryMb, (m) => new RenderFailed(`the render worker ${m}`));
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

  function unavailable(detail: string): ServiceUnavailableError {
    return new ServiceUnavailableError(detail, RETRY_AFTER_SECONDS);
  }

  async function runOne(job: RenderJob): Promise<RenderedContent> {
    if (idleTimer) clearTimeout(idleTimer);
    if (closed) throw unavailable('The server is shutting down.');
    current ??= spawn();
    const r = current;
    r.worker.ref();
    try {
      await r.ready;
      const reply = await new Promise<RenderReply>((resolve, reject) => {
        const seconds = Math.round(limits.timeoutMs / 1000);
        const timer = setTimeout(() => reject(new RenderFailed(`exceeded ${seconds} s`)), limits.timeoutMs);
        const done = () => {
          clearTimeout(timer);
          r.worker.off('message', onMessage);
          r.worker.off('error', onError);
          r.worker.off('exit', onExit);
        };
        const onMessage = (m: RenderReply) => {
          done();
          resolve(m);
        };
        const onError = (e: Error) => {
          done();
          reject(new RenderFailed(e.message));
        };
        const onExit = (code: number) => {
          done();
          reject(new RenderFailed(`the render worker ended (exit ${code})`));
        };
        r.worker.on('message', onMessage);
        r.worker.on('error', onError);
        r.worker.on('exit', onExit);
        r.worker.postMessage(job);
      });
      if (!reply.ok) throw new RenderFailed(reply.message);
      const content = checkRenderedContent(reply.content);
      if (!content) throw new RenderFailed('the render worker replied with something other than rendered content');
      return content;
    } catch (e) {
      // A worker past a limit, or in an unknown state, is never reused. The reason stays in the
      // server (it may describe vendor input or internals); the client gets a plain 503.
      await end(r);
      if (e instanceof RenderFailed) throw unavailable(`The product page could not be rendered in time; try again in ${RETRY_AFTER_SECONDS} s.`);
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
    render(fields, release, reservedIds) {
      if (waiting >= maxQueued) return Promise.reject(unavailable('Too many product pages are being rendered; try again shortly.'));
      waiting++;
      const job: RenderJob = { fields, release, reservedIds: [...reservedIds], hold: limits.hold };
      const next = queue.then(() => {
        waiting--;
        return runOne(job);
      });
      queue = next.catch(() => {});
      return next;
    },
    async close() {
      closed = true;
      if (idleTimer) clearTimeout(idleTimer);
      await end(current);
      await queue;
    },
  };
}

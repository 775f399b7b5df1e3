/**
 * Renders product content in a worker thread with a wall-time and a memory limit, so that a
 * vendor's Markdown crafted to be slow (thousands of items and link references, fields up to
 * 512 KiB) can never block the serving event loop (the kept worker of infra/kept-worker.ts:
 * one render at a time, at most `maxQueued` waiting, a worker past a limit replaced). What the
 * worker posts is checked before a page is built from it.
 */
import { ServiceUnavailableError } from '../../infra/errors.js';
import { keptWorker } from '../../infra/kept-worker.js';
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

/**
 * A page whose content could not be rendered (a limit, or a broken worker): caused by the
 * content, unlike a full queue, so callers may remember it until the content changes.
 */
export class PageRenderFailed extends ServiceUnavailableError {
  constructor() {
    super(`The product page could not be rendered in time; try again in ${RETRY_AFTER_SECONDS} s.`, RETRY_AFTER_SECONDS);
    this.name = 'PageRenderFailed';
  }
}

/** Nice value of the render thread: page renders yield the CPU to serving. */
const RENDER_NICE = 10;

export function isolatedRenderer(limits: RenderLimits): ContentRenderer {
  const unavailable = (detail: string) => new ServiceUnavailableError(detail, RETRY_AFTER_SECONDS);
  const worker = keptWorker<RenderJob>({
    entry: new URL('./render-worker.ts', import.meta.url),
    maxMemoryMb: limits.maxMemoryMb ?? 256,
    timeoutMs: limits.timeoutMs,
    idleMs: limits.idleMs ?? 60_000,
    maxQueued: limits.maxQueued ?? 64,
    nice: RENDER_NICE,
    failed: (f) => new RenderFailed(`the render worker: ${f.message}`),
    busy: (reason) => unavailable(reason === 'closed' ? 'The server is shutting down.' : 'Too many product pages are being rendered; try again shortly.'),
  });

  function accept(reply: unknown): RenderedContent {
    const r = reply as RenderReply;
    if (!r || typeof r !== 'object' || r.ok !== true) throw new RenderFailed(r && r.ok === false ? String(r.message) : 'the render worker replied with something unexpected');
    const content = checkRenderedContent(r.content);
    if (!content) throw new RenderFailed('the render worker replied with something other than rendered content');
    return content;
  }

  return {
    async render(fields, release, reservedIds) {
      const job: RenderJob = { fields, release, reservedIds: [...reservedIds], hold: limits.hold };
      try {
        // A worker that replied with something unexpected is in an unknown state: never reused.
        return await worker.run(job, accept, (e) => e instanceof RenderFailed);
      } catch (e) {
        // The reason stays in the server (it may describe vendor input or internals); the
        // client gets a plain 503.
        if (e instanceof RenderFailed) throw new PageRenderFailed();
        throw e;
      }
    },
    close: () => worker.close(),
  };
}

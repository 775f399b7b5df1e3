/**
 * Renders product content, and the product page's document built from it, in worker threads
 * with a wall-time and a memory limit, so that a vendor's Markdown crafted to be slow (thousands
 * of items and link references, fields up to 512 KiB) can never block the serving event loop (the kept workers of infra/kept-worker.ts:
 * one render per worker, at most `maxQueued` waiting, a worker past a limit replaced). What the
 * worker posts is checked before a page is built from it.
 *
 * Renders are shared fairly between products, so that one vendor's content built to render
 * slowly (just under the time limit, so it never counts as a failure) cannot starve every other
 * product's page:
 * - a product has at most one render running or waiting for a worker; its next render waits
 *   for that one, outside the worker queue. With `workers` ≥ 2, one slow product therefore
 *   always leaves a worker to the others, and the queue (first come, first served, at most one
 *   place per product) serves products in turn;
 * - each product has a render-time budget (render-budget.ts); a product that used it up gets
 *   `RenderDeferred` (a 503 with the time to wait) without a render, so even several hostile
 *   products hold the workers for only a small share of the time.
 */
import { ServiceUnavailableError } from '../../infra/errors.js';
import { keptWorker } from '../../infra/kept-worker.js';
import { workerEntry } from '../../infra/module-worker.js';
import type { ProductFields } from '../model/fields.js';
import type { RenderedContent } from '../content/product-content.js';
import { type RenderBudgetOptions, renderBudget } from '../content/render-budget.js';
import { checkRenderedContent } from '../content/rendered-check.js';
import type { RenderJob, RenderReply } from './render-worker.js';
import type { ProductPageModel, SiteInfo } from './model.js';

export interface RenderLimits {
  /** Wall time one render may take, ms. */
  timeoutMs: number;
  /** Heap of the worker, MiB. */
  maxMemoryMb?: number;
  /** Renders allowed to wait for a free worker; more are refused with a 503. */
  maxQueued?: number;
  /** Worker threads rendering side by side (PIER_PAGE_RENDER_WORKERS); a product uses one at a time. */
  workers?: number;
  /** Render time per product (PIER_PAGE_RENDER_BUDGET_SECONDS); omitted, renders are not budgeted. */
  budget?: Omit<RenderBudgetOptions, 'now'>;
  /** The budget's clock, ms (tests inject one). */
  now?: () => number;
  /** A worker idle this long is ended, ms. */
  idleMs?: number;
  /** Tests only: a render in the worker counts itself in cell 1, then waits while cell 0 is 0. */
  hold?: RenderHold;
}

/** Tests only: one hold for every render, or a hold per product (none where it returns undefined). */
export type RenderHold = Int32Array | ((product: string) => Int32Array | undefined);

export interface ContentRenderer {
  /** Renders the content of `product` (its id: whose turn and budget the render counts against). */
  render(fields: ProductFields, release: string | null, reservedIds: readonly string[], product: string): Promise<RenderedContent>;
  /** Renders the product page's document from its model, like `render`: its bytes and their entity tag. */
  renderPage(site: SiteInfo, model: ProductPageModel, product: string): Promise<RenderedPage>;
  close(): Promise<void>;
}

/** A page document as the worker built it: the bytes to send and their entity tag. */
export interface RenderedPage {
  body: Buffer;
  etag: string;
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

/**
 * A product that used up its render-time budget: its page is not rendered now (the caller may
 * serve the product's previous page instead). Not caused by the content alone, so never
 * remembered as a failed render.
 */
export class RenderDeferred extends ServiceUnavailableError {
  constructor(retryAfterSeconds: number) {
    super(`The product page is being rendered too often; try again in ${Math.max(1, Math.ceil(retryAfterSeconds))} s.`, retryAfterSeconds);
    this.name = 'RenderDeferred';
  }
}

/** What `entityTag` (web/entity-tag.ts) makes. */
const ENTITY_TAG = /^"[A-Za-z0-9_-]{27}"$/;

/** Nice value of the render thread: page renders yield the CPU to serving. */
const RENDER_NICE = 10;

export function isolatedRenderer(limits: RenderLimits): ContentRenderer {
  const unavailable = (detail: string) => new ServiceUnavailableError(detail, RETRY_AFTER_SECONDS);
  const worker = keptWorker<RenderJob>({
    entry: workerEntry('render-worker', import.meta.url),
    maxMemoryMb: limits.maxMemoryMb ?? 256,
    timeoutMs: limits.timeoutMs,
    idleMs: limits.idleMs ?? 60_000,
    maxQueued: limits.maxQueued ?? 64,
    workers: limits.workers ?? 1,
    nice: RENDER_NICE,
    failed: (f) => new RenderFailed(`the render worker: ${f.message}`),
    busy: (reason) => unavailable(reason === 'closed' ? 'The server is shutting down.' : 'Too many product pages are being rendered; try again shortly.'),
  });

  function accept(reply: unknown): RenderedContent {
    const r = reply as RenderReply;
    if (!r || typeof r !== 'object' || r.ok !== true) throw new RenderFailed(r && r.ok === false ? String(r.message) : 'the render worker replied with something unexpected');
    const content = 'content' in r ? checkRenderedContent(r.content) : null;
    if (!content) throw new RenderFailed('the render worker replied with something other than rendered content');
    return content;
  }

  function acceptPage(reply: unknown): RenderedPage {
    const r = reply as RenderReply;
    if (!r || typeof r !== 'object' || r.ok !== true) throw new RenderFailed(r && r.ok === false ? String(r.message) : 'the render worker replied with something unexpected');
    const page = 'page' in r ? r.page : null;
    if (!page || !(page.bytes instanceof Uint8Array) || typeof page.etag !== 'string' || !ENTITY_TAG.test(page.etag)) {
      throw new RenderFailed('the render worker replied with something other than a page');
    }
    return { body: Buffer.from(page.bytes.buffer, page.bytes.byteOffset, page.bytes.byteLength), etag: page.etag };
  }

  const now = limits.now ?? Date.now;
  const budget = limits.budget ? renderBudget({ ...limits.budget, now }) : null;
  // The last render of each product with one running or waiting: the next one starts after it.
  const latest = new Map<string, Promise<unknown>>();

  async function renderNow<R>(job: RenderJob, product: string, take: (reply: unknown) => R): Promise<R> {
    // A page document is built from content whose render passed the budget just before (once
    // per rendering, bounded by that content): its time is charged, but it is never deferred, so
    // content rendered is always shown. Tests hold content renders only.
    if (job.kind !== 'page') {
      const wait = budget?.waitMs(product) ?? 0;
      if (wait > 0) throw new RenderDeferred(wait / 1000);
      job.hold = typeof limits.hold === 'function' ? limits.hold(product) : limits.hold;
    }
    let startedAt: number | null = null;
    try {
      // A worker that replied with something unexpected is in an unknown state: never reused.
      return await worker.run(job, take, (e) => e instanceof RenderFailed, () => (startedAt = now()));
    } catch (e) {
      // The reason stays in the server (it may describe vendor input or internals); the
      // client gets a plain 503.
      if (e instanceof RenderFailed) throw new PageRenderFailed();
      throw e;
    } finally {
      // Time in a worker counts, failed renders included (a render past the time limit cost
      // the whole limit); time waiting for a worker does not.
      if (startedAt !== null) budget?.charge(product, now() - startedAt);
    }
  }

  /** Runs `job` after the product's render before it (one at a time per product, see above). */
  function inTurn<R>(job: RenderJob, product: string, take: (reply: unknown) => R): Promise<R> {
    const mine = (latest.get(product) ?? Promise.resolve()).then(() => renderNow(job, product, take));
    const settled = mine.catch(() => {});
    latest.set(product, settled);
    void settled.then(() => {
      if (latest.get(product) === settled) latest.delete(product);
    });
    return mine;
  }

  return {
    render: (fields, release, reservedIds, product) => inTurn({ fields, release, reservedIds: [...reservedIds] }, product, accept),
    renderPage: (site, model, product) => inTurn({ kind: 'page', site, model }, product, acceptPage),
    close: () => worker.close(),
  };
}

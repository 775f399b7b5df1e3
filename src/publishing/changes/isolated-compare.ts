/**
 * Comparisons in a worker thread (changes/compare-worker.ts) with a wall-time and a memory limit
 * (the kept workers of infra/kept-worker.ts), so that two labels of thousands of nodes are read,
 * parsed, hashed and compared without the serving event loop that web pages, downloads and
 * SFTP share. A product has at most one comparison running or waiting (its next one waits for
 * it, outside the worker's queue), so one vendor asking again and again holds one place; the
 * same comparison asked while it runs is shared.
 */
import { ServiceUnavailableError } from '../../infra/errors.js';
import { keptWorker } from '../../infra/kept-worker.js';
import type { CompareOutcome, NodesDiffer, SideRef } from './compare.js';
import type { CompareJob, CompareReply } from './compare-worker.js';

export interface CompareLimits {
  databaseUrl: string;
  /** Wall time one comparison may take, ms (PIER_PAGE_RENDER_TIMEOUT_SECONDS). */
  timeoutMs: number;
  maxMemoryMb?: number;
  /** Comparisons allowed to wait for the worker; more are refused with a 503. */
  maxQueued?: number;
  idleMs?: number;
}

/** Seconds a client is asked to wait before asking again. */
const RETRY_AFTER_SECONDS = 10;
/** Nice value of the comparison thread: it yields the CPU to serving. */
const COMPARE_NICE = 10;

class CompareFailed extends Error {}

const isList = (v: unknown) => Array.isArray(v);
const isCount = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;

/** The outcome, or null when the worker posted something else (checked before a page is built from it). */
function checked(v: unknown): CompareOutcome | null {
  const o = v as CompareOutcome;
  if (!o || typeof o !== 'object') return null;
  if (o.ok === false) return o.missing === 'from' || o.missing === 'to' || o.missing === 'page' ? o : null;
  const p = o.page;
  const d = p?.diff;
  const c = p?.counts;
  const ok =
    d && c && isList(d.added) && isList(d.removed) && isList(d.deprecated) && isList(d.changed) && isCount(d.unchanged) &&
    [c.added, c.removed, c.deprecated, c.changed, c.unchanged, p.page, p.pages].every(isCount) && isList(p.paged);
  return ok ? o : null;
}

export function isolatedDiffer(limits: CompareLimits): NodesDiffer {
  const worker = keptWorker<CompareJob>({
    entry: new URL('./compare-worker.ts', import.meta.url),
    maxMemoryMb: limits.maxMemoryMb ?? 256,
    timeoutMs: limits.timeoutMs,
    idleMs: limits.idleMs ?? 60_000,
    maxQueued: limits.maxQueued ?? 16,
    nice: COMPARE_NICE,
    failed: (f) => new CompareFailed(`the comparison worker: ${f.message}`),
    busy: (reason) =>
      new ServiceUnavailableError(reason === 'closed' ? 'The server is shutting down.' : 'Too many comparisons are being made; try again shortly.', RETRY_AFTER_SECONDS),
  });
  const accept = (reply: unknown): CompareOutcome => {
    const r = reply as CompareReply;
    if (!r || typeof r !== 'object' || r.ok !== true) throw new CompareFailed(r && r.ok === false ? String(r.message) : 'the comparison worker replied with something unexpected');
    const outcome = checked(r.outcome);
    if (!outcome) throw new CompareFailed('the comparison worker replied with something other than a comparison');
    return outcome;
  };
  const latest = new Map<string, Promise<unknown>>();
  const running = new Map<string, Promise<CompareOutcome>>();

  async function run(job: CompareJob): Promise<CompareOutcome> {
    try {
      return await worker.run(job, accept, (e) => e instanceof CompareFailed);
    } catch (e) {
      // The reason stays in the server (it may name internals); the client gets a plain 503.
      if (e instanceof CompareFailed) throw new ServiceUnavailableError('The comparison could not be made in time; try again later.', RETRY_AFTER_SECONDS);
      throw e;
    }
  }

  return {
    compare(productId: string, from: SideRef, to: SideRef, page: number, version: string | null): Promise<CompareOutcome> {
      const key = JSON.stringify([productId, from, to, page, version]);
      const shared = running.get(key);
      if (shared) return shared;
      const mine = (latest.get(productId) ?? Promise.resolve()).then(() => run({ databaseUrl: limits.databaseUrl, productId, from, to, page, version }));
      const settled = mine.catch(() => {});
      latest.set(productId, settled);
      running.set(key, mine);
      void settled.then(() => {
        if (latest.get(productId) === settled) latest.delete(productId);
        running.delete(key);
      });
      return mine;
    },
    close: () => worker.close(),
  };
}

/**
 * Reads of the node catalog that grow with it, in a worker thread (web/catalog-worker.ts) with
 * a wall-time and a memory limit (the kept workers of infra/kept-worker.ts): comparisons of two
 * labels of thousands of nodes (read, parsed, hashed, compared), node searches (ranked over
 * every matching node) and download stats reports (thousands of day rows), without the serving
 * event loop that web pages, downloads and SFTP share. A product has at most one comparison running or waiting (its next one waits for it,
 * outside the worker's queue), so one vendor asking again and again holds one place; the same
 * comparison or search asked while it runs is shared. Past `maxQueued` waiting jobs, a 503.
 */
import { ServiceUnavailableError } from '../../infra/errors.js';
import { keptWorker } from '../../infra/kept-worker.js';
import { workerEntry } from '../../infra/module-worker.js';
import type { CompareOutcome, NodesDiffer, SideRef } from '../changes/compare.js';
import type { NodeSearchFilter, NodeSearchHit } from '../crawler/repository.js';
import type { LabelTotalsRow } from '../files/repository.js';
import type { ReportRequest } from '../stats/service.js';
import type { CatalogJob, CatalogReply } from './catalog-worker.js';

export interface CatalogReadLimits {
  databaseUrl: string;
  /** Wall time one job may take, ms (PIER_PAGE_RENDER_TIMEOUT_SECONDS). */
  timeoutMs: number;
  maxMemoryMb?: number;
  /** Jobs allowed to wait for the worker; more are refused with a 503. */
  maxQueued?: number;
  idleMs?: number;
}

export interface CatalogReads {
  differ: NodesDiffer;
  /** crawler/repository.ts `searchNodes`, run in the worker. */
  search(filter: NodeSearchFilter, limit: number): Promise<NodeSearchHit[]>;
  /** stats/service.ts `buildReport` as JSON text, run in the worker (stats/report-answers.ts keeps and paces them). */
  statsReport(productId: string, request: ReportRequest): Promise<string>;
  /**
   * files/repository.ts `labelTotals`, run in the worker: on SQLite the grouped read of every file
   * row of a label of tens of thousands of files would hold the serving thread for tens of ms.
   */
  labelTotals(productId: string): Promise<LabelTotalsRow[]>;
  /** Jobs the worker has answered (tests: proof that the work left the serving thread). */
  readonly answered: number;
  /** Of those, the jobs of one kind. */
  answeredOf(kind: CatalogJob['kind']): number;
  close(): Promise<void>;
}

/** Seconds a client is asked to wait before asking again. */
const RETRY_AFTER_SECONDS = 10;
/** Nice value of the reading thread: it yields the CPU to serving. */
const READ_NICE = 10;

class ReadFailed extends Error {}

const isList = (v: unknown) => Array.isArray(v);
const isCount = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;

/** The outcome, or null when the worker posted something else (checked before a page is built from it). */
function checkedOutcome(v: unknown): CompareOutcome | null {
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

const isHit = (h: unknown) => {
  const x = h as Record<string, unknown>;
  return !!x && typeof x.product_id === 'string' && typeof x.factory_class === 'string' && typeof x.name === 'string' && typeof x.label === 'string';
};

const isTotals = (t: unknown) => {
  const x = t as Record<string, unknown>;
  return !!x && typeof x.label === 'string' && typeof x.archive === 'boolean' && isCount(x.files) && isCount(x.bytes) && (x.lastUploadAt === null || typeof x.lastUploadAt === 'string');
};

export function catalogReads(limits: CatalogReadLimits): CatalogReads {
  const worker = keptWorker<CatalogJob>({
    entry: workerEntry('catalog-worker', import.meta.url),
    maxMemoryMb: limits.maxMemoryMb ?? 256,
    timeoutMs: limits.timeoutMs,
    idleMs: limits.idleMs ?? 60_000,
    maxQueued: limits.maxQueued ?? 32,
    nice: READ_NICE,
    failed: (f) => new ReadFailed(`the catalog worker: ${f.message}`),
    busy: (reason) =>
      new ServiceUnavailableError(reason === 'closed' ? 'The server is shutting down.' : 'Too many node searches and comparisons are under way; try again shortly.', RETRY_AFTER_SECONDS),
  });
  let answered = 0;
  const answeredBy = new Map<CatalogJob['kind'], number>();
  const reply = (v: unknown): CatalogReply => {
    const r = v as CatalogReply;
    if (!r || typeof r !== 'object' || r.ok !== true) throw new ReadFailed(r && r.ok === false ? String(r.message) : 'the catalog worker replied with something unexpected');
    answered++;
    return r;
  };
  async function run<R>(job: CatalogJob, take: (v: unknown) => R): Promise<R> {
    try {
      const answer = await worker.run(job, take, (e) => e instanceof ReadFailed);
      answeredBy.set(job.kind, (answeredBy.get(job.kind) ?? 0) + 1);
      return answer;
    } catch (e) {
      // The reason stays in the server (it may name internals); the client gets a plain 503.
      if (e instanceof ReadFailed) throw new ServiceUnavailableError('The catalog could not be read in time; try again later.', RETRY_AFTER_SECONDS);
      throw e;
    }
  }
  const latest = new Map<string, Promise<unknown>>();
  const running = new Map<string, Promise<unknown>>();
  /** One job per key at a time (shared while it runs); with `turn`, after the previous job of that turn. */
  function shared<R>(key: string, turn: string | null, start: () => Promise<R>): Promise<R> {
    const same = running.get(key);
    if (same) return same as Promise<R>;
    const mine = turn === null ? start() : (latest.get(turn) ?? Promise.resolve()).then(start);
    const settled = mine.catch(() => {});
    if (turn !== null) latest.set(turn, settled);
    running.set(key, mine);
    void settled.then(() => {
      if (turn !== null && latest.get(turn) === settled) latest.delete(turn);
      running.delete(key);
    });
    return mine;
  }

  return {
    differ: {
      compare(productId: string, from: SideRef, to: SideRef, page: number, version: string | null): Promise<CompareOutcome> {
        const job: CatalogJob = { kind: 'compare', databaseUrl: limits.databaseUrl, productId, from, to, page, version };
        return shared(JSON.stringify(['compare', productId, from, to, page, version]), productId, () =>
          run(job, (v) => {
            const r = reply(v);
            const outcome = 'outcome' in r ? checkedOutcome(r.outcome) : null;
            if (!outcome) throw new ReadFailed('the catalog worker replied with something other than a comparison');
            return outcome;
          }),
        );
      },
      close: async () => {},
    },
    search(filter: NodeSearchFilter, limit: number): Promise<NodeSearchHit[]> {
      const job: CatalogJob = { kind: 'search', databaseUrl: limits.databaseUrl, filter, limit };
      return shared(JSON.stringify(['search', filter, limit]), null, () =>
        run(job, (v) => {
          const r = reply(v);
          if (!('hits' in r) || !isList(r.hits) || !r.hits.every(isHit)) throw new ReadFailed('the catalog worker replied with something other than node hits');
          return r.hits;
        }),
      );
    },
    statsReport(productId: string, request: ReportRequest): Promise<string> {
      const job: CatalogJob = { kind: 'stats', databaseUrl: limits.databaseUrl, productId, request };
      return run(job, (v) => {
        const r = reply(v);
        if (!('json' in r) || typeof r.json !== 'string') throw new ReadFailed('the catalog worker replied with something other than a stats report');
        return r.json;
      });
    },
    labelTotals(productId: string): Promise<LabelTotalsRow[]> {
      const job: CatalogJob = { kind: 'labelTotals', databaseUrl: limits.databaseUrl, productId };
      return shared(JSON.stringify(['labelTotals', productId]), null, () =>
        run(job, (v) => {
          const r = reply(v);
          if (!('totals' in r) || !isList(r.totals) || !r.totals.every(isTotals)) throw new ReadFailed('the catalog worker replied with something other than label totals');
          return r.totals;
        }),
      );
    },
    get answered() {
      return answered;
    },
    answeredOf: (kind) => answeredBy.get(kind) ?? 0,
    close: () => worker.close(),
  };
}

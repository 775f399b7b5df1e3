/**
 * Stats reports as the JSON text answered (`GET /api/products/<id>/stats`), built off the serving
 * loop and kept briefly. A full-range report reads up to (MAX_TOP + 2) × MAX_DAYS rows and is
 * about 150 KiB of JSON: a vendor's client asking for it in a loop would otherwise keep the
 * serving loop reading rows and serializing. Here:
 *  - a report is built by `build` (the catalog worker's thread where there is one, with its own
 *    connection), never read or serialized on the serving loop;
 *  - the same report asked again within `freshMs` (the download host's flush period, so counts
 *    stay "a few seconds behind" as documented) is answered from memory, and one asked while it
 *    is being built shares that build;
 *  - a product has at most one build under way: its next one waits for it, so one vendor asking
 *    for many ranges holds one place in the worker;
 *  - what is kept is bounded in bytes (oldest dropped first).
 */
import { FLUSH_MS } from './counter.js';
import { type ReportRequest, reportRequest, type StatsQuery } from './service.js';

/** Builds a checked report's JSON text. */
export type ReportBuilder = (productId: string, request: ReportRequest) => Promise<string>;

export interface ReportAnswers {
  /** The report's JSON text; a bad query is a ValidationError (400) before anything is built. */
  answer(productId: string, query: StatsQuery): Promise<string>;
  /** Reports built so far (tests: proof that a repeat was answered from memory). */
  readonly built: number;
  /** Bytes of the reports kept now (at most `maxBytes`). */
  readonly keptBytes: number;
}

export interface ReportAnswersOptions {
  build: ReportBuilder;
  /** Today (UTC) as a day number, by the stats service's clock. */
  today: () => number;
  freshMs?: number;
  maxBytes?: number;
  /** Monotonic ms (tests). */
  clock?: () => number;
}

/** Bytes of kept reports: about a hundred full-range reports of 150 KiB. */
export const REPORT_CACHE_BYTES = 16 * 1024 * 1024;

interface Kept {
  json: string;
  until: number;
  /** What it is charged against the budget: the text, its key and the entry itself. */
  cost: number;
}

/** Bytes charged for a kept entry beyond its text and key (the map's entry, the object). */
export const ENTRY_OVERHEAD = 256;

export function reportAnswers({ build, today, freshMs = FLUSH_MS, maxBytes = REPORT_CACHE_BYTES, clock = () => performance.now() }: ReportAnswersOptions): ReportAnswers {
  const kept = new Map<string, Kept>();
  let keptBytes = 0;
  const building = new Map<string, Promise<string>>();
  /** Per product: the build under way or waiting last (the next one starts after it). */
  const lastOf = new Map<string, Promise<unknown>>();
  let built = 0;

  const forget = (key: string) => {
    const k = kept.get(key);
    if (!k) return;
    kept.delete(key);
    keptBytes -= k.cost;
  };
  const keep = (key: string, json: string) => {
    forget(key);
    const cost = json.length + key.length + ENTRY_OVERHEAD;
    // One answer larger than the whole budget is not kept.
    if (cost > maxBytes) return;
    kept.set(key, { json, until: clock() + freshMs, cost });
    keptBytes += cost;
    for (const oldest of kept.keys()) {
      if (keptBytes <= maxBytes) break;
      forget(oldest);
    }
  };

  return {
    async answer(productId, query) {
      const request = reportRequest(query, today());
      const key = JSON.stringify([productId, request.from, request.to, request.top, request.label]);
      const hit = kept.get(key);
      if (hit && hit.until > clock()) return hit.json;
      forget(key);
      const same = building.get(key);
      if (same) return same;
      const mine = (lastOf.get(productId) ?? Promise.resolve()).then(async () => {
        const json = await build(productId, request);
        built++;
        keep(key, json);
        return json;
      });
      const settled = mine.catch(() => {});
      lastOf.set(productId, settled);
      building.set(key, mine);
      void settled.then(() => {
        building.delete(key);
        if (lastOf.get(productId) === settled) lastOf.delete(productId);
      });
      return mine;
    },
    get built() {
      return built;
    },
    get keptBytes() {
      return keptBytes;
    },
  };
}

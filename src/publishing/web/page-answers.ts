/**
 * Whole answers of the public pages (headers and body as the app sent them), kept by the exact
 * request-target and the page change counter they were built under, for the fast path
 * (infra/fast-path): a plain GET or HEAD of a target answered before is answered from here,
 * without the app, as long as the counter has not moved (page-changes.ts). The first request
 * after any change goes through the app again, which re-checks its own caches and files the
 * answer anew. Only answers that depend on the target and the database alone are filed (the
 * routes decide: 200s, no request header read); bounded by bytes, oldest dropped first.
 */
import { REQUEST_ID_HEADER } from '../../infra/request-id.js';
import type http from 'node:http';
import type { FastAnswer } from '../../infra/fast-path/fast-path.js';
import type { PageChanges } from './page-changes.js';

interface Entry extends FastAnswer {
  seq: number;
  cost: number;
}

/** What an entry costs beside its body (headers, the target, the map slot). */
const ENTRY_OVERHEAD = 2048;
/** Targets longer than this are not kept (a search query of the maximum length still fits). */
const MAX_TARGET_LENGTH = 1024;

export class PageAnswers {
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;

  constructor(
    readonly changes: PageChanges,
    readonly maxBytes: number,
  ) {}

  /** Files the answer the app sent for `target`, built from data read after the counter was `seq`. */
  remember(target: string, seq: number, headers: Record<string, string | number | string[] | undefined>, body: Buffer): void {
    if (target.length > MAX_TARGET_LENGTH) return;
    const full: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(headers)) {
      // The id was this request's; the fast path answers each request with its own.
      if (value !== undefined && name !== REQUEST_ID_HEADER) full[name] = typeof value === 'number' ? String(value) : value;
    }
    full['content-length'] = String(body.length);
    const entry: Entry = { full, data: body, seq, cost: body.length + ENTRY_OVERHEAD + target.length };
    if (entry.cost > this.maxBytes) return;
    this.#drop(target);
    while (this.#bytes + entry.cost > this.maxBytes) this.#drop(this.#entries.keys().next().value as string);
    this.#entries.set(target, entry);
    this.#bytes += entry.cost;
  }

  /** The answer filed for `target` if nothing changed since it was built; else null (and it is dropped). */
  lookup(target: string): FastAnswer | null | Promise<FastAnswer | null> {
    const entry = this.#entries.get(target);
    if (!entry) return null;
    const seq = this.changes.current();
    if (typeof seq === 'number') return this.#ifCurrent(target, entry, seq);
    return seq.then((s) => this.#ifCurrent(target, entry, s));
  }

  #ifCurrent(target: string, entry: Entry, seq: number): FastAnswer | null {
    if (entry.seq === seq) return entry;
    if (this.#entries.get(target) === entry) this.#drop(target);
    return null;
  }

  #drop(target: string): void {
    const old = this.#entries.get(target);
    if (!old) return;
    this.#entries.delete(target);
    this.#bytes -= old.cost;
  }

  /** Bytes charged to the budget. */
  get bytes(): number {
    return this.#bytes;
  }
}

/**
 * Small stored files kept in memory by the download host, with the response headers built
 * from them. An entry is only used after a `stat` shows the same storage version (a new
 * upload is always a new version, also with the same size and time), so another instance
 * replacing the file is seen at once; the cost of a hit is one stat instead of open, fstat,
 * read and close, and no header building (bench/downloads.ts).
 */
import type http from 'node:http';

export interface FileMeta {
  size: number;
  mtimeMs: number;
  etag: string;
  lastModified: string;
  /** The headers of every answer about this file: type, validators, CORS, security. */
  headers: http.OutgoingHttpHeaders;
  /** `headers` with the whole file's length: the plain 200 answer, built once. */
  full: http.OutgoingHttpHeaders;
}

export interface CachedFile extends FileMeta {
  version: string;
  data: Buffer;
}

/** What an entry costs beside its bytes (headers, strings, the map slot), charged to the budget. */
const ENTRY_OVERHEAD = 1024;

const cost = (file: CachedFile) => file.data.length + ENTRY_OVERHEAD;

/**
 * A byte-bounded map; the oldest entry goes first (no reordering on hits: they stay cheap).
 * Each entry is charged its bytes plus a fixed overhead, so many tiny files stay bounded too.
 */
export class FileCache {
  readonly #entries = new Map<string, CachedFile>();
  #bytes = 0;

  constructor(readonly maxBytes: number) {}

  get(key: string): CachedFile | undefined {
    return this.#entries.get(key);
  }

  set(key: string, file: CachedFile): void {
    if (cost(file) > this.maxBytes) return;
    this.delete(key);
    while (this.#bytes + cost(file) > this.maxBytes) {
      const oldest = this.#entries.keys().next().value as string;
      this.delete(oldest);
    }
    this.#entries.set(key, file);
    this.#bytes += cost(file);
  }

  delete(key: string): void {
    const old = this.#entries.get(key);
    if (!old) return;
    this.#entries.delete(key);
    this.#bytes -= cost(old);
  }

  /** Bytes charged to the budget (contents plus a fixed overhead per entry). */
  get bytes(): number {
    return this.#bytes;
  }
}

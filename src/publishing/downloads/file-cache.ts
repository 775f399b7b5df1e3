/**
 * Small stored files kept in memory by the download host, with the response headers built
 * from them. An entry is only used after a `stat` shows the same storage version (a new
 * upload is always a new version, also with the same size and time), so another instance
 * replacing the file is seen too; the cost of a hit is at most one stat instead of open,
 * fstat, read and close, and no header building (bench/downloads.ts).
 *
 * A check serves the requests for that file answered in the next FRESH_MS (1 ms) after it
 * began, so under load one stat covers many requests instead of one each (about a fifth of
 * the time of a small-file request here, bench/downloads.ts), unless this process changed any
 * stored file since (Storage.changes: an SFTP upload through this process is served from the
 * next request on). The price is that bound for changes made by another process or instance
 * sharing the storage: a request arriving within 1 ms after such an upload is committed may
 * still get the previous bytes; any later one gets the new bytes. (Sharing a check only among
 * requests that provably arrived before it cannot be done from JavaScript: a socket read
 * returns bytes that came in after the loop's poll reported the socket ready, pipelined
 * requests included.)
 */
import type http from 'node:http';

export interface FileMeta {
  size: number;
  /** The Last-Modified time (see `describeFile` in server.ts). */
  lastModifiedMs: number;
  etag: string;
  lastModified: string;
  /** The headers of every answer about this file: type, validators, CORS, security. */
  headers: http.OutgoingHttpHeaders;
  /** `headers` with the whole file's length: the plain 200 answer, built once. */
  full: http.OutgoingHttpHeaders;
  /** Whose download count a complete GET of this file adds to (stats/artifact.ts); null: none. */
  countKey?: string | null;
}

export interface CachedFile extends FileMeta {
  version: string;
  data: Buffer;
  /** When (performance.now()) the last check that found this version current began; -Infinity when never. */
  checkedAt: number;
  /** The storage's change count when that check began (Storage.changes). */
  checkedChanges: number;
}

/** How long a freshness check serves further requests (see above), in milliseconds. */
export const FRESH_MS = 1;

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

  constructor(
    readonly maxBytes: number,
    readonly freshMs = FRESH_MS,
  ) {}

  get(key: string): CachedFile | undefined {
    return this.#entries.get(key);
  }

  /**
   * The entry for `key` if `versionOf` still reports its version; a stale entry is dropped.
   * A check begun less than `freshMs` ago with the same `changes` count (see above) answers at
   * once, synchronously.
   */
  current(key: string, versionOf: (key: string) => Promise<string | null>, changes: number): CachedFile | null | Promise<CachedFile | null> {
    const file = this.#entries.get(key);
    if (!file) return null;
    const now = performance.now();
    if (now - file.checkedAt < this.freshMs && file.checkedChanges === changes) return file;
    return versionOf(key).then((version) => {
      if (version !== file.version) {
        if (this.#entries.get(key) === file) this.delete(key);
        return null;
      }
      // What the check saw is at least as recent as when it began.
      if (now > file.checkedAt) {
        file.checkedAt = now;
        file.checkedChanges = changes;
      }
      return file;
    });
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

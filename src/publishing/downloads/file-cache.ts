/**
 * Small stored files kept in memory by the download host, with the response headers built
 * from them. An entry is only used after a `stat` shows the same storage version (a new
 * upload is always a new version, also with the same size and time), so another instance
 * replacing the file is seen at once; the cost of a hit is at most one stat instead of open,
 * fstat, read and close, and no header building (bench/downloads.ts).
 *
 * One stat serves every request for the file answered in the same event-loop turn. Requests
 * are read in the loop's poll phase, from the sockets one `epoll_wait` reported ready, so each
 * of them had arrived before any check made while that phase runs: an upload committed before
 * a request arrived is seen by the check, as a stat per request would see it. The turn ends
 * with the phase (`setImmediate` runs right after it), and a check whose answer comes back in
 * a later turn (a storage that stats asynchronously) is used for its own request only. One
 * limit is libuv's: with more than 1024 sockets ready at once it polls again within the same
 * phase, so a request of that second batch may be answered from a check made earlier in the
 * phase (a few milliseconds at most).
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
  /** The loop turn in which the version was last seen current (see above); -1 when never. */
  checkedTurn: number;
}

/** The current event-loop turn, counted by the checks (see above). */
let turn = 0;
let turnEnding = false;
function endTurn(): void {
  turn++;
  turnEnding = false;
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

  /**
   * The entry for `key` if `versionOf` still reports its version (checked at most once per
   * loop turn, see above); a stale entry is dropped. Synchronous when this turn has checked it.
   */
  current(key: string, versionOf: (key: string) => Promise<string | null>): CachedFile | null | Promise<CachedFile | null> {
    const file = this.#entries.get(key);
    if (!file) return null;
    if (file.checkedTurn === turn) return file;
    const started = turn;
    if (!turnEnding) {
      turnEnding = true;
      setImmediate(endTurn);
    }
    return versionOf(key).then((version) => {
      if (version !== file.version) {
        if (this.#entries.get(key) === file) this.delete(key);
        return null;
      }
      // Shared only within the turn the check began in: if the answer came back in a later
      // turn (an asynchronous stat), this never equals `turn` again.
      file.checkedTurn = started;
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

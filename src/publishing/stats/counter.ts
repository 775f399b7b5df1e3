/**
 * The download host's counter (issue 20 "Download counts"). Counting a download is one Map
 * increment under a key built once per served file (stats/artifact.ts), so it costs a download
 * nothing measurable (bench/downloads.ts "feature jar"); every FLUSH_MS the increments are added
 * to the database in one transaction (stats/repository.ts), and `close` adds the last ones, so a
 * graceful stop (SIGTERM) loses nothing and a SIGKILL at most the last interval. A failed flush
 * keeps its increments for the next one. Nothing about the client is kept.
 */
import { splitCountKey } from './artifact.js';
import { dayOf, dayStartMs, formatDay } from './days.js';
import type { CountIncrement, DownloadCountsRepository } from './repository.js';

/** How often increments are written (issue 20: a SIGKILL loses at most this). */
export const FLUSH_MS = 2000;
/**
 * Keys held in memory: past this a flush starts at once. Keys only come from files that exist
 * and were served, so this bounds memory when the database is slow or away, not clients.
 */
export const MAX_KEYS = 100_000;

export interface CounterLog {
  error(obj: object, msg: string): void;
}

export interface DownloadCounter {
  /** One complete download of the artifact `key` names (artifact.ts countKey). */
  add(key: string): void;
  /** Writes what was counted so far (after a flush already under way); rejects when the write failed (the increments are kept). */
  flush(): Promise<void>;
  /** Stops the timer and writes the rest. */
  close(): Promise<void>;
}

export function downloadCounter(options: {
  repo: Pick<DownloadCountsRepository, 'add'>;
  log: CounterLog;
  flushMs?: number;
  maxKeys?: number;
  /** Tests only: the clock that says which UTC day a download is counted on. */
  now?: () => number;
}): DownloadCounter {
  const { repo, log, flushMs = FLUSH_MS, maxKeys = MAX_KEYS, now = Date.now } = options;
  /** Counts by day, then by key; `current` is today's map, the only one `add` touches. */
  let days = new Map<string, Map<string, number>>();
  let day = dayOf(now());
  let dayEnds = dayStartMs(day + 1);
  let current = new Map<string, number>();
  days.set(formatDay(day), current);
  let keys = 0;

  /** The flush under way, and the one queued behind it (shared by everyone who asks meanwhile). */
  let running: Promise<void> | null = null;
  let queued: Promise<void> | null = null;

  function turnDay(at: number): void {
    day = dayOf(at);
    dayEnds = dayStartMs(day + 1);
    const name = formatDay(day);
    current = days.get(name) ?? new Map();
    days.set(name, current);
  }

  function add(key: string): void {
    if (now() >= dayEnds) turnDay(now());
    const n = current.get(key);
    if (n === undefined) {
      current.set(key, 1);
      if (++keys >= maxKeys && !running) void flush().catch(() => {});
    } else current.set(key, n + 1);
  }

  async function write(): Promise<void> {
    if (now() >= dayEnds) turnDay(now());
    const taken = days;
    days = new Map();
    current = new Map();
    days.set(formatDay(day), current);
    keys = 0;
    const increments: CountIncrement[] = [];
    for (const [d, counts] of taken) {
      for (const [key, downloads] of counts) {
        const { productId, label, artifact } = splitCountKey(key);
        increments.push({ productId, label, day: d, artifact, downloads });
      }
    }
    try {
      await repo.add(increments);
    } catch (e) {
      // Kept for the next flush: added back to what was counted meanwhile.
      for (const [d, counts] of taken) {
        let into = days.get(d);
        if (!into) {
          into = new Map();
          days.set(d, into);
        }
        for (const [key, n] of counts) {
          const had = into.get(key);
          if (had === undefined) keys++;
          into.set(key, (had ?? 0) + n);
        }
      }
      current = days.get(formatDay(day)) as Map<string, number>;
      log.error({ err: e, keys }, 'download counts: flush failed; the counts are kept for the next try');
      throw e;
    }
  }

  function flush(): Promise<void> {
    if (queued) return queued;
    if (!running) {
      const p = write().finally(() => {
        if (running === p) running = null;
      });
      running = p;
      return p;
    }
    const next = running
      .catch(() => {})
      .then(() => {
        queued = null;
        return flush();
      });
    queued = next;
    return next;
  }

  const timer = setInterval(() => void flush().catch(() => {}), flushMs);
  // The process may end without waiting for the next tick (close() writes the rest).
  timer.unref();

  return {
    add,
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}

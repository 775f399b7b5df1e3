/**
 * The download host's counter (README "Download counts"). Counting a download is one Set lookup
 * under a string built from the client (stats/client.ts) and a key built once per served file
 * (stats/artifact.ts), so it costs a download nothing measurable (bench/downloads.ts "feature
 * jar"), and a client asking for the same file again adds nothing in memory. Every FLUSH_MS the
 * downloads held are written (stats/repository.ts addFirst) as keyed hashes of client and file
 * (client-digest.ts), in transactions of FLUSH_CHUNK, and only those not written on their day
 * before, by this host or another sharing the database, count: a file counts once per client
 * and UTC day. `close` writes the last ones, so a graceful stop (SIGTERM) loses nothing and a
 * SIGKILL at most the last interval. A failed flush keeps what it had not written for the next
 * one. Addresses stay in memory only until the flush that hashes them; the day after, the day's
 * digests and key are deleted.
 */
import { clientDigest, dayKeys } from './client-digest.js';
import { splitCountKey } from './artifact.js';
import { dayOf, dayStartMs, formatDay } from './days.js';
import type { ClientDownload, DownloadCountsRepository } from './repository.js';

/** How often downloads are written (a SIGKILL loses at most this). */
export const FLUSH_MS = 2000;
/**
 * Downloads held in memory: past this a flush starts at once. Each is one client and one file
 * that exists and was served.
 */
export const MAX_KEYS = 100_000;
/**
 * Downloads held while the database is slow or away: past this, new ones are not counted (and
 * the flush that follows logs how many), so a database outage cannot grow the host's memory
 * without bound whatever the clients do.
 */
export const MAX_PENDING = 200_000;
/** Downloads written per transaction: each holds the database (and, on SQLite, this event loop) briefly. */
export const FLUSH_CHUNK = 500;

export interface CounterLog {
  error(obj: object, msg: string): void;
}

export interface DownloadCounter {
  /**
   * One complete download of the artifact `key` names (artifact.ts countKey) by `client`
   * (client.ts countedClient). False: not held (MAX_PENDING downloads wait for the database);
   * the same download later may count.
   */
  add(key: string, client: string): boolean;
  /** Writes what was counted so far (after a flush already under way); rejects when the write failed (what was not written is kept). */
  flush(): Promise<void>;
  /** Stops the timer and writes the rest. */
  close(): Promise<void>;
}

export function downloadCounter(options: {
  repo: Pick<DownloadCountsRepository, 'addFirst' | 'dayKey' | 'forgetClientsBefore'>;
  log: CounterLog;
  flushMs?: number;
  maxKeys?: number;
  maxPending?: number;
  /** Tests only: the clock that says which UTC day a download is counted on. */
  now?: () => number;
}): DownloadCounter {
  const { repo, log, flushMs = FLUSH_MS, maxKeys = MAX_KEYS, maxPending = MAX_PENDING, now = Date.now } = options;
  const keys = dayKeys(repo);
  /** Downloads held, by day: `client NUL key`; `current` is today's set, the only one `add` touches. */
  let days = new Map<string, Set<string>>();
  let day = dayOf(now());
  let dayEnds = dayStartMs(day + 1);
  let current = new Set<string>();
  days.set(formatDay(day), current);
  let held = 0;
  /** Downloads not counted because MAX_PENDING were held; logged by the next flush. */
  let dropped = 0;
  /** The day before which digests were last deleted (every host deletes once a day). */
  let forgotten: number | null = null;

  /** The flush under way, and the one queued behind it (shared by everyone who asks meanwhile). */
  let running: Promise<void> | null = null;
  let queued: Promise<void> | null = null;

  function turnDay(at: number): void {
    day = dayOf(at);
    dayEnds = dayStartMs(day + 1);
    const name = formatDay(day);
    current = days.get(name) ?? new Set();
    days.set(name, current);
  }

  /** False when the download was dropped (MAX_PENDING held already). */
  function hold(into: Set<string>, entry: string): boolean {
    if (into.has(entry)) return true;
    if (held >= maxPending) {
      dropped++;
      return false;
    }
    into.add(entry);
    held++;
    return true;
  }

  function add(key: string, client: string): boolean {
    if (now() >= dayEnds) turnDay(now());
    const before = held;
    const kept = hold(current, `${client}\u0000${key}`);
    if (held !== before && held >= maxKeys && !running) void flush().catch(() => {});
    return kept;
  }

  function downloadOf(d: string, key: Buffer, entry: string): ClientDownload {
    const { productId, label, artifact } = splitCountKey(entry.slice(entry.indexOf('\u0000') + 1));
    return { day: d, digest: clientDigest(key, entry), productId, label, artifact };
  }

  /** Deletes the digests and keys of days before yesterday, once a day; a failure is logged and tried again on the next flush. */
  async function forgetOldDays(): Promise<void> {
    const before = day - 1;
    if (forgotten === before) return;
    try {
      await repo.forgetClientsBefore(formatDay(before));
      keys.forgetBefore(formatDay(before));
      forgotten = before;
    } catch (e) {
      log.error({ err: e }, 'download counts: deleting the client digests of past days failed; tried again on the next flush');
    }
  }

  async function write(): Promise<void> {
    if (now() >= dayEnds) turnDay(now());
    const taken = days;
    days = new Map();
    current = new Set();
    days.set(formatDay(day), current);
    held = 0;
    if (dropped > 0) {
      log.error({ dropped, maxPending }, 'download counts: downloads not counted while the held ones were not written');
      dropped = 0;
    }
    try {
      for (const d of [...taken.keys()].sort()) {
        const entries = taken.get(d) as Set<string>;
        if (entries.size > 0) {
          const key = await keys.of(d);
          const list = [...entries];
          for (let i = 0; i < list.length; i += FLUSH_CHUNK) {
            const part = list.slice(i, i + FLUSH_CHUNK);
            await repo.addFirst(part.map((e) => downloadOf(d, key, e)));
            for (const e of part) entries.delete(e);
            // Between transactions, requests waiting for this event loop go first.
            if (i + FLUSH_CHUNK < list.length) await new Promise((resolve) => setImmediate(resolve));
          }
        }
        taken.delete(d);
      }
    } catch (e) {
      // Kept for the next flush, with what was counted meanwhile.
      for (const [d, entries] of taken) {
        let into = days.get(d);
        if (!into) {
          into = new Set();
          days.set(d, into);
        }
        for (const entry of entries) hold(into, entry);
      }
      current = days.get(formatDay(day)) as Set<string>;
      log.error({ err: e, held }, 'download counts: flush failed; the downloads are kept for the next try');
      throw e;
    }
    await forgetOldDays();
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

import { ApiError, GaveUpError, type RunnerClient } from './client.js';

/** Largest log chunk sent (characters); the API takes up to 65,536. */
const CHUNK_CHARS = 16_000;
/** Chunks per log request (the API takes up to 500). */
const CHUNKS_PER_REQUEST = 200;
/**
 * Largest serialized size of one log request: the runner refuses bodies over 1 MiB (413), and a
 * batch of 200 full chunks would be 3.2 MB or more.
 */
export const MAX_LOG_REQUEST_BYTES = 256 * 1024;
/** A log batch (or the final report) failing this long fails the run instead of holding it forever. */
export const GIVE_UP_MS = 120_000;

/** Where to cut `text` at most `n` UTF-16 units long without splitting a surrogate pair. */
export function cutPoint(text: string, n: number): number {
  if (n >= text.length) return text.length;
  const c = text.charCodeAt(n - 1);
  return n > 1 && c >= 0xd800 && c <= 0xdbff ? n - 1 : n;
}

/** The first chunks of `pending` whose request stays within `maxBytes` (always at least one). */
export function takeBatch(pending: { seq: number; text: string }[], maxBytes: number): { seq: number; text: string }[] {
  // Envelope (lease token, attempt, brackets) stays well under 1 KiB.
  let bytes = 1024;
  let i = 0;
  for (; i < pending.length && i < CHUNKS_PER_REQUEST; i++) {
    bytes += Buffer.byteLength(JSON.stringify(pending[i])) + 1;
    if (bytes > maxBytes && i > 0) break;
  }
  return pending.slice(0, Math.max(1, i));
}
/** Logs are sent at least this often while a run writes. */
const FLUSH_MS = 300;
/**
 * Output waiting to be sent (UTF-16 units) at which the command is paused: its pipe is no longer
 * read, so it blocks in its next write until the runner has caught up. The executor's memory
 * stays bounded whatever a command prints, and nothing is lost.
 */
export const PAUSE_AT_CHARS = 4 * 1024 * 1024;
/** …and resumed once the backlog is down to this. */
const RESUME_AT_CHARS = 1024 * 1024;
/** Output a command may still print once its run is being cancelled or handed back (its last words). */
const TAIL_AFTER_STOP_BYTES = 64 * 1024;

/** What the shipper asks of the run it ships for. */
export interface ShipperHooks {
  /** The run is no longer this lease's (409): stop the command. */
  onLost(): void;
  /** Sending failed for longer than the give-up time: the run must fail. */
  onFailure(why: string): void;
  /** The backlog is large: stop reading the command's output. */
  pause(): void;
  /** The backlog is small again (or output is being dropped): read on. */
  resume(): void;
}

type Chunk = { seq: number; text: string };

const sizeOf = (chunks: Chunk[]) => chunks.reduce((n, c) => n + c.text.length, 0);

/**
 * A run's log as numbered chunks: text is cut into chunks numbered from 1 in the order
 * it was written; chunks stay here until the runner acknowledges them (`ack` = highest gap-free
 * sequence), and are sent again after any failure. The runner ignores sequences it has, so
 * nothing is lost or doubled across retries and API restarts.
 *
 * Bounded: past PAUSE_AT_CHARS waiting, the command is paused (`hooks.pause`) until the backlog
 * is down to RESUME_AT_CHARS. Once the runner answers `full` (RUNNER_MAX_LOG_BYTES reached),
 * output is counted and dropped. A cancel or hand-back (`stop`) drops the backlog not yet sent,
 * leaving one line that says how much, so the run ends without shipping it first.
 */
export class LogShipper {
  #buffer = '';
  #next = 1;
  #pending: Chunk[] = [];
  /** UTF-16 units in `#pending` and `#buffer`. */
  #waiting = 0;
  /** Highest sequence of the batch being sent (0: none): never renumbered. */
  #inFlight = 0;
  #sending: Promise<void> | null = null;
  #timer: NodeJS.Timeout;
  #maxBytes = MAX_LOG_REQUEST_BYTES;
  #paused = false;
  /** Set by `stop`: why the backlog was dropped; output after it is taken up to a small tail. */
  #stopped: string | null = null;
  #tailLeft = TAIL_AFTER_STOP_BYTES;
  /** Bytes of output dropped after `stop` (beyond the tail) or once the runner's log is full. */
  #droppedLater = 0;
  lost = false;
  /** Set once sending failed for longer than the give-up time: the run must fail. */
  failure: string | null = null;
  /** The runner keeps no more of this attempt's log (RUNNER_MAX_LOG_BYTES): output is dropped. */
  full = false;

  constructor(
    private readonly client: RunnerClient,
    private readonly runId: string,
    private readonly lease: { leaseToken: string; attempt: number },
    private readonly hooks: ShipperHooks,
    private readonly giveUpMs = GIVE_UP_MS,
  ) {
    // A failed periodic send keeps its chunks pending; the run's final flush reports the error.
    this.#timer = setInterval(() => void this.flush().catch(() => {}), FLUSH_MS);
  }

  /** Output not yet acknowledged (UTF-16 units): bounded by PAUSE_AT_CHARS plus what one read brings. */
  get waiting(): number {
    return this.#waiting;
  }

  write(text: string): void {
    if (this.full || this.lost || this.failure) {
      this.#droppedLater += Buffer.byteLength(text);
      return;
    }
    if (this.#stopped !== null) {
      const size = Buffer.byteLength(text);
      if (size > this.#tailLeft) {
        this.#droppedLater += size;
        this.#tailLeft = 0;
        return;
      }
      this.#tailLeft -= size;
    }
    this.#buffer += text;
    this.#waiting += text.length;
    while (this.#buffer.length >= CHUNK_CHARS) this.#cut(cutPoint(this.#buffer, CHUNK_CHARS));
    if (this.#waiting >= PAUSE_AT_CHARS && !this.#paused) {
      this.#paused = true;
      this.hooks.pause();
      // Sending starts now rather than at the next tick: the command waits for it.
      void this.flush().catch(() => {});
    }
  }

  #cut(n: number): void {
    this.#pending.push({ seq: this.#next++, text: this.#buffer.slice(0, n) });
    this.#buffer = this.#buffer.slice(n);
  }

  #recount(): void {
    this.#waiting = sizeOf(this.#pending) + this.#buffer.length;
    if (this.#paused && (this.#waiting <= RESUME_AT_CHARS || this.full || this.lost || this.failure || this.#stopped !== null)) {
      this.#paused = false;
      this.hooks.resume();
    }
  }

  /**
   * The run is being cancelled or handed back (`why`): what was not sent yet is dropped — one line
   * in its place says how much — and the command is read on (no longer paused), so it ends at
   * once; what it prints from now on is kept up to a small tail (its last words).
   */
  stop(why: string): void {
    if (this.#stopped !== null) return;
    this.#stopped = why;
    const kept = this.#pending.filter((c) => c.seq <= this.#inFlight);
    const dropped = this.#pending.filter((c) => c.seq > this.#inFlight);
    const bytes = dropped.reduce((n, c) => n + Buffer.byteLength(c.text), 0) + Buffer.byteLength(this.#buffer);
    // Never sent: the numbers of the dropped chunks are given again, so the log has no gap.
    if (dropped.length > 0) this.#next = dropped[0]!.seq;
    this.#pending = kept;
    this.#buffer = '';
    if (bytes > 0 && !this.full && !this.lost && !this.failure) this.#pending.push({ seq: this.#next++, text: `executor: ${bytes} bytes of output not sent: ${why}\n` });
    this.#recount();
  }

  /** Sends what is buffered; resolves once everything written so far is acknowledged. */
  async flush(): Promise<void> {
    if (this.#buffer.length) this.#cut(this.#buffer.length);
    while (this.#sending) await this.#sending;
    if (this.#pending.length === 0 || this.lost || this.failure || this.full) return;
    this.#sending = this.#send().finally(() => {
      this.#sending = null;
    });
    await this.#sending;
  }

  /** Says, at the end of the run's log, how much was dropped after a stop (the runner marks its own limit). */
  async finish(): Promise<void> {
    if (this.#droppedLater > 0 && this.#stopped !== null && !this.full) {
      this.#buffer += `\nexecutor: ${this.#droppedLater} more bytes of output not sent: ${this.#stopped}\n`;
      this.#droppedLater = 0;
    }
    await this.flush();
  }

  async #send(): Promise<void> {
    while (this.#pending.length && !this.lost && !this.failure && !this.full) {
      const batch = takeBatch(this.#pending, this.#maxBytes);
      this.#inFlight = batch[batch.length - 1]!.seq;
      try {
        const { ack, full } = await this.client.json<{ ack: number; full?: boolean }>(
          'POST',
          `/api/runs/${this.runId}/logs`,
          { ...this.lease, chunks: batch },
          { giveUpAfterMs: this.giveUpMs },
        );
        this.#pending = this.#pending.filter((c) => c.seq > ack);
        if (full === true) {
          // The runner keeps nothing more of this attempt: neither does the executor.
          this.full = true;
          this.#pending = [];
          this.#buffer = '';
        }
      } catch (e) {
        if (e instanceof ApiError && e.status === 409) {
          this.lost = true;
          this.hooks.onLost();
          return;
        }
        // Body too large for this runner (a proxy's limit, say): send smaller batches.
        if (e instanceof ApiError && e.status === 413 && batch.length > 1) {
          this.#maxBytes = Math.max(1, Math.floor(this.#maxBytes / 2));
          continue;
        }
        if (e instanceof ApiError || e instanceof GaveUpError) {
          // Retrying the same batch forever would hold the run (its lease renewed by heartbeats).
          this.failure = `could not send the log: ${(e as Error).message}`;
          this.hooks.onFailure(this.failure);
          return;
        }
        throw e;
      } finally {
        this.#inFlight = 0;
        this.#recount();
      }
    }
  }

  close(): void {
    clearInterval(this.#timer);
  }
}

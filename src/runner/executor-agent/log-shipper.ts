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
 * A run's log as numbered chunks (issue #8): text is cut into chunks numbered from 1 in the order
 * it was written; chunks stay here until the runner acknowledges them (`ack` = highest gap-free
 * sequence), and are sent again after any failure. The runner ignores sequences it has, so
 * nothing is lost or doubled across retries and API restarts.
 */
export class LogShipper {
  #buffer = '';
  #next = 1;
  #pending: { seq: number; text: string }[] = [];
  #sending: Promise<void> | null = null;
  #timer: NodeJS.Timeout;
  #maxBytes = MAX_LOG_REQUEST_BYTES;
  lost = false;
  /** Set once sending failed for longer than the give-up time: the run must fail. */
  failure: string | null = null;

  constructor(
    private readonly client: RunnerClient,
    private readonly runId: string,
    private readonly lease: { leaseToken: string; attempt: number },
    private readonly onLost: () => void,
    private readonly onFailure: (why: string) => void = () => {},
    private readonly giveUpMs = GIVE_UP_MS,
  ) {
    // A failed periodic send keeps its chunks pending; the run's final flush reports the error.
    this.#timer = setInterval(() => void this.flush().catch(() => {}), FLUSH_MS);
  }

  write(text: string): void {
    this.#buffer += text;
    while (this.#buffer.length >= CHUNK_CHARS) this.#cut(cutPoint(this.#buffer, CHUNK_CHARS));
  }

  #cut(n: number): void {
    this.#pending.push({ seq: this.#next++, text: this.#buffer.slice(0, n) });
    this.#buffer = this.#buffer.slice(n);
  }

  /** Sends what is buffered; resolves once everything written so far is acknowledged. */
  async flush(): Promise<void> {
    if (this.#buffer.length) this.#cut(this.#buffer.length);
    while (this.#sending) await this.#sending;
    if (this.#pending.length === 0 || this.lost || this.failure) return;
    this.#sending = this.#send().finally(() => {
      this.#sending = null;
    });
    await this.#sending;
  }

  async #send(): Promise<void> {
    while (this.#pending.length && !this.lost && !this.failure) {
      const batch = takeBatch(this.#pending, this.#maxBytes);
      try {
        const { ack } = await this.client.json<{ ack: number }>('POST', `/api/runs/${this.runId}/logs`, { ...this.lease, chunks: batch }, { giveUpAfterMs: this.giveUpMs });
        this.#pending = this.#pending.filter((c) => c.seq > ack);
      } catch (e) {
        if (e instanceof ApiError && e.status === 409) {
          this.lost = true;
          this.onLost();
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
          this.onFailure(this.failure);
          return;
        }
        throw e;
      }
    }
  }

  close(): void {
    clearInterval(this.#timer);
  }
}

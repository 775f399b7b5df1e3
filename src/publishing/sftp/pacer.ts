/**
 * Request pacing for SFTP sessions: a token bucket per session and one per product (shared by
 * its sessions on this instance). Each request costs tokens when it starts, and more when its
 * real cost is known (a refusal, a folder listing batch); a bucket may go into debt, and while
 * either of a session's buckets is in debt its next requests wait, in order, until the debt is
 * paid off at the bucket's rate. Requests are delayed, never refused: a client under the budget
 * never waits, one over it only sees latency, and the process keeps time for everyone else.
 */

export interface PacingOptions {
  /** Tokens per second a session (and a product, across its sessions) earns. */
  rate: number;
  /** Tokens a bucket holds at most: the burst an idle session may spend at once. */
  burst: number;
}

/** Fits OpenSSH `put -r` and lftp mirror of thousands of small files at full speed (see README). */
export const DEFAULT_PACING: PacingOptions = { rate: 2000, burst: 4000 };

/** Requests waiting for their turn past which the connection stops being read from. */
const PAUSE_QUEUE = 256;

export interface Clock {
  now(): number;
  /** Calls `fn` after `ms` milliseconds. */
  later(fn: () => void, ms: number): void;
}

const realClock: Clock = {
  now: () => performance.now(),
  later: (fn, ms) => void setTimeout(fn, ms),
};

export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly options: PacingOptions,
    private readonly clock: Clock = realClock,
  ) {
    this.tokens = options.burst;
    this.last = clock.now();
  }

  private refill(): void {
    const now = this.clock.now();
    this.tokens = Math.min(this.options.burst, this.tokens + ((now - this.last) / 1000) * this.options.rate);
    this.last = now;
  }

  /** Milliseconds until the bucket is out of debt (0: a request may start now). */
  wait(): number {
    this.refill();
    return this.tokens > 0 ? 0 : Math.max(1, Math.ceil((-this.tokens / this.options.rate) * 1000));
  }

  charge(cost: number): void {
    this.refill();
    this.tokens -= cost;
  }
}

/** One session's pacing: its own bucket and its product's. */
export class SessionPacer {
  private readonly queue: (() => void)[] = [];
  private timerSet = false;
  private paused = false;
  /** Requests that had to wait for their turn. */
  deferred = 0;

  private readonly clock: Clock;

  constructor(
    private readonly buckets: TokenBucket[],
    private readonly hooks: {
      clock?: Clock;
      /** Told to stop (true) or resume (false) reading the connection while many requests wait. */
      backpressure?: (pause: boolean) => void;
      /** Called for each request that has to wait. */
      deferred?: () => void;
    } = {},
  ) {
    this.clock = hooks.clock ?? realClock;
  }

  /**
   * Resolves when a request costing `cost` may start; at once (undefined, no promise) when the
   * session is within its budget and nothing waits before it.
   */
  admit(cost: number): Promise<void> | undefined {
    if (this.queue.length === 0 && this.waitMs() === 0) {
      this.charge(cost);
      return undefined;
    }
    this.deferred++;
    this.hooks.deferred?.();
    const turn = new Promise<void>((resolve) =>
      this.queue.push(() => {
        this.charge(cost);
        resolve();
      }),
    );
    if (!this.paused && this.queue.length >= PAUSE_QUEUE) {
      this.paused = true;
      this.hooks.backpressure?.(true);
    }
    this.schedule();
    return turn;
  }

  /** Adds what a request turned out to cost beyond what it paid to start. */
  charge(cost: number): void {
    for (const b of this.buckets) b.charge(cost);
  }

  private waitMs(): number {
    // A loop, not Math.max(...map()): this runs for every request of every session.
    let ms = 0;
    for (const b of this.buckets) ms = Math.max(ms, b.wait());
    return ms;
  }

  private schedule(): void {
    if (this.timerSet) return;
    this.timerSet = true;
    this.clock.later(() => this.drain(), this.waitMs());
  }

  /** Lets waiting requests start while the budget allows, one timer turn at a time. */
  private drain(): void {
    this.timerSet = false;
    while (this.queue.length > 0 && this.waitMs() === 0) this.queue.shift()?.();
    if (this.paused && this.queue.length < PAUSE_QUEUE / 2) {
      this.paused = false;
      this.hooks.backpressure?.(false);
    }
    if (this.queue.length > 0) this.schedule();
  }
}

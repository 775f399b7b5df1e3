/**
 * Pacing per caller: a token bucket each (`rate` tokens a second, holding at most `burst`), so
 * one caller's closed loop of requests is served at `rate` however fast it asks, while a caller
 * within its bucket is never held. A request that finds its caller's bucket empty does not fail:
 * it is given a start time, when the bucket has a token for it, and waits until then (costing a
 * timer, no CPU); a caller's waiting requests start in the order they came. Past `maxWaiting`
 * requests of one caller waiting at once, a request is refused (the caller answers 429 with
 * Retry-After), so nothing queues without bound.
 *
 * `charge` takes more tokens after the fact, for a request that turned out to cost more than one.
 *
 * The bucket is kept as its "theoretical arrival time" (the generic cell rate algorithm of ITU-T
 * I.371, a token bucket with a queue in one number): `full`, the time the bucket would be full
 * again. Then a request at `t` starts at max(t, full + 1/rate − burst/rate), and moves `full` on
 * by 1/rate; the requests waiting are those whose start is still ahead. A caller whose bucket is
 * full again is forgotten (it would start afresh with a full bucket anyway), so the map only
 * holds callers seen in the last (burst + maxWaiting) / rate seconds, and `maxCallers` caps it
 * even against a flood of new callers (each new address of a spray of them).
 */
export interface PaceLimits {
  /** Tokens a second, each caller (a sustained request rate). */
  rate: number;
  /** Tokens a caller's bucket holds: requests it may make at once after being idle. */
  burst: number;
  /** Requests of one caller that may wait for a token at once; more are refused (a charge counts as the requests its tokens stand for). */
  maxWaiting: number;
  /** Callers remembered at most; past it the longest unseen is forgotten (it gets a full bucket). */
  maxCallers?: number;
}

/** What a caller's request gets: start at once (0), wait this many milliseconds, or refused. */
export type Pace = { wait: number } | { refused: true; retryAfterMs: number };

const START_NOW: Pace = Object.freeze({ wait: 0 });

export class Pacer {
  /** Caller → time its bucket is full again (ms of `now`); the map's order is least recently seen first. */
  private readonly full = new Map<string, number>();
  private readonly interval: number;
  private readonly span: number;
  private readonly maxCallers: number;

  constructor(
    private readonly limits: PaceLimits,
    /** Monotonic milliseconds (a wall clock jumping back would hold every caller for the jump). */
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!(limits.rate > 0) || !(limits.burst >= 1) || !(limits.maxWaiting >= 0)) throw new RangeError('pace: rate > 0, burst >= 1, maxWaiting >= 0');
    this.interval = 1000 / limits.rate;
    this.span = limits.burst * this.interval;
    this.maxCallers = limits.maxCallers ?? 100_000;
  }

  /** Takes a token of the caller's bucket, now or at the start this answers; or refuses. */
  take(caller: string): Pace {
    const t = this.now();
    this.forgetFull(t);
    const before = this.full.get(caller);
    const full = Math.max(before ?? t, t) + this.interval;
    const start = full - this.span;
    // A nanosecond of tolerance: float steps of 1000/rate must not turn "now" into a wait.
    if (start <= t + 1e-6) {
      this.remember(caller, full);
      return START_NOW;
    }
    // Requests of this caller that start after t: one each interval back from the last one.
    if (this.waitingAt(before!, t) >= this.limits.maxWaiting) return { refused: true, retryAfterMs: start - t };
    this.remember(caller, full);
    return { wait: start - t };
  }

  /**
   * Takes `tokens` more from the caller's bucket after the fact, for work its request turned out
   * to cost (a long answer): its next requests wait longer, none is interrupted. At most a full
   * bucket at a time, so no single answer holds its caller back longer than burst / rate.
   */
  charge(caller: string, tokens: number): void {
    if (!(tokens > 0)) return;
    const t = this.now();
    // What a caller owes is bounded too: at most the bucket and the queue beyond now, so charges
    // of many answers in flight at once never hold it back longer than (burst + maxWaiting) / rate.
    const owed = Math.max(this.full.get(caller) ?? t, t) + Math.min(tokens, this.limits.burst) * this.interval;
    this.remember(caller, Math.min(owed, t + (this.limits.burst + this.limits.maxWaiting) * this.interval));
  }

  /** Milliseconds until a request of `caller` would start without waiting (0: now). */
  delay(caller: string): number {
    const t = this.now();
    const full = this.full.get(caller);
    return full === undefined ? 0 : Math.max(0, full + this.interval - this.span - t);
  }

  /** Requests of `caller` waiting for their start (tests, metrics). */
  waiting(caller: string): number {
    const full = this.full.get(caller);
    return full === undefined ? 0 : this.waitingAt(full, this.now());
  }

  /** Callers remembered (bounded: see the class comment). */
  get callers(): number {
    return this.full.size;
  }

  /** Starts after `t` of a bucket full at `full`: the last started at full − span, the others an interval apart before it. */
  private waitingAt(full: number, t: number): number {
    const last = full - this.span;
    return last > t + 1e-6 ? Math.ceil((last - t) / this.interval - 1e-9) : 0;
  }

  private remember(caller: string, full: number): void {
    this.full.delete(caller);
    this.full.set(caller, full);
    if (this.full.size > this.maxCallers) this.full.delete(this.full.keys().next().value!);
  }

  /** Drops up to two callers from the least recently seen end whose bucket is full again. */
  private forgetFull(t: number): void {
    for (let i = 0; i < 2; i++) {
      const oldest = this.full.entries().next();
      if (oldest.done || oldest.value[1] > t) return;
      this.full.delete(oldest.value[0]);
    }
  }
}

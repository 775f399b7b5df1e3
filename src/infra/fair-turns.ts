/**
 * Turns on the serving loop, shared fairly between callers. A handler's synchronous work (an
 * SQLite query, serializing an answer) runs without a break once started, and requests that
 * arrive together start together: one caller's burst of requests would run back to back while
 * another caller's request waits behind all of them. Here at most one request starts per turn of
 * the event loop once more than one waits, and callers take turns round robin, so a request
 * waits behind at most one request of each other caller that is waiting too, never behind a
 * caller's whole burst. A caller alone on a quiet loop starts at once.
 */
export class FairTurns {
  /** Waiting starts per caller; the map's order is the round (a caller served goes to its end). */
  private readonly waiting = new Map<string, (() => void)[]>();
  private queued = 0;
  /** A request started in this turn of the loop (cleared by the next `setImmediate`). */
  private startedThisTurn = false;
  private pumping = false;

  constructor(private readonly maxWaiting = 10_000) {}

  /**
   * Resolves when the caller's request may start: at once (undefined) when nothing started in
   * this turn of the loop and nobody waits; else in its caller's turn. Past `maxWaiting` waiting
   * requests, new ones start at once rather than queue without bound.
   */
  turn(caller: string): Promise<void> | undefined {
    if ((!this.startedThisTurn && this.queued === 0) || this.queued >= this.maxWaiting) {
      this.started();
      return undefined;
    }
    return new Promise<void>((resolve) => {
      const queue = this.waiting.get(caller);
      if (queue) queue.push(resolve);
      else this.waiting.set(caller, [resolve]);
      this.queued++;
      this.pump();
    });
  }

  /** Requests waiting for their turn. */
  get size(): number {
    return this.queued;
  }

  private started(): void {
    this.startedThisTurn = true;
    this.pump();
  }

  /** On the next turn of the loop: the next caller in the round starts one request. */
  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    setImmediate(() => {
      this.pumping = false;
      this.startedThisTurn = false;
      const next = this.waiting.keys().next();
      if (next.done) return;
      const caller = next.value;
      const queue = this.waiting.get(caller)!;
      const resolve = queue.shift()!;
      this.waiting.delete(caller);
      if (queue.length > 0) this.waiting.set(caller, queue);
      this.queued--;
      this.started();
      resolve();
    });
  }
}

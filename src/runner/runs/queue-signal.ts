/**
 * Wakes long-polling claims when a run may have become claimable: an idle executor is woken at
 * once by a new run, not by polling the database in a tight loop. `notify` is fired by
 * `RunsService.enqueue` (so runs queued by the scheduler wake executors too), by requeues (the
 * sweeper, a removed executor, a handed-back run) and when capacity frees up (a run completes).
 *
 * Other instances on the same database hear about it through `broadcast` (PostgreSQL
 * LISTEN/NOTIFY, see infra/database/notifications.ts); a waiter also re-checks on its own after
 * a bounded interval, which covers a lost notification or a dialect without one (SQLite files
 * shared by two processes).
 */
export class QueueSignal {
  #generation = 0;
  #waiters = new Set<() => void>();
  #closed = false;

  constructor(private broadcast: (() => Promise<void>) | null = null) {}

  /** Sends notifications to other instances too (set once the listener is up). */
  setBroadcast(broadcast: (() => Promise<void>) | null): void {
    this.broadcast = broadcast;
  }

  /** Something claimable may exist now: wake the waiters here and on other instances. */
  notify(): void {
    this.wakeLocal();
    this.broadcast?.().catch(() => {
      // Other instances re-check on their own within their re-check interval.
    });
  }

  /** A notification from another instance (or this one): wake the waiters here only. */
  wakeLocal(): void {
    this.#generation++;
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const w of waiters) w();
  }

  /** Take a ticket BEFORE looking at the queue; `wait(ticket)` returns at once if anything was notified since. */
  ticket(): number {
    return this.#generation;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Resolves on a notification after `ticket`, after `ms`, on `abort`, or when closed. */
  wait(ticket: number, ms: number, abort?: AbortSignal): Promise<void> {
    if (this.#closed || ticket !== this.#generation || abort?.aborted || ms <= 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        abort?.removeEventListener('abort', done);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      abort?.addEventListener('abort', done, { once: true });
      this.#waiters.add(done);
    });
  }

  /** Server shutdown: every held claim returns now, and new ones do not wait. */
  close(): void {
    this.#closed = true;
    this.wakeLocal();
  }

  /** How many claims are waiting right now (tests, benchmarks). */
  get waiting(): number {
    return this.#waiters.size;
  }
}

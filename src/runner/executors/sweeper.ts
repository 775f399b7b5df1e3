import type { QueueSignal } from '../runs/queue-signal.js';
import type { RunsRepository, SweepResult } from '../runs/repository.js';

export interface SweeperDeps {
  runs: RunsRepository;
  queue: QueueSignal;
  now: () => Date;
  maxAttempts: number;
  /** Milliseconds between sweeps. */
  intervalMs: number;
  /**
   * Runs `work` only if no other instance is sweeping right now (PostgreSQL: a transaction-level
   * advisory lock); resolves null when another instance holds it.
   */
  exclusive: <T>(work: () => Promise<T>) => Promise<T | null>;
  onError: (e: unknown) => void;
  onSweep?: (result: SweepResult) => void;
}

/**
 * Finds lost executors in the background (issue #8: "not only when someone claims"): a run
 * whose lease ran out — its executor missed heartbeats for a whole lease — is re-queued as
 * attempt + 1, or failed as "executor lost" after the maximum; a run being cancelled ends as
 * cancelled. One instance at a time sweeps (see `exclusive`). `close()` stops the loop and
 * waits for a sweep in progress.
 */
export class ExecutorSweeper {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> = Promise.resolve();
  #stopped = false;

  constructor(private readonly d: SweeperDeps) {}

  start(): void {
    this.#schedule();
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.sweep()
        .catch(this.d.onError)
        .finally(() => this.#schedule());
    }, this.d.intervalMs);
    this.#timer.unref();
  }

  /** One sweep now (tests call it with a moved clock). Null when another instance swept. */
  async sweep(): Promise<SweepResult | null> {
    const result = await this.d.exclusive(() => this.d.runs.sweepExpiredLeases(this.d.now().toISOString(), this.d.maxAttempts));
    if (result) {
      if (result.requeued.length > 0) this.d.queue.notify();
      if (result.requeued.length + result.failed.length + result.cancelled.length > 0) this.d.onSweep?.(result);
    }
    return result;
  }

  async close(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }
}

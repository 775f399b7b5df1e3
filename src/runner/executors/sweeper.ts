import { BackgroundLoop } from '../../infra/background-loop.js';
import type { RunOutputStorage } from '../runs/output-storage.js';
import type { QueueSignal } from '../runs/queue-signal.js';
import type { SweepResult } from '../runs/leases-repository.js';
import type { RunsRepository } from '../runs/repository.js';
import { countRunsFinished } from '../metrics.js';

export interface SweeperDeps {
  runs: RunsRepository;
  /** Where the files of lost attempts are removed (their rows go with the requeue). */
  outputs?: Pick<RunOutputStorage, 'removeAttempt'>;
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
 * Finds lost executors in the background, not only when someone claims (with no claims, a lost
 * executor's runs would never be re-queued): a run
 * whose lease ran out — its executor missed heartbeats for a whole lease — is re-queued as
 * attempt + 1, or failed as "executor lost" after the maximum; a run being cancelled ends as
 * cancelled. One instance at a time sweeps (see `exclusive`). `close()` stops the loop and
 * waits for a sweep in progress.
 */
export class ExecutorSweeper {
  readonly #loop: BackgroundLoop;

  constructor(private readonly d: SweeperDeps) {
    this.#loop = new BackgroundLoop({ intervalMs: d.intervalMs, run: async () => void (await this.sweep()), onError: d.onError });
  }

  start(): void {
    this.#loop.start();
  }

  /** One sweep now (tests call it with a moved clock). Null when another instance swept. */
  async sweep(): Promise<SweepResult | null> {
    const result = await this.d.exclusive(() => this.d.runs.sweepExpiredLeases(this.d.now().toISOString(), this.d.maxAttempts));
    if (result) {
      countRunsFinished('failed', result.failed.length);
      countRunsFinished('cancelled', result.cancelled.length);
      if (result.requeued.length > 0) this.d.queue.notify();
      // After the commit: the next attempt writes to its own directory, so nothing it stores is hit.
      for (const l of result.lost) await this.d.outputs?.removeAttempt(l.id, l.attempt);
      if (result.requeued.length + result.failed.length + result.cancelled.length > 0) this.d.onSweep?.(result);
    }
    return result;
  }

  /** Stops the loop and waits for a sweep in progress. */
  close(): Promise<void> {
    return this.#loop.stop();
  }
}

import { pause } from '../../infra/background-loop.js';
import type { RunOutputStorage } from '../runs/output-storage.js';
import { runnerMetrics } from '../metrics.js';
import type { RetentionRepository } from './repository.js';

/** How often the runner process looks for runs past retention. */
export const RETENTION_INTERVAL_MS = 10 * 60_000;
const DAY_MS = 86_400_000;

export interface RetentionDeps {
  repository: RetentionRepository;
  outputs: RunOutputStorage;
  /** RUNNER_RETENTION_DAYS; 0 keeps every run. */
  days: number;
  /** Runs per transaction (default 500). */
  batchSize?: number;
  /** Log chunks deleted per statement (default 10,000). */
  logChunk?: number;
  /** Pause between batches (default 200 ms), so other writers get the SQLite write lock in between. */
  pauseMs?: number;
}

/**
 * Deletes finished runs (succeeded, failed, cancelled) whose `finished_at` is older than the
 * retention period, with their logs, output rows and output files. Works in small batches (their
 * log chunks a bounded number per statement first, then the runs and output rows in one short
 * transaction) with a pause after each, so API writes never wait long behind it.
 * Output files go first: a crash in between leaves rows whose files are gone (the next pass
 * deletes them), never files nobody can find.
 */
export class RunRetention {
  constructor(private readonly d: RetentionDeps) {}

  get enabled(): boolean {
    return this.d.days > 0;
  }

  /** One full pass; resolves with the number of runs deleted. Stops between batches on `signal`. */
  async prune(now: Date, signal: AbortSignal = new AbortController().signal): Promise<number> {
    if (!this.enabled) return 0;
    const cutoff = new Date(now.getTime() - this.d.days * DAY_MS).toISOString();
    const batchSize = this.d.batchSize ?? 500;
    let deleted = 0;
    while (!signal.aborted) {
      const ids = await this.d.repository.finishedBefore(cutoff, batchSize);
      for (const id of ids) await this.d.outputs.removeRun(id);
      const logChunk = this.d.logChunk ?? 10_000;
      while ((await this.d.repository.deleteLogChunk(ids, cutoff, logChunk)) >= logChunk) {
        if (signal.aborted) return deleted;
      }
      const batch = await this.d.repository.deleteRuns(ids, cutoff);
      runnerMetrics()?.retentionDeleted.inc(batch);
      deleted += batch;
      if (ids.length < batchSize) break;
      await pause(this.d.pauseMs ?? 200, signal);
    }
    if (!signal.aborted) await this.removeOrphans(batchSize);
    return deleted;
  }

  /**
   * Removes stored outputs whose run is gone: a process that stopped between deleting runs and
   * removing their files left them. Safe beside uploads: an output is put in place only after
   * its run's row was written, and a run id is never used again.
   */
  private async removeOrphans(batchSize: number): Promise<void> {
    const ids = await this.d.outputs.runIds();
    for (let i = 0; i < ids.length; i += batchSize) {
      const batch = ids.slice(i, i + batchSize);
      const existing = await this.d.repository.existing(batch);
      for (const id of batch) if (!existing.has(id)) await this.d.outputs.removeRun(id);
    }
  }
}

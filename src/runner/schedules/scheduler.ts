import { runnerMetrics } from '../metrics.js';
import type { RunsService } from '../runs/service.js';
import type { WorkflowsRepository } from '../workflows/repository.js';
import { nextFireAfter } from './cron.js';
import type { ScheduleRow, SchedulesRepository } from './repository.js';

/** How often the runner process looks for due schedules. */
export const SCHEDULER_INTERVAL_MS = 1000;
/** Due schedules read per query; a tick keeps reading until none is due. */
const DUE_BATCH = 100;

export interface SchedulerLog {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface SchedulerDeps {
  schedules: SchedulesRepository;
  workflows: WorkflowsRepository;
  /** Runs are queued only through RunsService.enqueue (it wakes idle executors). */
  runs: RunsService;
  log: SchedulerLog;
}

export interface TickResult {
  queued: string[];
  skipped: string[];
}

/**
 * Fires due schedules. Each tick reads the enabled schedules whose `next_fire_at` has passed and,
 * for each, moves `next_fire_at` to the next time after *now* by compare-and-set: of any number of
 * instances ticking at once exactly one wins a given fire, and a runner that was down for hours
 * fires each schedule once for all the ticks it missed, not once per missed tick. The winner
 * alone applies the overlap policy and queues the run.
 *
 * The compare-and-set and the insert of the run are one transaction
 * (`SchedulesRepository.takeFireQueueing`): a process killed between the two, or a failed insert,
 * rolls both back and a later pass fires; executors are woken only after the COMMIT.
 */
/** Counts a fire this process won (metrics; no-op while they are off). */
const fired = (outcome: 'queued' | 'skipped' | 'failed') => runnerMetrics()?.scheduleFires.inc({ outcome });

export class Scheduler {
  constructor(private readonly d: SchedulerDeps) {}

  async tick(now: Date): Promise<TickResult> {
    const result: TickResult = { queued: [], skipped: [] };
    const at = now.toISOString();
    const seen = new Set<string>();
    for (;;) {
      const due = (await this.d.schedules.due(at, DUE_BATCH)).filter((s) => !seen.has(s.id));
      if (due.length === 0) return result;
      for (const s of due) {
        seen.add(s.id);
        await this.fire(s, now, result);
      }
    }
  }

  private async fire(s: ScheduleRow, now: Date, result: TickResult): Promise<void> {
    const expected = s.next_fire_at!;
    const firedAt = now.toISOString();
    let next: string | null;
    try {
      next = nextFireAfter({ cron: s.cron, timeZone: s.time_zone }, now)?.toISOString() ?? null;
    } catch (e) {
      // Checked when stored, so only a time zone the platform no longer knows gets here: the
      // schedule stops (no next fire) rather than failing every tick, and says why.
      if (await this.d.schedules.takeFire(s.id, expected, null, firedAt, 'failed')) fired('failed');
      this.d.log.error({ scheduleId: s.id, err: e }, 'schedule stopped: its expression or time zone cannot be read');
      return;
    }
    // Read before taking the fire so the outcome is written with it; only the winner acts on it.
    const skip = s.overlap === 'skip' && (await this.d.schedules.hasActiveRun(s.id));
    if (skip) {
      if (!(await this.d.schedules.takeFire(s.id, expected, next, firedAt, 'skipped'))) return;
      fired('skipped');
      this.d.log.info({ scheduleId: s.id, due: expected }, 'schedule skipped: its previous run is still queued or running');
      result.skipped.push(s.id);
      return;
    }
    const workflow = await this.d.workflows.findById(s.workflow_id);
    if (!workflow) {
      // Deleted since `due` read the schedule (its schedules go with it): nothing to queue.
      if (await this.d.schedules.takeFire(s.id, expected, next, firedAt, 'failed')) fired('failed');
      return;
    }
    try {
      const run = await this.d.runs.enqueueWith(
        {
          workflow,
          version: s.workflow_version ?? workflow.latest_version,
          parameters: JSON.parse(s.parameters) as Record<string, unknown>,
          requiredLabels: JSON.parse(s.required_labels) as string[],
          createdBy: null,
          scheduleId: s.id,
        },
        (row) => this.d.schedules.takeFireQueueing(s.id, expected, next, firedAt, row),
      );
      if (!run) return;
      fired('queued');
      this.d.log.info({ scheduleId: s.id, runId: run.id, workflowVersion: run.workflow_version, due: expected }, 'schedule fired');
      result.queued.push(run.id);
    } catch (e) {
      // Nothing of this fire was written: `next_fire_at` still holds it and the next pass tries again.
      await this.d.schedules.recordFailedFire(s.id, expected, firedAt).catch(() => undefined);
      fired('failed');
      this.d.log.error({ scheduleId: s.id, err: e }, 'schedule could not queue its run; trying again at the next pass');
    }
  }
}

import type { Kysely, Selectable, Updateable } from 'kysely';
import type { RunnerDB, SchedulesTable } from '../db/schema.js';
import { ACTIVE } from '../runs/repository.js';

export type ScheduleRow = Selectable<SchedulesTable>;
export type SchedulePatch = Omit<Updateable<SchedulesTable>, 'id' | 'project_id' | 'workflow_id' | 'created_by' | 'created_at'>;

/** What one fire did, recorded on the schedule for its readers. */
export type FireOutcome = 'queued' | 'skipped' | 'failed';

export class SchedulesRepository {
  constructor(private readonly db: Kysely<RunnerDB>) {}

  async create(row: ScheduleRow): Promise<ScheduleRow> {
    await this.db.insertInto('schedules').values(row).execute();
    return row;
  }

  findById(id: string): Promise<ScheduleRow | undefined> {
    return this.db.selectFrom('schedules').selectAll().where('id', '=', id).executeTakeFirst();
  }

  listByWorkflow(workflowId: string): Promise<ScheduleRow[]> {
    return this.db.selectFrom('schedules').selectAll().where('workflow_id', '=', workflowId).orderBy('created_at').orderBy('id').execute();
  }

  async countByWorkflow(workflowId: string): Promise<number> {
    const r = await this.db
      .selectFrom('schedules')
      .where('workflow_id', '=', workflowId)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Writes the changed fields; the row after the change, or undefined when it is gone. */
  async update(id: string, patch: SchedulePatch): Promise<ScheduleRow | undefined> {
    await this.db.updateTable('schedules').set(patch).where('id', '=', id).execute();
    return this.findById(id);
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('schedules').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** Enabled schedules whose next fire is at or before `now`, earliest first. */
  due(now: string, limit: number): Promise<ScheduleRow[]> {
    return this.db
      .selectFrom('schedules')
      .selectAll()
      .where('next_fire_at', '<=', now)
      .where('enabled', '=', 1)
      .orderBy('next_fire_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  }

  /**
   * Takes one fire of a schedule: moves `next_fire_at` from the value this instance read to the
   * next one, only if nobody moved it first (compare-and-set). Of several instances ticking at
   * once exactly one gets true; the others see the row changed and do nothing. A change by a
   * user in between (new cron, disabled) also makes it false.
   */
  async takeFire(id: string, expected: string, next: string | null, firedAt: string, outcome: FireOutcome): Promise<boolean> {
    const r = await this.db
      .updateTable('schedules')
      .set({ next_fire_at: next, last_fire_at: firedAt, last_outcome: outcome, last_run_id: null })
      .where('id', '=', id)
      .where('next_fire_at', '=', expected)
      .where('enabled', '=', 1)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** Records the run (or failure) of the fire taken at `firedAt`, unless a later fire was taken since. */
  async recordFire(id: string, firedAt: string, outcome: FireOutcome, runId: string | null): Promise<void> {
    await this.db
      .updateTable('schedules')
      .set({ last_outcome: outcome, last_run_id: runId })
      .where('id', '=', id)
      .where('last_fire_at', '=', firedAt)
      .execute();
  }

  /** Whether a run this schedule queued is still queued or running (overlap policy `skip`). */
  async hasActiveRun(scheduleId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('runs')
      .select('id')
      .where('schedule_id', '=', scheduleId)
      .where('status', 'in', ACTIVE)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }
}

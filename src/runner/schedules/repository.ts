import type { Kysely, Selectable, Updateable } from 'kysely';
import type { RunnerDB, SchedulesTable } from '../db/schema.js';
import { insertRun } from '../runs/repository.js';
import { ACTIVE, type NewRunRow } from '../runs/run-rows.js';
import { scheduleListQuery } from './list-query.js';

export type ScheduleRow = Selectable<SchedulesTable>;
export type SchedulePatch = Omit<Updateable<SchedulesTable>, 'id' | 'project_id' | 'workflow_id' | 'created_by' | 'created_at'>;

/** What one fire did, recorded on the schedule for its readers. */
export type FireOutcome = 'queued' | 'skipped' | 'failed';

/**
 * The compare-and-set that takes a fire: writes `change` only if `next_fire_at` still holds the
 * value this instance read. Of several instances ticking at once exactly one gets true; the
 * others see the row changed and do nothing. A change by a user in between (new cron, disabled)
 * also makes it false.
 */
async function casFire(db: Kysely<RunnerDB>, id: string, expected: string, change: Updateable<SchedulesTable>): Promise<boolean> {
  const r = await db.updateTable('schedules').set(change).where('id', '=', id).where('next_fire_at', '=', expected).where('enabled', '=', 1).executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export class SchedulesRepository {
  constructor(private readonly db: Kysely<RunnerDB>) {}

  /** Inserts a schedule without the cap (see createWithin). */
  async create(row: ScheduleRow): Promise<ScheduleRow> {
    await this.db.insertInto('schedules').values(row).execute();
    return row;
  }

  /**
   * Inserts the schedule unless its workflow has `max` already; false then, with nothing written.
   * Count and insert are one transaction that first locks the workflow's row by a no-op write
   * (PostgreSQL row lock; on SQLite a write transaction from its start), so concurrent creates,
   * also through other instances, count one after the other and never pass the cap together.
   */
  async createWithin(row: ScheduleRow, max: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const locked = await trx
        .updateTable('workflows')
        .set((eb) => ({ updated_at: eb.ref('updated_at') }))
        .where('id', '=', row.workflow_id)
        .executeTakeFirst();
      if (Number(locked.numUpdatedRows) === 0) return false;
      const { n } = await trx
        .selectFrom('schedules')
        .where('workflow_id', '=', row.workflow_id)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      if (Number(n) >= max) return false;
      await trx.insertInto('schedules').values(row).execute();
      return true;
    });
  }

  findById(id: string): Promise<ScheduleRow | undefined> {
    return this.db.selectFrom('schedules').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * One page of the schedules of the projects `memberUserId` belongs to (null: all), optionally of
   * one project or workflow, in creation order after `after`; at most `limit`, each with its
   * workflow's name (read for that page's workflows only).
   */
  async listVisible(f: { memberUserId: string | null; projectId?: string; workflowId?: string; limit: number; after?: { createdAt: string; id: string } }): Promise<(ScheduleRow & { workflow_name: string })[]> {
    const { memberUserId, ...rest } = f;
    const projectIds =
      memberUserId === null ? null : (await this.db.selectFrom('project_members').select('project_id').where('user_id', '=', memberUserId).orderBy('project_id').execute()).map((r) => r.project_id);
    const rows = (await scheduleListQuery(this.db, { ...rest, projectIds })?.execute()) ?? [];
    const workflowIds = [...new Set(rows.map((r) => r.workflow_id))];
    const names = new Map(
      workflowIds.length === 0 ? [] : (await this.db.selectFrom('workflows').select(['id', 'name']).where('id', 'in', workflowIds).execute()).map((w) => [w.id, w.name] as const),
    );
    // A workflow deleted between the two reads takes its schedules with it (cascade): leave them out.
    return rows.flatMap((r) => {
      const name = names.get(r.workflow_id);
      return name === undefined ? [] : [{ ...r, workflow_name: name }];
    });
  }

  listByWorkflow(workflowId: string): Promise<ScheduleRow[]> {
    return this.db.selectFrom('schedules').selectAll().where('workflow_id', '=', workflowId).orderBy('created_at').orderBy('id').execute();
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
   * Takes one fire of a schedule that queues no run (skipped by the overlap policy, or stopped):
   * moves `next_fire_at` from the value this instance read to the next one, only if nobody moved
   * it first (compare-and-set, see `casFire`).
   */
  async takeFire(id: string, expected: string, next: string | null, firedAt: string, outcome: Exclude<FireOutcome, 'queued'>): Promise<boolean> {
    return casFire(this.db, id, expected, { next_fire_at: next, last_fire_at: firedAt, last_outcome: outcome, last_run_id: null });
  }

  /**
   * Takes one fire and inserts its run in ONE transaction: the fire is never taken without its
   * run (a process dying, or the insert failing, in between rolls both back and the next pass
   * fires), and never queued twice (the compare-and-set locks the schedule's row first, so an
   * instance racing for the same fire waits for this COMMIT, then finds `next_fire_at` moved).
   * False, with nothing written, when another instance or a user change got there first.
   */
  async takeFireQueueing(id: string, expected: string, next: string | null, firedAt: string, run: NewRunRow): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const taken = await casFire(trx, id, expected, { next_fire_at: next, last_fire_at: firedAt, last_outcome: 'queued', last_run_id: run.id });
      if (taken) await insertRun(trx, run);
      return taken;
    });
  }

  /**
   * A fire whose run could not be queued (its transaction rolled back): says so on the schedule
   * but leaves `next_fire_at` where it was, so the next pass tries that fire again. Unless that
   * fire was taken meanwhile (by another instance, or a user changing the schedule).
   */
  async recordFailedFire(id: string, expected: string, firedAt: string): Promise<void> {
    await this.db
      .updateTable('schedules')
      .set({ last_fire_at: firedAt, last_outcome: 'failed', last_run_id: null })
      .where('id', '=', id)
      .where('next_fire_at', '=', expected)
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

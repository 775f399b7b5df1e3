import { NotFoundError, ValidationError } from '../../infra/errors.js';
import { nulFieldIn } from '../../infra/nul.js';
import { randomUUID } from '../../infra/secrets.js';
import type { Principal } from '../auth/authenticate.js';
import type { OverlapPolicy } from '../db/schema.js';
import { checkMembership, loadWorkflow, type ProjectNeed, type ScopeRepositories } from '../projects/access.js';
import { type CronSpec, checkCronSpec, NEXT_FIRE_TIMES, nextFireAfter, nextFireTimes } from './cron.js';
import { describeCron } from './describe.js';
import type { SchedulePatch, ScheduleRow, SchedulesRepository } from './repository.js';
import { type DeclaredParameter, parameterProblems } from '../workflows/declared-parameters.js';

export interface SchedulesDeps extends ScopeRepositories {
  schedules: SchedulesRepository;
  now: () => Date;
}

/** A workflow keeps at most this many schedules (each is read on every tick while due). */
export const MAX_SCHEDULES_PER_WORKFLOW = 100;

/** Pages of the list of all schedules a user can read: this many by default, at most MAX. */
export const DEFAULT_SCHEDULE_PAGE = 50;
export const MAX_SCHEDULE_PAGE = 200;

/** Where the next page of schedules starts: the last schedule of a page, opaque to clients. */
function encodeCursor(r: ScheduleRow): string {
  return Buffer.from(JSON.stringify([r.created_at, r.id])).toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: string; id: string } {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && !nulFieldIn(v)) return { createdAt: v[0], id: v[1] };
  } catch {
    // not base64url JSON: the same 400 below
  }
  throw new ValidationError('cursor is not valid; use nextCursor from a previous page', [{ field: 'cursor', message: 'is not valid' }]);
}

export type Parameters = Record<string, string | number | boolean | null>;

export interface ScheduleInput {
  name?: string;
  cron: string;
  timeZone?: string;
  enabled?: boolean;
  parameters?: Parameters;
  requiredLabels?: string[];
  /** A pinned version, or null/absent for the latest version at fire time. */
  workflowVersion?: number | null;
  overlap?: OverlapPolicy;
}

export type SchedulePatchInput = Partial<ScheduleInput>;

/** A schedule with the instants it will fire next (empty while disabled). */
export interface ScheduleView {
  row: ScheduleRow;
  nextFireTimes: string[];
}

/** Schedules of a workflow: viewers of its project read them, editors change them. */
export class SchedulesService {
  constructor(private readonly d: SchedulesDeps) {}

  /**
   * The next fire times as the scheduler will take them: from the stored next fire (which may
   * be due but not yet taken), then onwards. Lists take `count` 1: the stored fire costs
   * nothing, while each later one is a search that a rarely firing expression (`0 0 * 2 1#5`
   * fires once in 28 years) makes take milliseconds per schedule.
   */
  private view(row: ScheduleRow, count = NEXT_FIRE_TIMES): ScheduleView {
    if (!row.enabled || !row.next_fire_at) return { row, nextFireTimes: [] };
    const first = new Date(row.next_fire_at);
    if (count <= 1) return { row, nextFireTimes: [first.toISOString()] };
    const later = nextFireTimes({ cron: row.cron, timeZone: row.time_zone }, first, count - 1);
    return { row, nextFireTimes: [first, ...later].map((d) => d.toISOString()) };
  }

  private async load(p: Principal, id: string, need: ProjectNeed): Promise<ScheduleRow> {
    const row = await this.d.schedules.findById(id);
    if (!row) throw new NotFoundError('no such schedule');
    await checkMembership(this.d.projects, p, row.project_id, need, 'no such schedule');
    return row;
  }

  private async checkVersion(workflowId: string, version: number | null | undefined): Promise<void> {
    if (version == null) return;
    if (!(await this.d.workflows.version(workflowId, version))) {
      throw new ValidationError(`workflow has no version ${version}`, [{ field: 'workflowVersion', message: 'does not exist' }]);
    }
  }

  /**
   * The parameters fit what the version a schedule runs declares (its pinned version, else the
   * latest now), as a run's are checked when started by hand: 400 naming `parameters/<name>`.
   * Its runs take the declared defaults of the version they fire with (RunsService).
   */
  private async checkParameters(workflowId: string, version: number | null | undefined, parameters: Record<string, unknown>): Promise<void> {
    const pinned = version ?? (await this.d.workflows.findById(workflowId))?.latest_version;
    const row = pinned === undefined ? undefined : await this.d.workflows.version(workflowId, pinned);
    const problems = row ? parameterProblems(JSON.parse(row.declared_parameters) as DeclaredParameter[], parameters) : [];
    if (problems.length > 0) throw new ValidationError(problems.map((x) => `${x.field} ${x.message}`).join('; '), problems);
  }

  /** The next fire strictly after now, for an enabled schedule; null while disabled. */
  private nextFire(spec: CronSpec, enabled: boolean): string | null {
    if (!enabled) return null;
    return nextFireAfter(spec, this.d.now())?.toISOString() ?? null;
  }

  async list(p: Principal, workflowId: string): Promise<ScheduleView[]> {
    const wf = await loadWorkflow(this.d, p, workflowId, 'read');
    return (await this.d.schedules.listByWorkflow(wf.id)).map((r) => this.view(r, 1));
  }

  /**
   * One page of the schedules the caller can read (administrators: all), in creation order, each
   * with its workflow's name; the fire time of that page's schedules only. A malformed cursor or a
   * limit outside 1..MAX_SCHEDULE_PAGE is a 400 naming it.
   */
  async listVisible(
    p: Principal,
    f: { project?: string; workflow?: string; limit?: number; cursor?: string },
  ): Promise<{ items: (ScheduleView & { workflowName: string })[]; nextCursor: string | null }> {
    const limit = f.limit ?? DEFAULT_SCHEDULE_PAGE;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SCHEDULE_PAGE) {
      throw new ValidationError(`limit must be 1-${MAX_SCHEDULE_PAGE}`, [{ field: 'limit', message: `must be an integer 1-${MAX_SCHEDULE_PAGE}` }]);
    }
    const rows = await this.d.schedules.listVisible({
      memberUserId: p.type === 'api-key' || p.user.role === 'admin' ? null : p.user.id,
      projectId: f.project,
      workflowId: f.workflow,
      limit: limit + 1,
      after: f.cursor ? decodeCursor(f.cursor) : undefined,
    });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      // One view object a row (the row keeps its workflow_name; presenters pick their fields):
      // a page is what a client loops over, so no copies of each row.
      items: page.map((row) => {
        const listed = this.view(row, 1) as ScheduleView & { workflowName: string };
        listed.workflowName = row.workflow_name;
        return listed;
      }),
      nextCursor: rows.length > limit && last ? encodeCursor(last) : null,
    };
  }

  /** What an expression means and when it would fire next, before anything is saved (400 naming cron or timeZone). */
  preview(input: { cron: string; timeZone?: string }): { cron: string; timeZone: string; description: string; nextFireTimes: string[] } {
    const now = this.d.now();
    const spec = checkCronSpec({ cron: input.cron, timeZone: input.timeZone ?? 'UTC' }, now);
    return { ...spec, description: describeCron(spec.cron), nextFireTimes: nextFireTimes(spec, now, NEXT_FIRE_TIMES).map((d) => d.toISOString()) };
  }

  async get(p: Principal, id: string): Promise<ScheduleView> {
    return this.view(await this.load(p, id, 'read'));
  }

  /** Needs the editor role. The first fire is the next time the expression matches after now. */
  async create(p: Principal, workflowId: string, input: ScheduleInput): Promise<ScheduleView> {
    const wf = await loadWorkflow(this.d, p, workflowId, 'write');
    const now = this.d.now();
    const spec = checkCronSpec({ cron: input.cron, timeZone: input.timeZone ?? 'UTC' }, now);
    await this.checkVersion(wf.id, input.workflowVersion);
    await this.checkParameters(wf.id, input.workflowVersion, input.parameters ?? {});
    const enabled = input.enabled ?? true;
    const stamp = now.toISOString();
    const row: ScheduleRow = {
      id: randomUUID(),
      project_id: wf.project_id,
      workflow_id: wf.id,
      name: input.name?.trim() ?? '',
      cron: spec.cron,
      time_zone: spec.timeZone,
      enabled: enabled ? 1 : 0,
      parameters: JSON.stringify(input.parameters ?? {}),
      required_labels: JSON.stringify(input.requiredLabels ?? []),
      workflow_version: input.workflowVersion ?? null,
      overlap: input.overlap ?? 'skip',
      next_fire_at: this.nextFire(spec, enabled),
      last_fire_at: null,
      last_outcome: null,
      last_run_id: null,
      created_by: p.type === 'user' ? p.user.id : null,
      created_at: stamp,
      updated_at: stamp,
    };
    if (!(await this.d.schedules.createWithin(row, MAX_SCHEDULES_PER_WORKFLOW))) {
      // The workflow is there (loaded above) unless deleted meanwhile: then the cap is moot.
      if (!(await this.d.workflows.findById(wf.id))) throw new NotFoundError('no such workflow');
      throw new ValidationError(`a workflow has at most ${MAX_SCHEDULES_PER_WORKFLOW} schedules`, [
        { field: '(body)', message: `at most ${MAX_SCHEDULES_PER_WORKFLOW} schedules per workflow` },
      ]);
    }
    return this.view(row);
  }

  /**
   * Changes the fields sent (needs the editor role). A new expression, time zone or enabling
   * computes the next fire afresh from now; other changes keep it.
   */
  async update(p: Principal, id: string, input: SchedulePatchInput): Promise<ScheduleView> {
    const current = await this.load(p, id, 'write');
    const spec = checkCronSpec({ cron: input.cron ?? current.cron, timeZone: input.timeZone ?? current.time_zone }, this.d.now());
    await this.checkVersion(current.workflow_id, input.workflowVersion);
    if (input.parameters !== undefined || input.workflowVersion !== undefined) {
      const version = input.workflowVersion !== undefined ? input.workflowVersion : current.workflow_version;
      await this.checkParameters(current.workflow_id, version, input.parameters ?? (JSON.parse(current.parameters) as Record<string, unknown>));
    }
    const enabled = input.enabled ?? current.enabled === 1;
    const timing = spec.cron !== current.cron || spec.timeZone !== current.time_zone || enabled !== (current.enabled === 1);
    const patch: SchedulePatch = { updated_at: this.d.now().toISOString() };
    if (input.name !== undefined) patch.name = input.name.trim();
    if (input.parameters !== undefined) patch.parameters = JSON.stringify(input.parameters);
    if (input.requiredLabels !== undefined) patch.required_labels = JSON.stringify(input.requiredLabels);
    if (input.workflowVersion !== undefined) patch.workflow_version = input.workflowVersion;
    if (input.overlap !== undefined) patch.overlap = input.overlap;
    if (timing) {
      Object.assign(patch, { cron: spec.cron, time_zone: spec.timeZone, enabled: enabled ? 1 : 0, next_fire_at: this.nextFire(spec, enabled) });
    }
    const row = await this.d.schedules.update(current.id, patch);
    if (!row) throw new NotFoundError('no such schedule');
    return this.view(row);
  }

  /** Needs the editor role. Runs it queued keep their `scheduleId`. */
  async delete(p: Principal, id: string): Promise<void> {
    const row = await this.load(p, id, 'write');
    await this.d.schedules.delete(row.id);
  }
}

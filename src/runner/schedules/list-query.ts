import type { Kysely, Selectable, SelectQueryBuilder } from 'kysely';
import type { RunnerDB, SchedulesTable } from '../db/schema.js';

/*
 * The schedule list (GET /api/schedules, the web UI's Schedules and workflow pages, MCP
 * list_schedules) in creation order, as index ranges: every filter has an index that ends in the
 * list order (created_at, id) (migration 0016), so a page reads its rows in order from one range
 * and stops at the limit, however many schedules there are. A member's list without a project is
 * one such range per project they belong to, each limited, merged in order, as the run list does
 * (runs/list-query.ts): a single `project_id IN (…)` would sort every visible schedule first.
 */

export interface ScheduleListFilter {
  /** Only these projects (a member's); null = every project. */
  projectIds: string[] | null;
  projectId?: string;
  workflowId?: string;
  limit: number;
  /** Keyset cursor: the last row of the previous page. */
  after?: { createdAt: string; id: string };
}

type ScheduleQuery = SelectQueryBuilder<RunnerDB, 'schedules', Selectable<SchedulesTable>>;

/** A member's projects listed one range each, up to this many; beyond, one IN list. */
export const MERGED_PROJECT_RANGES = 32;

function filtered(db: Kysely<RunnerDB>, f: ScheduleListFilter, projectId: string | undefined): ScheduleQuery {
  let q = db.selectFrom('schedules').selectAll();
  if (projectId) q = q.where('project_id', '=', projectId);
  if (f.workflowId) q = q.where('workflow_id', '=', f.workflowId);
  if (f.after) {
    const { createdAt, id } = f.after;
    // `created_at >= x` first: a range the index serves, so a later page starts where the cursor
    // points instead of scanning every earlier schedule (an OR alone is not a range).
    q = q.where('created_at', '>=', createdAt).where((eb) => eb.or([eb('created_at', '>', createdAt), eb('id', '>', id)]));
  }
  return q.orderBy('created_at').orderBy('id').limit(f.limit);
}

/** The query of one page; null when the filter can match nothing (no project in common). */
export function scheduleListQuery(db: Kysely<RunnerDB>, f: ScheduleListFilter): ScheduleQuery | null {
  const member = f.projectIds;
  if (member === null) return filtered(db, f, f.projectId);
  if (f.projectId) return member.includes(f.projectId) ? filtered(db, f, f.projectId) : null;
  if (member.length === 0) return null;
  if (member.length === 1) return filtered(db, f, member[0]);
  // A workflow is a range of its own (it lives in one project): membership only checks each row.
  if (f.workflowId || member.length > MERGED_PROJECT_RANGES) return filtered(db, f, undefined).where('project_id', 'in', member);
  const [first, ...rest] = member.map((id, i) => db.selectFrom(filtered(db, f, id).as(`p${i}`)).selectAll());
  const merged = rest.reduce((u, q) => u.unionAll(q), first!);
  return db.selectFrom(merged.as('m')).selectAll().orderBy('created_at').orderBy('id').limit(f.limit) as unknown as ScheduleQuery;
}

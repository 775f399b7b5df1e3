import type { Kysely, SelectQueryBuilder } from 'kysely';
import type { RunnerDB, RunsTable, RunStatus } from '../db/schema.js';
import type { Selectable } from 'kysely';

/*
 * The run list (GET /api/runs, the web UI's Runs page, MCP list_runs) newest first, as index
 * ranges: every filter has a compound index that ends in the list order (created_at, id)
 * (migration 0013), so a page reads its rows in order from one range and stops at the limit,
 * however many runs a project has. A member's list without a project is one such range per
 * project they belong to, each limited, merged: a single `project_id IN (…)` is a range per
 * project too, but neither planner merges ranges in order, so it sorted every run first.
 * (The member's project ids are read first: a handful of rows by the membership index.)
 */

export interface RunListFilter {
  /** Only these projects (a member's); null = every project. */
  projectIds: string[] | null;
  projectId?: string;
  workflowId?: string;
  status?: RunStatus;
  scheduleId?: string;
  createdBy?: string;
  since?: string;
  until?: string;
  limit: number;
  after?: { createdAt: string; id: string };
}

type RunQuery = SelectQueryBuilder<RunnerDB, 'runs', Selectable<RunsTable>>;

/** A member's projects listed one range each, up to this many; beyond, one IN list. */
export const MERGED_PROJECT_RANGES = 32;

function filtered(db: Kysely<RunnerDB>, f: RunListFilter, projectId: string | undefined): RunQuery {
  let q = db.selectFrom('runs').selectAll();
  if (projectId) q = q.where('project_id', '=', projectId);
  if (f.workflowId) q = q.where('workflow_id', '=', f.workflowId);
  if (f.status) q = q.where('status', '=', f.status);
  if (f.scheduleId) q = q.where('schedule_id', '=', f.scheduleId);
  if (f.createdBy) q = q.where('created_by', '=', f.createdBy);
  if (f.since) q = q.where('created_at', '>=', f.since);
  if (f.until) q = q.where('created_at', '<', f.until);
  if (f.after) {
    const { createdAt, id } = f.after;
    // `created_at <= x` first: a range the index serves, so a page deep in the list starts where
    // the cursor points instead of scanning every newer run (an OR alone is not a range).
    q = q.where('created_at', '<=', createdAt).where((eb) => eb.or([eb('created_at', '<', createdAt), eb('id', '<', id)]));
  }
  return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(f.limit);
}

/** The query of one page; null when the filter can match nothing (no project in common). */
export function runListQuery(db: Kysely<RunnerDB>, f: RunListFilter): RunQuery | null {
  const member = f.projectIds;
  if (member === null) return filtered(db, f, f.projectId);
  if (f.projectId) return member.includes(f.projectId) ? filtered(db, f, f.projectId) : null;
  if (member.length === 0) return null;
  if (member.length === 1) return filtered(db, f, member[0]);
  // A workflow, a schedule or who started the runs is a range of its own (a workflow and its
  // schedules live in one project): the member's projects only check each row read.
  if (f.workflowId || f.scheduleId || f.createdBy || member.length > MERGED_PROJECT_RANGES) return filtered(db, f, undefined).where('project_id', 'in', member);
  const [first, ...rest] = member.map((id, i) => db.selectFrom(filtered(db, f, id).as(`p${i}`)).selectAll());
  const merged = rest.reduce((u, q) => u.unionAll(q), first!);
  return db.selectFrom(merged.as('m')).selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(f.limit) as unknown as RunQuery;
}

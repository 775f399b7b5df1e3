import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import { openRunnerDatabase, type RunnerDatabase } from '../../src/runner/db/index.js';
import { type ScheduleListFilter, scheduleListQuery } from '../../src/runner/schedules/list-query.js';
import { dialects } from '../helpers/db.js';

/*
 * Each filter of the schedule list reads an index range in list order (created_at, id): the
 * equality filter is the index's search key, and nothing sorts the matches, so a page costs its
 * limit however many schedules there are. Read from the planners themselves; on PostgreSQL with
 * sequential scans and sorts priced out, so that only a missing index shows.
 */

const base: ScheduleListFilter = { projectIds: null, limit: 51 };
const CASES: { name: string; f: ScheduleListFilter; keys: string[] }[] = [
  { name: 'every schedule', f: base, keys: [] },
  { name: 'every schedule, a later page', f: { ...base, after: { createdAt: '2030-01-01T05:00:00.000Z', id: 's9' } }, keys: [] },
  { name: 'a project', f: { ...base, projectId: 'p1' }, keys: ['project_id'] },
  { name: 'a project, a later page', f: { ...base, projectId: 'p1', after: { createdAt: '2030-01-01T05:00:00.000Z', id: 's9' } }, keys: ['project_id'] },
  { name: 'a workflow', f: { ...base, workflowId: 'w1' }, keys: ['workflow_id'] },
  { name: "a member's one project", f: { ...base, projectIds: ['p1'] }, keys: ['project_id'] },
  { name: "a member's project of several", f: { ...base, projectIds: ['p1', 'p2'], projectId: 'p2' }, keys: ['project_id'] },
  { name: "a workflow of a member's projects", f: { ...base, projectIds: ['p1', 'p2'], workflowId: 'w1' }, keys: ['workflow_id'] },
];
const MERGED: ScheduleListFilter = { ...base, projectIds: ['p1', 'p2', 'p3'] };

interface PgNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Cond'?: string;
  Plans?: PgNode[];
}
const nodesOf = (n: PgNode): PgNode[] => [n, ...(n.Plans ?? []).flatMap(nodesOf)];

for (const target of dialects()) {
  describe(`the schedule list reads index ranges in list order (${target.name})`, () => {
    let handle: { url: string; drop(): Promise<void> };
    let database: RunnerDatabase;

    before(async () => {
      handle = await target.create();
      database = await openRunnerDatabase(handle.url);
      if (database.dialect === 'postgres') {
        // PostgreSQL plans by statistics: 20,000 schedules over 20 projects and 200 workflows
        // (parents left out: foreign keys are not checked in this session).
        await database.db.connection().execute(async (c) => {
          await sql`SET session_replication_role = replica`.execute(c);
          await sql`INSERT INTO schedules (id, project_id, workflow_id, name, cron, time_zone, enabled, parameters, required_labels, overlap, created_at, updated_at)
            SELECT 's' || i, 'p' || (i % 20), 'w' || (i % 200), '', '0 0 * 2 1#5', 'UTC', 1, '{}', '[]', 'skip',
                   to_char(timestamp '2030-01-01' + i * interval '1 minute', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '2030-01-01T00:00:00.000Z'
            FROM generate_series(1, 20000) AS i`.execute(c);
          await sql`SET session_replication_role = DEFAULT`.execute(c);
          await sql`ANALYZE schedules`.execute(c);
        });
      }
    });
    after(async () => {
      await database.close();
      await handle.drop();
    });

    /** The plan's lines (SQLite) or nodes (PostgreSQL) of one page's query. */
    async function plan(f: ScheduleListFilter): Promise<{ sqlite?: string[]; pg?: PgNode[] }> {
      const q = scheduleListQuery(database.db, f);
      assert.ok(q);
      const { sql: text, parameters } = q.compile();
      if (database.dialect === 'sqlite') {
        const explained = await database.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`EXPLAIN QUERY PLAN ${text}`, [...parameters]));
        return { sqlite: explained.rows.map((r) => r.detail) };
      }
      return database.db.connection().execute(async (c) => {
        for (const s of ['SET enable_seqscan = off', 'SET enable_sort = off', 'SET enable_bitmapscan = off']) await sql.raw(s).execute(c);
        const explained = await c.executeQuery<{ 'QUERY PLAN': [{ Plan: PgNode }] }>(CompiledQuery.raw(`EXPLAIN (FORMAT JSON) ${text}`, [...parameters]));
        for (const s of ['RESET enable_seqscan', 'RESET enable_sort', 'RESET enable_bitmapscan']) await sql.raw(s).execute(c);
        return { pg: nodesOf(explained.rows[0]!['QUERY PLAN'][0].Plan) };
      });
    }

    for (const { name, f, keys } of CASES) {
      test(`${name}: one index range, no sort`, async () => {
        const p = await plan(f);
        if (p.sqlite) {
          const all = p.sqlite.join(' | ');
          assert.doesNotMatch(all, /TEMP B-TREE/, all);
          const scans = p.sqlite.filter((d) => /\bschedules\b/.test(d));
          assert.equal(scans.length, 1, all);
          assert.match(scans[0]!, /^(SEARCH|SCAN) schedules USING (COVERING )?INDEX schedules_\w*list/, all);
          for (const k of keys) assert.match(scans[0]!, new RegExp(`\\(.*\\b${k}=\\?`), `${k} is not the index's search key: ${all}`);
        } else {
          const nodes = p.pg!;
          assert.ok(!nodes.some((n) => n['Node Type'] === 'Sort'), JSON.stringify(nodes.map((n) => n['Node Type'])));
          const scans = nodes.filter((n) => n['Relation Name'] === 'schedules');
          assert.equal(scans.length, 1);
          assert.match(scans[0]!['Node Type'], /^Index (Only )?Scan$/);
          for (const k of keys) assert.match(scans[0]!['Index Cond'] ?? '', new RegExp(`\\b${k} =`), `${k} is not the index's search key: ${JSON.stringify(scans[0])}`);
        }
      });
    }

    test("a member's several projects: one limited range per project", async () => {
      const p = await plan(MERGED);
      if (p.sqlite) {
        const scans = p.sqlite.filter((d) => /\bschedules\b/.test(d));
        assert.equal(scans.length, 3, p.sqlite.join(' | '));
        for (const s of scans) {
          assert.match(s, /^SEARCH schedules USING (COVERING )?INDEX .*\(project_id=\?/, s);
          assert.doesNotMatch(s, /TEMP B-TREE/);
        }
      } else {
        const scans = p.pg!.filter((n) => n['Relation Name'] === 'schedules');
        assert.equal(scans.length, 3);
        for (const s of scans) assert.match(s['Index Cond'] ?? '', /\bproject_id =/, JSON.stringify(s));
        const limits = p.pg!.filter((n) => n['Node Type'] === 'Limit');
        assert.ok(limits.length >= 4, 'each project range is limited');
      }
    });
  });
}

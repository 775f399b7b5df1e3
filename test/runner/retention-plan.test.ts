import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import { openRunnerDatabase, type RunnerDatabase } from '../../src/runner/db/index.js';
import { finishedBeforeQuery } from '../../src/runner/retention/repository.js';
import { dialects } from '../helpers/db.js';

/*
 * A retention pass runs on the serving loop's database connection: each batch must read only the
 * oldest finished runs, in order, up to the batch size. Reading every finished run by status and
 * sorting them (SQLite's first choice without a hint) held the loop 100 ms per pass at 200,000
 * runs. Read from the planners themselves.
 */

interface PgNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PgNode[];
}
const nodesOf = (n: PgNode): PgNode[] => [n, ...(n.Plans ?? []).flatMap(nodesOf)];

for (const target of dialects()) {
  describe(`a retention batch reads the oldest finished runs by index (${target.name})`, () => {
    let handle: { url: string; drop(): Promise<void> };
    let database: RunnerDatabase;

    before(async () => {
      handle = await target.create();
      database = await openRunnerDatabase(handle.url);
    });
    after(async () => {
      await database.close();
      await handle.drop();
    });

    test('the range of runs_finished, not every run of a status', async () => {
      const { sql: text, parameters } = finishedBeforeQuery(database.db, '2030-01-01T00:00:00.000Z', 500).compile();
      if (database.dialect === 'sqlite') {
        const explained = await database.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`EXPLAIN QUERY PLAN ${text}`, [...parameters]));
        const all = explained.rows.map((r) => r.detail).join(' | ');
        assert.match(all, /SEARCH runs USING (COVERING )?INDEX runs_finished \(finished_at<\?\)/, all);
        // Only ties of finished_at are put in order, not every match.
        assert.doesNotMatch(all, /USE TEMP B-TREE FOR ORDER BY/, all);
        return;
      }
      const nodes = await database.db.connection().execute(async (c) => {
        await sql`SET enable_seqscan = off`.execute(c);
        try {
          const explained = await c.executeQuery<{ 'QUERY PLAN': [{ Plan: PgNode }] }>(CompiledQuery.raw(`EXPLAIN (FORMAT JSON) ${text}`, [...parameters]));
          return nodesOf(explained.rows[0]!['QUERY PLAN'][0].Plan);
        } finally {
          await sql`RESET enable_seqscan`.execute(c);
        }
      });
      // PostgreSQL may read the range as an index or a bitmap scan: either way, of runs_finished.
      const indexes = nodes.flatMap((n) => (n['Index Name'] ? [n['Index Name']] : []));
      assert.deepEqual(indexes, ['runs_finished'], JSON.stringify(nodes));
    });
  });
}

import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { openRunnerDatabase } from '../../src/runner/db/index.js';
import { dialects, tempDir } from '../helpers/db.js';
import { exited, protocolFixture, startExecutor } from './executor-fixtures.js';
import { API_KEY, apiKey, startRunner, TestClock, type TestRunner } from './helpers.js';

/** Runs queued for the executors; EXECUTOR_E2E_RUNS lowers it while debugging. */
const RUNS = Number(process.env.EXECUTOR_E2E_RUNS ?? 2000);
const EXECUTORS = 8;
const LINES = 5;
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
/** The wall clock: leases and heartbeats of real processes run on real time. */
const realClock = Object.assign(new TestClock(), { now: () => new Date(), advance: () => {} });

/** The command: prints numbered lines and writes one output file. */
const COMMAND = `i=1; while [ $i -le ${LINES} ]; do echo "line $i of $PIER_RUN_ID"; i=$((i+1)); done; printf 'n=%s' {param.n} > {out}/result.txt`;

for (const target of dialects()) {
  describe(`${EXECUTORS} pier runner executor processes against ${RUNS} queued runs (${target.name})`, () => {
    test('every run is executed exactly once and succeeds, with its complete log and its output', { timeout: 15 * 60_000 }, async () => {
      const dbh = await target.create();
      const storageDir = tempDir('pier-runner-storage-');
      const env = { RUNNER_STORAGE_DIR: storageDir };
      // PostgreSQL: two runner instances share the database; half the executors use each.
      const instances: TestRunner[] = [await startRunner({ databaseUrl: dbh.url, clock: realClock, env })];
      if (target.name === 'postgres') instances.push(await startRunner({ databaseUrl: dbh.url, clock: realClock, env }));
      const urls = await Promise.all(instances.map((r) => r.service.app.listen({ host: '127.0.0.1', port: 0 })));
      const work = tempDir('pier-executors-');
      const executors: (ChildProcess & { output: string[] })[] = [];
      const database = await openRunnerDatabase(dbh.url);
      try {
        const f = await protocolFixture(instances[0]!);
        const ids: string[] = [];
        for (let i = 0; i < RUNS; i++) ids.push((await f.start({ parameters: { n: i } })).id);
        for (let i = 0; i < EXECUTORS; i++) {
          executors.push(startExecutor(urls[i % urls.length]!, `ex-${i}`, path.join(work, `ex-${i}`), COMMAND, ['--capacity', '4']));
        }
        // Wait for the queue to empty (bounded: the test's own timeout).
        for (;;) {
          const left = await database.db
            .selectFrom('runs')
            .where('status', 'not in', ['succeeded', 'failed', 'cancelled'])
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow();
          if (Number(left.n) === 0) break;
          const dead = executors.find((e) => e.exitCode !== null);
          assert.equal(dead, undefined, `an executor exited: ${dead?.output.join('')}`);
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
        for (const e of executors) e.kill('SIGTERM');
        assert.deepEqual(await Promise.all(executors.map(exited)), executors.map(() => 0));

        const rows = await database.db.selectFrom('runs').select(['id', 'status', 'attempt', 'parameters', 'executor_id']).execute();
        assert.equal(rows.length, RUNS);
        for (const row of rows) {
          assert.equal(row.status, 'succeeded', row.id);
          assert.equal(row.attempt, 1, `${row.id} was taken more than once`);
        }
        assert.ok(new Set(rows.map((r) => r.executor_id)).size > 1, 'the work was shared');
        const logs = await database.db.selectFrom('run_logs').select(['run_id', 'attempt', 'seq', 'text']).orderBy('run_id').orderBy('attempt').orderBy('seq').execute();
        const byRun = new Map<string, string>();
        for (const l of logs) byRun.set(l.run_id, (byRun.get(l.run_id) ?? '') + l.text);
        const key = apiKey(API_KEY);
        for (const [i, id] of ids.entries()) {
          const expected = Array.from({ length: LINES }, (_, k) => `line ${k + 1} of ${id}\n`).join('');
          assert.equal(byRun.get(id), expected, `log of run ${id}`);
          const via = instances[i % instances.length]!.service.app;
          const dl = await via.inject({ method: 'GET', url: `/api/runs/${id}/outputs/result.txt`, headers: key });
          assert.equal(dl.statusCode, 200, dl.body);
          assert.equal(dl.body, `n=${i}`);
          assert.equal(dl.headers['x-content-sha256'], sha(`n=${i}`));
        }
      } finally {
        for (const e of executors) if (e.exitCode === null) e.kill('SIGKILL');
        await database.close();
        for (const r of instances) await r.close();
        await dbh.drop();
        fs.rmSync(storageDir, { recursive: true, force: true });
        fs.rmSync(work, { recursive: true, force: true });
      }
    });
  });
}

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { randomUUID } from '../../src/infra/secrets.js';
import { openRunnerDatabase, type RunnerDatabase } from '../../src/runner/db/index.js';
import { RetentionRepository } from '../../src/runner/retention/repository.js';
import { RunRetention } from '../../src/runner/retention/service.js';
import { LocalRunOutputStorage } from '../../src/runner/runs/output-storage.js';
import { RunsRepository } from '../../src/runner/runs/repository.js';
import type { RunRow } from '../../src/runner/runs/run-rows.js';
import { dialects } from '../helpers/db.js';
import { bearer, makeZip, multipart, startRunner, TestClock, type TestRunner, SETUP_TOKEN } from './helpers.js';

const DAY = 86_400_000;
const NOW = Date.parse('2030-06-01T12:00:00Z');
const ago = (days: number) => new Date(NOW - days * DAY).toISOString();

/**
 * RUNNER_RETENTION_DAYS on SQLite and PostgreSQL with an injected clock: finished runs older than
 * the period go with their logs, output rows and output files; queued, running and recent runs stay.
 */
for (const target of dialects()) {
  describe(`retention (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let database: RunnerDatabase;
    let runs: RunsRepository;
    let outputs: LocalRunOutputStorage;
    let session: string;
    let projectId: string;
    let workflowId: string;

    before(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url, clock: new TestClock(NOW), backgroundLoops: false, env: { RUNNER_RETENTION_DAYS: '30' } });
      database = await openRunnerDatabase(dbh.url);
      runs = new RunsRepository(database.db, database.dialect);
      outputs = new LocalRunOutputStorage(r.config.runner.storageDir);
      const app = r.service.app;
      session = (await app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'admin@example.com', password: 'a long enough password' } })).json()
        .session.token;
      projectId = (await app.inject({ method: 'POST', url: '/api/projects', headers: bearer(session), payload: { name: 'p' } })).json().id;
      const m = multipart([{ name: 'file', file: makeZip() }]);
      workflowId = (await app.inject({ method: 'POST', url: `/api/projects/${projectId}/workflows`, headers: { ...bearer(session), ...m.headers }, payload: m.payload })).json()
        .id;
    });
    after(async () => {
      await database.close();
      await r.close();
      await dbh.drop();
    });

    /** A run with two log chunks, one output row and its output file. */
    async function makeRun(status: RunRow['status'], createdDaysAgo: number, finishedDaysAgo: number | null): Promise<string> {
      const id = randomUUID();
      await runs.create({
        id, project_id: projectId, workflow_id: workflowId, workflow_version: 1, status, parameters: '{}', required_labels: '[]', schedule_id: null,
        created_by: null, created_at: ago(createdDaysAgo), started_at: null, finished_at: finishedDaysAgo === null ? null : ago(finishedDaysAgo),
        attempt: 1, executor_id: null, lease_hash: null, lease_expires_at: null, exit_code: null, error: null,
      });
      await database.db
        .insertInto('run_logs')
        .values([1, 2].map((seq) => ({ run_id: id, attempt: 1, seq, text: `line ${seq}`, created_at: ago(createdDaysAgo) })))
        .execute();
      const stored = await outputs.save(id, 1, 'result.csv', Readable.from([Buffer.from(`run ${id}\n`)]), 1e6);
      await database.db
        .insertInto('run_outputs')
        .values({ run_id: id, name: 'result.csv', size: stored.size, sha256: stored.sha256, content_type: 'text/csv', created_at: ago(createdDaysAgo) })
        .execute();
      return id;
    }

    const fileOf = (id: string) => path.join(outputs.root, id, '1', 'result.csv');
    async function rowsOf(id: string) {
      const logs = await database.db.selectFrom('run_logs').select('seq').where('run_id', '=', id).execute();
      const outs = await database.db.selectFrom('run_outputs').select('name').where('run_id', '=', id).execute();
      return { run: (await runs.findById(id)) !== undefined, logs: logs.length, outputs: outs.length, file: fs.existsSync(fileOf(id)) };
    }

    test('finished runs past the period go with logs, outputs and files; queued, running and recent ones stay', async () => {
      const doomed = [await makeRun('succeeded', 45, 44), await makeRun('failed', 40, 31), await makeRun('cancelled', 90, 90)];
      const kept = [
        await makeRun('succeeded', 40, 29), // finished within the period, though created long ago
        await makeRun('running', 60, null),
        await makeRun('queued', 60, null),
        // Requeued after a lost executor with a stale finish time: the status alone keeps it.
        await makeRun('queued', 60, 50),
        await makeRun('running', 60, 50),
      ];
      const gone = { run: false, logs: 0, outputs: 0, file: false };
      const whole = { run: true, logs: 2, outputs: 1, file: true };
      for (const id of [...doomed, ...kept]) assert.deepEqual(await rowsOf(id), whole);

      assert.equal(await r.service.retention.prune(r.clock.now()), 3);
      for (const id of doomed) assert.deepEqual(await rowsOf(id), gone, id);
      for (const id of kept) assert.deepEqual(await rowsOf(id), whole, id);
      const res = await r.service.app.inject({ method: 'GET', url: `/api/runs/${doomed[0]}`, headers: bearer(session) });
      assert.equal(res.statusCode, 404);
      assert.equal((await r.service.app.inject({ method: 'GET', url: `/api/runs/${kept[0]}`, headers: bearer(session) })).statusCode, 200);
      assert.equal(await r.service.retention.prune(r.clock.now()), 0, 'a second pass finds nothing');

      // Two days later the recent run has passed the period too.
      assert.equal(await r.service.retention.prune(new Date(NOW + 2 * DAY)), 1);
      assert.deepEqual(await rowsOf(kept[0]!), gone);
      for (const id of kept.slice(1)) assert.deepEqual(await rowsOf(id), whole, id);
    });

    test('small batches: every batch is its own transaction, all old runs go; a stop between batches is honoured', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) ids.push(await makeRun('succeeded', 100, 100 - i));
      const repository = new RetentionRepository(database.db);
      // One log chunk per statement: a run's chunks take several statements, all done before its row goes.
      const retention = new RunRetention({ repository, outputs, days: 30, batchSize: 3, pauseMs: 0, logChunk: 1 });
      // Stop after the first batch's files are removed: that batch completes, no further one starts.
      const stop = new AbortController();
      let removed = 0;
      const stopping = Object.assign(Object.create(outputs) as LocalRunOutputStorage, {
        removeRun: async (id: string) => {
          await outputs.removeRun(id);
          if (++removed === 3) stop.abort();
        },
      });
      const stoppable = new RunRetention({ repository, outputs: stopping, days: 30, batchSize: 3, pauseMs: 0 });
      assert.equal(await stoppable.prune(new Date(NOW), stop.signal), 3);
      // Oldest first (finished 100, 99, 98 days ago).
      assert.deepEqual((await Promise.all(ids.map(async (id) => (await rowsOf(id)).run))), [false, false, false, true, true, true, true]);
      assert.equal(await retention.prune(new Date(NOW)), 4);
      for (const id of ids) assert.deepEqual(await rowsOf(id), { run: false, logs: 0, outputs: 0, file: false });
    });

    test('log chunks go a bounded number per statement, and only of runs that qualify', async () => {
      const old = await makeRun('failed', 50, 50);
      const active = await makeRun('running', 50, 50);
      const repository = new RetentionRepository(database.db);
      const cutoff = ago(30);
      assert.equal(await repository.deleteLogChunk([old, active], cutoff, 1), 1);
      assert.equal((await rowsOf(old)).logs, 1);
      assert.equal(await repository.deleteLogChunk([old, active], cutoff, 5), 1);
      assert.equal(await repository.deleteLogChunk([old, active], cutoff, 5), 0);
      assert.deepEqual(await rowsOf(active), { run: true, logs: 2, outputs: 1, file: true });
      assert.equal(await repository.deleteRuns([old, active], cutoff), 1);
      await database.db.deleteFrom('runs').where('id', '=', active).execute();
    });

    test('RUNNER_RETENTION_DAYS=0 keeps every run', async () => {
      const id = await makeRun('succeeded', 5000, 5000);
      const keepAll = new RunRetention({ repository: new RetentionRepository(database.db), outputs, days: 0 });
      assert.equal(keepAll.enabled, false);
      assert.equal(await keepAll.prune(new Date(NOW)), 0);
      assert.deepEqual(await rowsOf(id), { run: true, logs: 2, outputs: 1, file: true });
      await r.service.retention.prune(new Date(NOW));
      assert.equal((await rowsOf(id)).run, false, 'control: the configured 30 days do prune it');
    });
  });
}

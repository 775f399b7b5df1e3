import assert from 'node:assert/strict';
import type { InjectOptions } from 'fastify';
import { type Kysely, sql } from 'kysely';
import { after, afterEach, before, describe, test } from 'node:test';
import { randomUUID } from '../../src/infra/secrets.js';
import { openRunnerDatabase } from '../../src/runner/db/index.js';
import type { RunnerDB } from '../../src/runner/db/schema.js';
import { SchedulesRepository } from '../../src/runner/schedules/repository.js';
import { dialects } from '../helpers/db.js';
import { bearer, makeZip, multipart, startRunner, TestClock, type TestRunner, SETUP_TOKEN } from './helpers.js';

const PASSWORD = 'a long enough password';

/** A failure injected at the database: a trigger that aborts every insert of a run of `scheduleId`. */
async function refuseRunsOf(db: Kysely<RunnerDB>, dialect: 'sqlite' | 'postgres', scheduleId: string): Promise<void> {
  const id = sql.lit(scheduleId);
  if (dialect === 'sqlite') {
    await sql`CREATE TRIGGER refuse_runs BEFORE INSERT ON runs WHEN NEW.schedule_id = ${id} BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`.execute(db);
    return;
  }
  await sql`CREATE FUNCTION refuse_runs() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$`.execute(db);
  await sql`CREATE TRIGGER refuse_runs BEFORE INSERT ON runs FOR EACH ROW WHEN (NEW.schedule_id = ${id}) EXECUTE FUNCTION refuse_runs()`.execute(db);
}

async function allowRuns(db: Kysely<RunnerDB>, dialect: 'sqlite' | 'postgres'): Promise<void> {
  if (dialect === 'sqlite') {
    await sql`DROP TRIGGER IF EXISTS refuse_runs`.execute(db);
    return;
  }
  await sql`DROP TRIGGER IF EXISTS refuse_runs ON runs`.execute(db);
  await sql`DROP FUNCTION IF EXISTS refuse_runs()`.execute(db);
}
const MINUTE = 60_000;

interface RunJson {
  id: string;
  status: string;
  scheduleId: string | null;
  workflowVersion: number;
  parameters: Record<string, unknown>;
  requiredLabels: string[];
  createdAt: string;
}

/**
 * Schedules over HTTP and the scheduler driven with an injected clock (`tick(now)`), on SQLite
 * and PostgreSQL: fire times, once per tick, overlap, missed ticks after a restart, DST, and two
 * runner instances on one database.
 */
for (const target of dialects()) {
  describe(`schedules (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let session: string;
    let projectId: string;
    let clock: TestClock;
    const inject = (o: InjectOptions, runner = r) => runner.service.app.inject({ ...o, headers: { authorization: `ApiKey ${session}`, ...o.headers } });

    async function newWorkflow(): Promise<string> {
      const m = multipart([{ name: 'file', file: makeZip() }]);
      const res = await inject({ method: 'POST', url: `/api/projects/${projectId}/workflows`, headers: m.headers, payload: m.payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json().id;
    }

    async function addVersion(workflowId: string): Promise<void> {
      const m = multipart([{ name: 'file', file: makeZip('workflow/workflow.knime', '<v2/>') }]);
      const res = await inject({ method: 'POST', url: `/api/workflows/${workflowId}/versions`, headers: m.headers, payload: m.payload });
      assert.equal(res.statusCode, 201, res.body);
    }

    /** Schedules of the current test; removed after it, so ticks of later tests see only their own. */
    let made: string[] = [];
    async function createSchedule(workflowId: string, body: Record<string, unknown>) {
      const res = await inject({ method: 'POST', url: `/api/workflows/${workflowId}/schedules`, payload: body });
      assert.equal(res.statusCode, 201, res.body);
      made.push(res.json().id);
      return res.json();
    }
    afterEach(async () => {
      for (const id of made) await inject({ method: 'DELETE', url: `/api/schedules/${id}` });
      made = [];
    });

    async function runsOf(workflowId: string): Promise<RunJson[]> {
      const res = await inject({ method: 'GET', url: `/api/runs?workflow=${workflowId}&limit=100` });
      assert.equal(res.statusCode, 200, res.body);
      return (res.json().items as RunJson[]).reverse();
    }

    /** Sets the clock and ticks once, as the loop would at that instant. */
    async function tickAt(iso: string | number, runner = r) {
      clock.t = typeof iso === 'number' ? iso : Date.parse(iso);
      return runner.service.scheduler.tick(clock.now());
    }

    before(async () => {
      dbh = await target.create();
      clock = new TestClock(Date.parse('2030-01-01T00:00:00Z'));
      r = await startRunner({ databaseUrl: dbh.url, clock, backgroundLoops: false });
      const jwt = (await r.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'admin@example.com', password: PASSWORD } })).json()
        .session.token;
      // A personal token does not expire with the clock moving months (a web session lasts 7 days).
      const pat = await r.service.app.inject({ method: 'POST', url: '/api/tokens', headers: bearer(jwt), payload: { name: 'tests', scope: 'write' } });
      session = pat.json().token;
      projectId = (await inject({ method: 'POST', url: '/api/projects', payload: { name: 'p' } })).json().id;
    });
    after(async () => {
      await r.close();
      await dbh.drop();
    });

    test('create, read, list, change, delete; next five fire times in every answer of one schedule, the next in lists', async () => {
      clock.t = Date.parse('2030-01-01T00:00:00Z');
      const wf = await newWorkflow();
      const created = await createSchedule(wf, { cron: '0 9 * * MON-FRI', timeZone: 'Europe/Berlin', parameters: { rows: 10 }, requiredLabels: ['linux'] });
      assert.equal(created.workflowId, wf);
      assert.equal(created.projectId, projectId);
      assert.equal(created.enabled, true);
      assert.equal(created.overlap, 'skip');
      assert.equal(created.workflowVersion, null);
      assert.deepEqual(created.parameters, { rows: 10 });
      assert.deepEqual(created.requiredLabels, ['linux']);
      assert.equal(created.lastFireAt, null);
      // 1 January 2030 is a Tuesday; 09:00 CET = 08:00 UTC.
      assert.deepEqual(created.nextFireTimes, [
        '2030-01-01T08:00:00.000Z',
        '2030-01-02T08:00:00.000Z',
        '2030-01-03T08:00:00.000Z',
        '2030-01-04T08:00:00.000Z',
        '2030-01-07T08:00:00.000Z',
      ]);
      const got = await inject({ method: 'GET', url: `/api/schedules/${created.id}` });
      assert.deepEqual(got.json(), created);
      const list = await inject({ method: 'GET', url: `/api/workflows/${wf}/schedules` });
      assert.deepEqual(list.json().items, [{ ...created, nextFireTimes: created.nextFireTimes.slice(0, 1) }]);

      const disabled = await inject({ method: 'PATCH', url: `/api/schedules/${created.id}`, payload: { enabled: false, name: 'weekday mornings' } });
      assert.equal(disabled.statusCode, 200, disabled.body);
      assert.equal(disabled.json().name, 'weekday mornings');
      assert.deepEqual(disabled.json().nextFireTimes, []);
      assert.equal(disabled.json().cron, '0 9 * * MON-FRI', 'fields not sent are kept');
      const moved = await inject({ method: 'PATCH', url: `/api/schedules/${created.id}`, payload: { enabled: true, cron: '0 6 * * *', timeZone: 'UTC' } });
      assert.equal(moved.json().nextFireTimes[0], '2030-01-01T06:00:00.000Z');
      assert.equal(moved.json().nextFireTimes.length, 5);

      assert.equal((await inject({ method: 'DELETE', url: `/api/schedules/${created.id}` })).statusCode, 204);
      assert.equal((await inject({ method: 'GET', url: `/api/schedules/${created.id}` })).statusCode, 404);
      assert.equal((await inject({ method: 'DELETE', url: `/api/schedules/${created.id}` })).statusCode, 404);
    });

    test('bad input: 400 naming the field, nothing stored', async () => {
      const wf = await newWorkflow();
      const cases: [Record<string, unknown>, string][] = [
        [{ cron: '61 * * * *' }, 'cron'],
        [{ cron: '* * * * * *' }, 'cron'],
        [{ cron: '0 0 30 2 *' }, 'cron'],
        [{ cron: '0 0 31 2,4,6,9,11 *' }, 'cron'],
        [{ cron: '0 0 30,31 2 *' }, 'cron'],
        [{ cron: 'every day' }, 'cron'],
        [{ cron: '0 * * * *', timeZone: 'Mars/Olympus' }, 'timeZone'],
        [{ cron: '0 * * * *', timeZone: '+02:00' }, 'timeZone'],
        [{ cron: '0 * * * *', workflowVersion: 2 }, 'workflowVersion'],
        [{ cron: '0 * * * *', workflowVersion: 3e9 }, 'workflowVersion'],
        [{ cron: '0 * * * *', overlap: 'sometimes' }, 'overlap'],
        [{ cron: '0 * * * *', requiredLabels: ['bad label'] }, 'requiredLabels'],
        [{ cron: 'x'.repeat(201) }, 'cron'],
        [{ cron: '0 * * * *', timeZone: 'x'.repeat(65) }, 'timeZone'],
        [{ cron: '0 * * * *', name: 'two\nlines' }, 'name'],
        [{ cron: '0 * * * *', name: 'n'.repeat(201) }, 'name'],
      ];
      for (const [payload, field] of cases) {
        const res = await inject({ method: 'POST', url: `/api/workflows/${wf}/schedules`, payload });
        assert.equal(res.statusCode, 400, `${JSON.stringify(payload)}: ${res.body}`);
        assert.equal(res.json().code, 'invalid_field');
        const fields = (res.json().errors as { field: string }[]).map((e) => e.field);
        assert.ok(fields.some((f) => f === field || f.startsWith(`${field}.`)), `${JSON.stringify(payload)} names ${field}: ${res.body}`);
      }
      const s = await createSchedule(wf, { cron: '0 * * * *' });
      const bad = await inject({ method: 'PATCH', url: `/api/schedules/${s.id}`, payload: { timeZone: 'Nowhere/Else' } });
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.json().errors[0].field, 'timeZone');
      assert.equal((await inject({ method: 'PATCH', url: `/api/schedules/${s.id}`, payload: {} })).statusCode, 400);
      assert.equal((await inject({ method: 'PATCH', url: `/api/schedules/${s.id}`, payload: { cron: '0 * * * *', projectId: 'x' } })).statusCode, 400);
      assert.equal((await inject({ method: 'PATCH', url: `/api/schedules/${s.id}`, payload: { workflowVersion: 7 } })).json().errors[0].field, 'workflowVersion');
      assert.equal((await inject({ method: 'POST', url: `/api/workflows/${wf}/schedules`, payload: { cron: '0 * * * *', nextFireAt: 'now' } })).statusCode, 400);
      assert.deepEqual((await inject({ method: 'GET', url: `/api/schedules/${s.id}` })).json(), s, 'unchanged');
      assert.equal((await inject({ method: 'GET', url: `/api/workflows/${wf}/schedules` })).json().items.length, 1);
    });

    test('fires exactly once per due time, records its schedule and the resolved version', async () => {
      clock.t = Date.parse('2030-02-01T00:00:00Z');
      const wf = await newWorkflow();
      const s = await createSchedule(wf, { cron: '*/5 * * * *', overlap: 'queue', parameters: { n: 1 }, requiredLabels: ['gpu'] });
      assert.deepEqual((await tickAt('2030-02-01T00:04:59.999Z')).queued, []);
      const first = await tickAt('2030-02-01T00:05:00.000Z');
      assert.equal(first.queued.length, 1);
      assert.deepEqual((await tickAt('2030-02-01T00:05:00.500Z')).queued, [], 'the same due time never fires twice');
      assert.deepEqual((await tickAt('2030-02-01T00:09:59.000Z')).queued, []);
      await addVersion(wf);
      assert.equal((await tickAt('2030-02-01T00:10:00.300Z')).queued.length, 1);
      const runs = await runsOf(wf);
      assert.deepEqual(
        runs.map((x) => [x.scheduleId, x.workflowVersion, x.status, x.createdAt]),
        [
          [s.id, 1, 'queued', '2030-02-01T00:05:00.000Z'],
          [s.id, 2, 'queued', '2030-02-01T00:10:00.300Z'],
        ],
        'latest version at fire time',
      );
      assert.deepEqual(runs[0]!.parameters, { n: 1 });
      assert.deepEqual(runs[0]!.requiredLabels, ['gpu']);
      const after = (await inject({ method: 'GET', url: `/api/schedules/${s.id}` })).json();
      assert.equal(after.lastFireAt, '2030-02-01T00:10:00.300Z');
      assert.equal(after.lastOutcome, 'queued');
      assert.equal(after.lastRunId, runs[1]!.id);
      assert.equal(after.nextFireTimes[0], '2030-02-01T00:15:00.000Z');
    });

    test('a pinned version is what runs, whatever is uploaded later', async () => {
      clock.t = Date.parse('2030-03-01T00:00:00Z');
      const wf = await newWorkflow();
      await addVersion(wf);
      await createSchedule(wf, { cron: '0 * * * *', workflowVersion: 1 });
      await addVersion(wf);
      await tickAt('2030-03-01T01:00:00Z');
      assert.deepEqual((await runsOf(wf)).map((x) => x.workflowVersion), [1]);
    });

    test('overlap skip: no new run while the previous one is queued or running; queue: one per fire', async () => {
      clock.t = Date.parse('2030-04-01T00:00:00Z');
      const skipWf = await newWorkflow();
      const queueWf = await newWorkflow();
      const skip = await createSchedule(skipWf, { cron: '* * * * *', overlap: 'skip' });
      await createSchedule(queueWf, { cron: '* * * * *', overlap: 'queue' });
      const start = Date.parse('2030-04-01T00:01:00Z');
      await tickAt(start);
      await tickAt(start + MINUTE);
      await tickAt(start + 2 * MINUTE);
      assert.equal((await runsOf(skipWf)).length, 1);
      assert.equal((await runsOf(queueWf)).length, 3);
      const skipped = (await inject({ method: 'GET', url: `/api/schedules/${skip.id}` })).json();
      assert.equal(skipped.lastOutcome, 'skipped');
      assert.equal(skipped.lastRunId, null);
      // Once the previous run has ended, the next fire queues again.
      const [only] = await runsOf(skipWf);
      assert.equal((await inject({ method: 'POST', url: `/api/runs/${only!.id}/cancel` })).statusCode, 200);
      await tickAt(start + 3 * MINUTE);
      assert.deepEqual((await runsOf(skipWf)).map((x) => x.status), ['cancelled', 'queued']);
    });

    test('a disabled schedule never fires; enabling it does not catch up', async () => {
      clock.t = Date.parse('2030-05-01T00:00:00Z');
      const wf = await newWorkflow();
      const s = await createSchedule(wf, { cron: '* * * * *', enabled: false });
      await tickAt('2030-05-01T00:30:00Z');
      assert.equal((await runsOf(wf)).length, 0);
      const on = await inject({ method: 'PATCH', url: `/api/schedules/${s.id}`, payload: { enabled: true } });
      assert.equal(on.json().nextFireTimes[0], '2030-05-01T00:31:00.000Z');
      await tickAt('2030-05-01T00:30:30Z');
      assert.equal((await runsOf(wf)).length, 0);
      await tickAt('2030-05-01T00:31:00Z');
      assert.equal((await runsOf(wf)).length, 1);
    });

    test('after a restart with missed ticks: one run, not one per missed tick', async () => {
      clock.t = Date.parse('2030-06-01T00:00:00Z');
      const wf = await newWorkflow();
      const s = await createSchedule(wf, { cron: '* * * * *', overlap: 'queue' });
      await tickAt('2030-06-01T00:01:00Z');
      await r.close();
      // Down for three hours (180 missed minutes); a new process on the same database.
      clock.t = Date.parse('2030-06-01T03:00:30Z');
      r = await startRunner({ databaseUrl: dbh.url, clock, backgroundLoops: false });
      assert.equal((await tickAt('2030-06-01T03:00:30Z')).queued.length, 1);
      assert.equal((await tickAt('2030-06-01T03:00:45Z')).queued.length, 0);
      assert.equal((await runsOf(wf)).length, 2);
      const after = (await inject({ method: 'GET', url: `/api/schedules/${s.id}` })).json();
      assert.equal(after.nextFireTimes[0], '2030-06-01T03:01:00.000Z');
    });

    for (const [name, from, to, expected] of [
      ['spring forward', '2026-03-27T12:00:00Z', '2026-03-31T12:00:00Z', ['2026-03-28T01:30:00.000Z', '2026-03-29T01:30:00.000Z', '2026-03-30T00:30:00.000Z', '2026-03-31T00:30:00.000Z']],
      ['fall back', '2026-10-23T12:00:00Z', '2026-10-27T12:00:00Z', ['2026-10-24T00:30:00.000Z', '2026-10-25T01:30:00.000Z', '2026-10-26T01:30:00.000Z', '2026-10-27T01:30:00.000Z']],
    ] as const) {
      test(`DST ${name} in Europe/Berlin: \`30 2 * * *\` fires once a day, ticking every 10 minutes`, async () => {
        clock.t = Date.parse(from);
        const wf = await newWorkflow();
        await createSchedule(wf, { cron: '30 2 * * *', timeZone: 'Europe/Berlin', overlap: 'queue' });
        for (let t = Date.parse(from); t <= Date.parse(to); t += 10 * MINUTE) await tickAt(t);
        assert.deepEqual((await runsOf(wf)).map((x) => x.createdAt), expected);
      });
    }

    test('two runner instances on one database, ticking at the same instants: each fire queues one run', async () => {
      clock.t = Date.parse('2030-07-01T00:00:00Z');
      const second = await startRunner({ databaseUrl: dbh.url, clock, backgroundLoops: false });
      try {
        const workflows: string[] = [];
        for (let i = 0; i < 4; i++) {
          const wf = await newWorkflow();
          workflows.push(wf);
          await createSchedule(wf, { cron: '* * * * *', overlap: 'queue' });
        }
        const start = Date.parse('2030-07-01T00:01:00Z');
        const TICKS = 10;
        for (let i = 0; i < TICKS; i++) {
          clock.t = start + i * MINUTE;
          // Both at once, on SQLite too: a connection waiting for the other's write lock waits on
          // timers (infra/database/sqlite-driver.ts), so the holder's transaction goes on and commits.
          const results = await Promise.all([r.service.scheduler.tick(clock.now()), second.service.scheduler.tick(clock.now())] as const);
          assert.equal(results[0].queued.length + results[1].queued.length, 4, `tick ${i}: ${JSON.stringify(results)}`);
        }
        for (const wf of workflows) {
          const runs = await runsOf(wf);
          assert.equal(runs.length, TICKS);
          assert.equal(new Set(runs.map((x) => x.createdAt)).size, TICKS, 'one run per due minute');
        }
      } finally {
        await second.close();
      }
    });

    test('a fire whose run cannot be stored is not lost: nothing of it is written, and the next pass fires it once', async () => {
      clock.t = Date.parse('2030-10-01T00:00:00Z');
      const wf = await newWorkflow();
      const s = await createSchedule(wf, { cron: '*/5 * * * *', overlap: 'queue' });
      const schedule = async () => (await inject({ method: 'GET', url: `/api/schedules/${s.id}` })).json();
      const database = await openRunnerDatabase(dbh.url);
      try {
        // The database refuses this schedule's runs inside the scheduler's transaction, as a full
        // disk or a dropped connection would between taking the fire and inserting its run.
        await refuseRunsOf(database.db, target.name, s.id);
        assert.deepEqual((await tickAt('2030-10-01T00:05:00Z')).queued, []);
        let now = await schedule();
        assert.equal(now.nextFireTimes[0], '2030-10-01T00:05:00.000Z', 'the fire is still due');
        assert.equal(now.lastOutcome, 'failed');
        assert.equal(now.lastFireAt, '2030-10-01T00:05:00.000Z');
        assert.equal(now.lastRunId, null);
        assert.deepEqual((await tickAt('2030-10-01T00:05:01Z')).queued, [], 'still refused');
        assert.equal((await runsOf(wf)).length, 0);

        await allowRuns(database.db, target.name);
        const retried = await tickAt('2030-10-01T00:05:02Z');
        assert.equal(retried.queued.length, 1);
        assert.deepEqual((await tickAt('2030-10-01T00:05:03Z')).queued, [], 'the retried fire is taken once');
        const runs = await runsOf(wf);
        assert.deepEqual(
          runs.map((x) => [x.id, x.scheduleId, x.createdAt]),
          [[retried.queued[0], s.id, '2030-10-01T00:05:02.000Z']],
        );
        now = await schedule();
        assert.equal(now.nextFireTimes[0], '2030-10-01T00:10:00.000Z');
        assert.equal(now.lastOutcome, 'queued');
        assert.equal(now.lastRunId, runs[0]!.id);
      } finally {
        await allowRuns(database.db, target.name);
        await database.close();
      }
    });

    test('a stored schedule that can no longer be read stops with lastOutcome failed; the others still fire', async () => {
      clock.t = Date.parse('2030-09-01T00:00:00Z');
      const wf = await newWorkflow();
      const good = await createSchedule(wf, { cron: '* * * * *', overlap: 'queue' });
      const database = await openRunnerDatabase(dbh.url);
      const badId = randomUUID();
      try {
        // As if the platform's time-zone data had dropped the zone after the schedule was stored.
        const now = clock.now().toISOString();
        await new SchedulesRepository(database.db).create({
          id: badId, project_id: projectId, workflow_id: wf, name: '', cron: '* * * * *', time_zone: 'Gone/Zone', enabled: 1, parameters: '{}',
          required_labels: '[]', workflow_version: null, overlap: 'queue', next_fire_at: '2030-09-01T00:01:00.000Z', last_fire_at: null,
          last_outcome: null, last_run_id: null, created_by: null, created_at: now, updated_at: now,
        });
        made.push(badId);
      } finally {
        await database.close();
      }
      const result = await tickAt('2030-09-01T00:01:00Z');
      assert.equal(result.queued.length, 1);
      assert.deepEqual((await runsOf(wf)).map((x) => x.scheduleId), [good.id]);
      const bad = (await inject({ method: 'GET', url: `/api/schedules/${badId}` })).json();
      assert.equal(bad.lastOutcome, 'failed');
      assert.deepEqual(bad.nextFireTimes, []);
      assert.equal((await tickAt('2030-09-01T00:02:00Z')).queued.length, 1);
    });

    test('deleting the workflow deletes its schedules', async () => {
      clock.t = Date.parse('2030-08-01T00:00:00Z');
      const wf = await newWorkflow();
      const s = await createSchedule(wf, { cron: '* * * * *' });
      assert.equal((await inject({ method: 'DELETE', url: `/api/workflows/${wf}` })).statusCode, 204);
      assert.equal((await inject({ method: 'GET', url: `/api/schedules/${s.id}` })).statusCode, 404);
      assert.deepEqual((await tickAt('2030-08-01T00:05:00Z')).queued, []);
    });
  });
}

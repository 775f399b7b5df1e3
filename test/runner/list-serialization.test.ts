/**
 * The run and schedule list pages are written with plain JSON.stringify (less garbage than the
 * schema's compiled serializer, schemas.ts `plainJson`): whatever a row holds, a page must be
 * byte for byte what the documented schema's serializer writes, so no field beyond the
 * documented ones (a lease hash, a column added later) can reach a client.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import fastJson from 'fast-json-stringify';
import { randomUUID } from '../../src/infra/secrets.js';
import { ListedSchedule, Run } from '../../src/runner/api/presenters.js';
import { page } from '../../src/runner/api/schemas.js';
import { openRunnerDatabase } from '../../src/runner/db/index.js';
import { dialects } from '../helpers/db.js';
import { bearer, makeZip, multipart, SETUP_TOKEN, startRunner, UNPACED } from './helpers.js';

const PASSWORD = 'a long enough password';
const runPage = fastJson(page(Run) as never);
const schedulePage = fastJson(page(ListedSchedule) as never);

/** Text as stored: control characters and quotes included (not NUL: every write refuses it, infra/nul.ts). */
const text = fc.string({ unit: fc.oneof(fc.constantFrom('"', '\\', '\n', '\u0001', '\u2028', 'é', '😀'), fc.string({ minLength: 1, maxLength: 1 })), maxLength: 30 });
const value = fc.oneof(text, fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null));
const parameters = fc.dictionary(fc.string({ minLength: 1, maxLength: 20 }), value, { maxKeys: 5 }).map((o) => JSON.stringify(o));
const labels = fc.array(text, { maxLength: 3 }).map((a) => JSON.stringify(a));
const at = (i: number) => new Date(Date.UTC(2030, 0, 1) + i * 1000).toISOString();

for (const target of dialects()) {
  describe(`list pages hold the documented fields only (${target.name})`, () => {
    test('GET /api/runs and GET /api/schedules equal the schema serializer’s output for any stored rows', async () => {
      const dbh = await target.create();
      const r = await startRunner({ databaseUrl: dbh.url, env: UNPACED });
      const inject = r.service.app.inject.bind(r.service.app);
      const database = await openRunnerDatabase(r.config.runner.databaseUrl);
      try {
        const admin = bearer((await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json().session.token);
        const project = (await inject({ method: 'POST', url: '/api/projects', headers: admin, payload: { name: 'p' } })).json().id as string;
        const upload = multipart([{ name: 'file', file: makeZip() }]);
        const workflow = (await inject({ method: 'POST', url: `/api/projects/${project}/workflows`, headers: { ...admin, ...upload.headers }, payload: upload.payload })).json().id as string;
        const run = fc.record({
          status: fc.constantFrom('queued', 'running', 'succeeded', 'failed', 'cancelled'),
          parameters,
          labels,
          error: fc.option(text),
          exit: fc.option(fc.integer({ min: -255, max: 255 })),
          lease: fc.option(fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 })),
        });
        const schedule = fc.record({ name: text, parameters, labels, enabled: fc.boolean(), version: fc.option(fc.integer({ min: 1, max: 9 })) });
        let n = 0;
        await fc.assert(
          fc.asyncProperty(fc.array(run, { minLength: 1, maxLength: 5 }), fc.array(schedule, { minLength: 1, maxLength: 3 }), async (runs, schedules) => {
            await database.db.deleteFrom('runs').execute();
            await database.db.deleteFrom('schedules').execute();
            await database.db
              .insertInto('runs')
              .values(
                runs.map((x) => ({
                  id: randomUUID(), project_id: project, workflow_id: workflow, workflow_version: 1, status: x.status as 'queued', parameters: x.parameters, created_by: null,
                  created_at: at(n++), started_at: x.status === 'queued' ? null : at(n), finished_at: null, attempt: 1, executor_id: null, lease_hash: x.lease,
                  lease_expires_at: x.lease ? at(n + 60) : null, exit_code: x.exit, error: x.error, required_labels: x.labels, schedule_id: null, log_ack: 0,
                })),
              )
              .execute();
            await database.db
              .insertInto('schedules')
              .values(
                schedules.map((x) => ({
                  id: randomUUID(), project_id: project, workflow_id: workflow, name: x.name, cron: '0 6 * * *', time_zone: 'UTC', enabled: x.enabled ? 1 : 0, parameters: x.parameters,
                  required_labels: x.labels, workflow_version: x.version, overlap: 'skip' as const, next_fire_at: x.enabled ? at(n + 3600) : null, last_fire_at: null, last_outcome: null,
                  last_run_id: null, created_by: null, created_at: at(n++), updated_at: at(n),
                })),
              )
              .execute();
            const runList = await inject({ method: 'GET', url: '/api/runs?limit=100', headers: admin });
            assert.equal(runList.statusCode, 200, runList.body);
            assert.equal(runList.json().items.length, runs.length);
            assert.equal(runList.body, runPage(runList.json()));
            const scheduleList = await inject({ method: 'GET', url: '/api/schedules?limit=200', headers: admin });
            assert.equal(scheduleList.statusCode, 200, scheduleList.body);
            assert.equal(scheduleList.json().items.length, schedules.length);
            assert.equal(scheduleList.body, schedulePage(scheduleList.json()));
            const documented = (schema: { properties: object; required?: string[] }, item: object) => {
              for (const key of Object.keys(item)) assert.ok(Object.hasOwn(schema.properties, key), `undocumented field ${key}`);
              for (const key of schema.required ?? []) assert.ok(Object.hasOwn(item, key), `missing field ${key}`);
            };
            for (const item of runList.json().items) documented(Run, item);
            for (const item of scheduleList.json().items) documented(ListedSchedule, item);
          }),
          { numRuns: 25, includeErrorInReport: true },
        );
      } finally {
        await database.close();
        await r.close();
        await dbh.drop();
      }
    });
  });
}

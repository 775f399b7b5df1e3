import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { describeCron } from '../../src/runner/schedules/describe.js';
import { dialects } from '../helpers/db.js';
import { bearer, makeZip, multipart, SETUP_TOKEN, startRunner } from './helpers.js';

const PASSWORD = 'a long enough password';

describe('a cron expression in words', () => {
  test('common expressions read as people say them', () => {
    const cases: [string, string][] = [
      ['30 6 * * MON-FRI', 'At 06:30, on Monday through Friday'],
      ['*/15 9-17 * * 1-5', 'Every 15 minutes, during hours 9 through 17, on Monday through Friday'],
      ['0 0 L * *', 'At 00:00, on the last day of the month'],
      ['0 2 1 */3 *', 'At 02:00, on day 1 of the month, every 3 months'],
      ['5 * * * *', 'At minute 5 of every hour'],
      ['0 8,12,18 * * *', 'At 08:00, 12:00 and 18:00'],
      ['0 0 1 * 1', 'At 00:00, on day 1 of the month or on Monday'],
      ['7 0 6 * * SUN', 'At 06:00, at second 7, on Sunday'],
      ['@weekly', 'At 00:00 on Sunday'],
      ['0 9 * * 1#2', 'At 09:00, on the second Monday of the month'],
    ];
    for (const [cron, words] of cases) assert.equal(describeCron(cron), words, cron);
  });

  test('property: any five fields give some words, never an exception', () => {
    const token = fc.oneof(fc.constantFrom('*', '*/5', '1-5', 'L', 'MON', 'jan', '0,30', '?', '61', 'x/y', '-', ','), fc.string({ maxLength: 6 }));
    fc.assert(
      fc.property(fc.array(token, { minLength: 5, maxLength: 6 }), (fields) => {
        const words = describeCron(fields.join(' '));
        assert.equal(typeof words, 'string');
        assert.ok(words.length > 0);
      }),
      { numRuns: 500 },
    );
  });
});

for (const target of dialects()) {
  describe(`all schedules a user can read, and a preview before saving (${target.name})`, () => {
    test('members see their projects\' schedules with the workflow name, administrators all; filters by project and workflow', async () => {
      const db = await target.create();
      const r = await startRunner({ databaseUrl: db.url });
      const inject = r.service.app.inject.bind(r.service.app);
      try {
        const admin = bearer((await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json().session.token);
        await inject({ method: 'POST', url: '/api/users', headers: admin, payload: { email: 'ann@example.com', password: PASSWORD } });
        const ann = bearer((await inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'ann@example.com', password: PASSWORD } })).json().token);
        const workflowIn = async (auth: Record<string, string>, project: string, name: string) => {
          const upload = multipart([{ name: 'file', file: makeZip() }, { name: 'name', value: name }]);
          return (await inject({ method: 'POST', url: `/api/projects/${project}/workflows`, headers: { ...auth, ...upload.headers }, payload: upload.payload })).json();
        };
        const annProject = (await inject({ method: 'POST', url: '/api/projects', headers: ann, payload: { name: 'Ann' } })).json();
        const rootProject = (await inject({ method: 'POST', url: '/api/projects', headers: admin, payload: { name: 'Root' } })).json();
        const annFlow = await workflowIn(ann, annProject.id, 'Nightly load');
        const rootFlow = await workflowIn(admin, rootProject.id, 'Audit');
        for (const [auth, flow, cron] of [[ann, annFlow, '0 2 * * *'], [ann, annFlow, '0 3 * * *'], [admin, rootFlow, '0 4 * * *']] as const) {
          assert.equal((await inject({ method: 'POST', url: `/api/workflows/${flow.id}/schedules`, headers: auth, payload: { cron } })).statusCode, 201);
          r.clock.advance(1000);
        }
        const list = async (auth: Record<string, string>, query = '') => {
          const res = await inject({ method: 'GET', url: `/api/schedules${query}`, headers: auth });
          assert.equal(res.statusCode, 200, res.body);
          assert.equal(res.json().nextCursor, null, 'one page');
          return res.json().items.map((s: { workflowName: string; cron: string }) => `${s.workflowName} ${s.cron}`);
        };
        // Oldest first (the order pages keep: schedule-pages.test.ts).
        assert.deepEqual(await list(ann), ['Nightly load 0 2 * * *', 'Nightly load 0 3 * * *']);
        assert.deepEqual(await list(admin), ['Nightly load 0 2 * * *', 'Nightly load 0 3 * * *', 'Audit 0 4 * * *']);
        assert.deepEqual(await list(admin, `?project=${rootProject.id}`), ['Audit 0 4 * * *']);
        assert.deepEqual(await list(admin, `?workflow=${annFlow.id}`), ['Nightly load 0 2 * * *', 'Nightly load 0 3 * * *']);
        assert.deepEqual(await list(ann, `?project=${rootProject.id}`), []);
      } finally {
        await r.close();
        await db.drop();
      }
    });

    test('preview: the expression in words and its next five fires in the zone; a bad expression or zone is 400 naming it', async () => {
      const db = await target.create();
      const r = await startRunner({ databaseUrl: db.url });
      const inject = r.service.app.inject.bind(r.service.app);
      try {
        const admin = bearer((await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json().session.token);
        const q = (cron: string, timeZone?: string) => `/api/schedules/preview?cron=${encodeURIComponent(cron)}${timeZone ? `&timeZone=${encodeURIComponent(timeZone)}` : ''}`;
        // The test clock starts on Tuesday 2030-01-01 00:00 UTC: 06:30 in Berlin is 05:30 UTC in winter.
        const res = await inject({ method: 'GET', url: q('30 6 * * MON-FRI', 'europe/berlin'), headers: admin });
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual(res.json(), {
          cron: '30 6 * * MON-FRI',
          timeZone: 'Europe/Berlin',
          description: 'At 06:30, on Monday through Friday',
          nextFireTimes: ['2030-01-01T05:30:00.000Z', '2030-01-02T05:30:00.000Z', '2030-01-03T05:30:00.000Z', '2030-01-04T05:30:00.000Z', '2030-01-07T05:30:00.000Z'],
        });
        for (const [url, field] of [[q('0 0 ? * *'), 'cron'], [q('0 0 * 2 5L'), 'cron'], [q('0 0 31 2 *'), 'cron'], [q('61 * * * *'), 'cron'], [q('0 6 * * *', 'Mars/Olympus'), 'timeZone'], [q('* * * * * *'), 'cron']] as const) {
          const bad = await inject({ method: 'GET', url, headers: admin });
          assert.equal(bad.statusCode, 400, url);
          assert.equal(bad.json().errors[0].field, field, url);
        }
      } finally {
        await r.close();
        await db.drop();
      }
    });
  });
}

for (const target of dialects()) {
  describe(`schedule lists compute no fire times (${target.name})`, () => {
    test('lists give the stored next fire of each schedule; one schedule gives five', async () => {
      const db = await target.create();
      const r = await startRunner({ databaseUrl: db.url });
      const inject = r.service.app.inject.bind(r.service.app);
      try {
        const admin = bearer((await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json().session.token);
        const project = (await inject({ method: 'POST', url: '/api/projects', headers: admin, payload: { name: 'P' } })).json();
        const upload = multipart([{ name: 'file', file: makeZip() }]);
        const flow = (await inject({ method: 'POST', url: `/api/projects/${project.id}/workflows`, headers: { ...admin, ...upload.headers }, payload: upload.payload })).json();
        // February's fifth Monday: once in 28 years, each later fire a long search.
        const created = await inject({ method: 'POST', url: `/api/workflows/${flow.id}/schedules`, headers: admin, payload: { cron: '0 0 * 2 1#5' } });
        assert.equal(created.statusCode, 201, created.body);
        const five = created.json().nextFireTimes as string[];
        assert.equal(five.length, 5);
        assert.equal((await inject({ method: 'GET', url: `/api/schedules/${created.json().id}`, headers: admin })).json().nextFireTimes.length, 5);
        for (const url of [`/api/workflows/${flow.id}/schedules`, '/api/schedules']) {
          const [listed] = (await inject({ method: 'GET', url, headers: admin })).json().items;
          assert.deepEqual(listed.nextFireTimes, [five[0]], url);
        }
      } finally {
        await r.close();
        await db.drop();
      }
    });
  });
}

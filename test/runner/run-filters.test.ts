import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { openRunnerDatabase } from '../../src/runner/db/index.js';
import { dialects } from '../helpers/db.js';
import { API_KEY, apiKey, bearer, makeZip, multipart, SETUP_TOKEN, startRunner } from './helpers.js';

const PASSWORD = 'a long enough password';

for (const target of dialects()) {
  describe(`the run list filters by schedule, who started a run and when (${target.name})`, () => {
    test('schedule, startedBy (an id or me), since and until combine with the keyset cursor; a bad instant is 400 naming its field', async () => {
      const db = await target.create();
      const r = await startRunner({ databaseUrl: db.url });
      const inject = r.service.app.inject.bind(r.service.app);
      try {
        const setup = (await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json();
        const admin = bearer(setup.session.token);
        const bob = (await inject({ method: 'POST', url: '/api/users', headers: admin, payload: { email: 'bob@example.com', password: PASSWORD } })).json();
        const bobAuth = bearer((await inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'bob@example.com', password: PASSWORD } })).json().token);
        const project = (await inject({ method: 'POST', url: '/api/projects', headers: admin, payload: { name: 'P' } })).json();
        await inject({ method: 'PUT', url: `/api/projects/${project.id}/members/${bob.id}`, headers: admin, payload: { role: 'editor' } });
        const upload = multipart([{ name: 'file', file: makeZip() }]);
        const workflow = (await inject({ method: 'POST', url: `/api/projects/${project.id}/workflows`, headers: { ...admin, ...upload.headers }, payload: upload.payload })).json();
        const start = async (auth: Record<string, string>) => {
          const res = await inject({ method: 'POST', url: `/api/workflows/${workflow.id}/runs`, headers: auth, payload: {} });
          assert.equal(res.statusCode, 201, res.body);
          r.clock.advance(60_000);
          return res.json();
        };
        const mine = [await start(admin), await start(admin), await start(admin)];
        const bobs = [await start(bobAuth), await start(bobAuth)];
        assert.equal(mine[0].createdBy, setup.user.id);
        // A run a schedule started (the scheduler's own path is tested in schedule-loop.test.ts).
        const schedule = (await inject({ method: 'POST', url: `/api/workflows/${workflow.id}/schedules`, headers: admin, payload: { cron: '0 6 * * *' } })).json();
        const database = await openRunnerDatabase(r.config.runner.databaseUrl);
        await database.db.updateTable('runs').set({ schedule_id: schedule.id, created_by: null }).where('id', '=', bobs[0].id).execute();
        await database.close();

        const ids = async (query: string, auth = admin) => {
          const out: string[] = [];
          let cursor: string | null = null;
          do {
            const res: Awaited<ReturnType<typeof inject>> = await inject({ method: "GET", url: `/api/runs?limit=1&${query}${cursor ? `&cursor=${cursor}` : ""}`, headers: auth });
            assert.equal(res.statusCode, 200, res.body);
            out.push(...res.json().items.map((x: { id: string }) => x.id));
            cursor = res.json().nextCursor;
          } while (cursor);
          return out;
        };
        const newestFirst = (runs: { id: string }[]) => runs.map((x) => x.id).reverse();
        assert.deepEqual(await ids(`schedule=${schedule.id}`), [bobs[0].id]);
        assert.deepEqual(await ids('startedBy=me'), newestFirst(mine));
        assert.deepEqual(await ids('startedBy=me', bobAuth), [bobs[1].id]);
        assert.deepEqual(await ids(`startedBy=${bob.id}`), [bobs[1].id]);
        // The admin key starts no runs: `me` matches none (not every run, as no filter would).
        const key = apiKey(API_KEY);
        assert.equal((await ids('', key)).length, 5);
        assert.deepEqual(await ids('startedBy=me', key), []);
        assert.deepEqual(await ids(`startedBy=me&schedule=${schedule.id}`, key), []);
        assert.deepEqual(await ids(`since=${encodeURIComponent(mine[1].createdAt)}&until=${encodeURIComponent(bobs[0].createdAt)}`), newestFirst(mine.slice(1)));
        assert.deepEqual(await ids(`startedBy=me&since=${mine[2].createdAt.slice(0, 10)}&workflow=${workflow.id}&status=queued`), newestFirst(mine));

        // Runs queued in the same millisecond: the cursor pages through every one once, by id.
        const tied: string[] = [];
        for (let i = 0; i < 5; i++) tied.push((await inject({ method: 'POST', url: `/api/workflows/${workflow.id}/runs`, headers: bobAuth, payload: {} })).json().id);
        const paged = await ids(`startedBy=${bob.id}&since=${encodeURIComponent(r.clock.now().toISOString())}`);
        assert.deepEqual(paged, [...tied].sort().reverse());

        for (const [query, field] of [['since=yesterday', 'since'], ['until=2026-13-45', 'until'], ['since=2026-01-01T00:00:00%2B25:00', 'since'], ['until=2026-02-31', 'until']] as const) {
          const res = await inject({ method: 'GET', url: `/api/runs?${query}`, headers: admin });
          assert.equal(res.statusCode, 400, query);
          assert.equal(res.json().errors[0].field, field, query);
        }

        // An empty filter is no filter the caller meant: a 400 naming it, for every kind of caller (not every run).
        for (const auth of [admin, bobAuth, key]) {
          for (const field of ['startedBy', 'schedule', 'since', 'until', 'cursor']) {
            const res = await inject({ method: 'GET', url: `/api/runs?${field}=`, headers: auth });
            assert.equal(res.statusCode, 400, `${field}=: ${res.body}`);
            assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
            assert.equal(res.json().errors[0].field, field);
          }
        }
        for (const auth of [admin, bobAuth]) {
          const res = await inject({ method: 'GET', url: '/api/schedules?cursor=', headers: auth });
          assert.equal(res.statusCode, 400, res.body);
          assert.equal(res.json().errors[0].field, 'cursor');
        }
      } finally {
        await r.close();
        await db.drop();
      }
    });
  });
}

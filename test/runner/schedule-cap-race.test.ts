import assert from 'node:assert/strict';
import fs from 'node:fs';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { MAX_SCHEDULES_PER_WORKFLOW } from '../../src/runner/schedules/service.js';
import { dialects, tempDir } from '../helpers/db.js';
import { bearer, makeZip, multipart, startRunner, TestClock, type TestRunner, SETUP_TOKEN } from './helpers.js';

/**
 * The cap of schedules per workflow holds under concurrent creates: on PostgreSQL through two
 * instances on one database; on SQLite (one process serves the file) through one instance.
 */
for (const target of dialects()) {
  describe(`schedule cap under concurrent creates (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let storageDir: string;
    let instances: TestRunner[];
    let session: string;
    let workflowId: string;

    beforeEach(async () => {
      dbh = await target.create();
      storageDir = tempDir('pier-runner-storage-');
      const clock = new TestClock();
      const env = { RUNNER_STORAGE_DIR: storageDir };
      const count = target.name === 'postgres' ? 2 : 1;
      instances = [];
      for (let i = 0; i < count; i++) instances.push(await startRunner({ databaseUrl: dbh.url, clock, env, backgroundLoops: false }));
      const app = instances[0]!.service.app;
      session = (await app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'a@example.com', password: 'a long enough password' } })).json().session.token;
      const projectId = (await app.inject({ method: 'POST', url: '/api/projects', headers: bearer(session), payload: { name: 'p' } })).json().id;
      const m = multipart([{ name: 'file', file: makeZip() }]);
      workflowId = (await app.inject({ method: 'POST', url: `/api/projects/${projectId}/workflows`, headers: { ...bearer(session), ...m.headers }, payload: m.payload })).json().id;
    });
    afterEach(async () => {
      for (const r of instances) await r.close();
      await dbh.drop();
      fs.rmSync(storageDir, { recursive: true, force: true });
    });

    const create = (r: TestRunner, name: string) =>
      r.service.app.inject({ method: 'POST', url: `/api/workflows/${workflowId}/schedules`, headers: bearer(session), payload: { name, cron: '0 3 * * *' } });

    test(`at ${MAX_SCHEDULES_PER_WORKFLOW - 1} schedules, many concurrent creates make exactly ${MAX_SCHEDULES_PER_WORKFLOW}`, async () => {
      for (let i = 0; i < MAX_SCHEDULES_PER_WORKFLOW - 1; i++) assert.equal((await create(instances[0]!, `s${i}`)).statusCode, 201);
      const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => create(instances[i % instances.length]!, `race${i}`)));
      const created = answers.filter((a) => a.statusCode === 201);
      assert.equal(created.length, 1, answers.map((a) => a.statusCode).join(','));
      for (const a of answers.filter((x) => x.statusCode !== 201)) {
        assert.equal(a.statusCode, 400, a.body);
        assert.match(a.json().detail, /at most 100 schedules/);
      }
      const listed = await instances[instances.length - 1]!.service.app.inject({ method: 'GET', url: `/api/workflows/${workflowId}/schedules`, headers: bearer(session) });
      assert.equal(listed.json().items.length, MAX_SCHEDULES_PER_WORKFLOW);
    });
  });
}

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { dialects, tempDir } from '../helpers/db.js';
import { API_KEY, apiKey, bearer, makeZip, multipart, startRunner, TestClock, type TestRunner, SETUP_TOKEN } from './helpers.js';

/**
 * Two runner instances as the README's scale-out section describes them: one database, one
 * RUNNER_STORAGE_DIR, and each its own data dir (nothing in a data dir may matter).
 */
for (const target of dialects()) {
  describe(`two runner instances on one database and one storage dir (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let storageDir: string;
    let a: TestRunner;
    let b: TestRunner;
    let session: string;

    before(async () => {
      dbh = await target.create();
      storageDir = tempDir('pier-runner-storage-');
      const clock = new TestClock();
      const env = { RUNNER_STORAGE_DIR: storageDir };
      a = await startRunner({ databaseUrl: dbh.url, clock, env });
      b = await startRunner({ databaseUrl: dbh.url, clock, env });
      assert.notEqual(a.dataDir, b.dataDir);
      const setup = await a.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'a@example.com', password: 'a long enough password' } });
      assert.equal(setup.statusCode, 201);
    });
    after(async () => {
      await a.close();
      await b.close();
      await dbh.drop();
      fs.rmSync(storageDir, { recursive: true, force: true });
    });

    test('a login on A works on B', async () => {
      const login = await a.service.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'a@example.com', password: 'a long enough password' } });
      session = login.json().token;
      const me = await b.service.app.inject({ method: 'GET', url: '/api/me', headers: bearer(session) });
      assert.equal(me.statusCode, 200, me.body);
      assert.equal(me.json().email, 'a@example.com');
    });

    test('an archive uploaded through A downloads from B', async () => {
      const project = (await a.service.app.inject({ method: 'POST', url: '/api/projects', headers: bearer(session), payload: { name: 'p' } })).json();
      const zip = makeZip('w/workflow.knime', 'shared');
      const m = multipart([{ name: 'file', file: zip }]);
      const wf = await a.service.app.inject({ method: 'POST', url: `/api/projects/${project.id}/workflows`, headers: { ...bearer(session), ...m.headers }, payload: m.payload });
      assert.equal(wf.statusCode, 201, wf.body);
      const dl = await b.service.app.inject({ method: 'GET', url: `/api/workflows/${wf.json().id}/versions/1/download`, headers: apiKey(API_KEY) });
      assert.equal(dl.statusCode, 200, dl.body);
      assert.deepEqual(dl.rawPayload, zip);
    });

    test('a token revoked on A fails on B', async () => {
      const t = (await a.service.app.inject({ method: 'POST', url: '/api/tokens', headers: bearer(session), payload: { name: 't', scope: 'read' } })).json();
      assert.equal((await b.service.app.inject({ method: 'GET', url: '/api/me', headers: apiKey(t.token) })).statusCode, 200);
      assert.equal((await b.service.app.inject({ method: 'GET', url: '/api/me', headers: apiKey(t.token) })).statusCode, 200);
      assert.equal((await a.service.app.inject({ method: 'DELETE', url: `/api/tokens/${t.id}`, headers: bearer(session) })).statusCode, 204);
      assert.equal((await b.service.app.inject({ method: 'GET', url: '/api/me', headers: apiKey(t.token) })).statusCode, 401);
    });
  });
}

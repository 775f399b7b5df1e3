import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dialects } from '../helpers/db.js';
import { API_KEY, apiKey, bearer, makeZip, multipart, SETUP_TOKEN, startRunner } from './helpers.js';

for (const target of dialects()) {
  test(`a run names the executor that took it, for members who cannot list executors (${target.name})`, async () => {
    const db = await target.create();
    const r = await startRunner({ databaseUrl: db.url });
    const inject = r.service.app.inject.bind(r.service.app);
    try {
      const setup = (await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: 'a long enough password' } })).json();
      const admin = bearer(setup.session.token);
      await inject({ method: 'POST', url: '/api/users', headers: admin, payload: { email: 'bob@example.com', password: 'a long enough password' } });
      const bob = bearer((await inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'bob@example.com', password: 'a long enough password' } })).json().token);
      const bobId = (await inject({ method: 'GET', url: '/api/me', headers: bob })).json().id;
      const project = (await inject({ method: 'POST', url: '/api/projects', headers: admin, payload: { name: 'P' } })).json();
      await inject({ method: 'PUT', url: `/api/projects/${project.id}/members/${bobId}`, headers: admin, payload: { role: 'viewer' } });
      const upload = multipart([{ name: 'file', file: makeZip() }]);
      const workflow = (await inject({ method: 'POST', url: `/api/projects/${project.id}/workflows`, headers: { ...admin, ...upload.headers }, payload: upload.payload })).json();
      const run = (await inject({ method: 'POST', url: `/api/workflows/${workflow.id}/runs`, headers: admin, payload: {} })).json();
      const get = async () => (await inject({ method: 'GET', url: `/api/runs/${run.id}`, headers: bob })).json();
      assert.equal((await get()).executorName, null);
      const executor = (await inject({ method: 'POST', url: '/api/executors/register', headers: apiKey(API_KEY), payload: { name: 'gpu-box <1>' } })).json();
      const claim = await inject({ method: 'POST', url: `/api/executors/${executor.id}/claim?wait=0`, headers: apiKey(API_KEY) });
      assert.equal(claim.json().run.id, run.id);
      assert.equal((await inject({ method: 'GET', url: '/api/executors', headers: bob })).statusCode, 403);
      const seen = await get();
      assert.deepEqual([seen.executorId, seen.executorName], [executor.id, 'gpu-box <1>']);
    } finally {
      await r.close();
      await db.drop();
    }
  });
}

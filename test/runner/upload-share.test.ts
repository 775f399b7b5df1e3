/**
 * One user's uploads take at most UPLOADS_PER_USER places at once: the next gets 429 before its
 * body is stored, while another user's upload is taken in. Before, one user sending twenty
 * uploads at once filled the settings reader's queue, and another user's upload got 503 or
 * waited behind all of them. The worker's parse is held (declaredHold) so the uploads stay in
 * flight for as long as the test needs.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { UPLOADS_PER_USER } from '../../src/runner/workflows/service.js';
import { dialects } from '../helpers/db.js';
import { bearer, knwfWithConfigurationNodes, multipart, SETUP_TOKEN, startRunner } from './helpers.js';

const PASSWORD = 'a long enough password';

for (const target of dialects()) {
  describe(`uploads at once are shared between users (${target.name})`, () => {
    test(`a user's upload past ${UPLOADS_PER_USER} at once gets 429; another user's is taken in`, async () => {
      const db = await target.create();
      const hold = new Int32Array(new SharedArrayBuffer(8));
      const r = await startRunner({ databaseUrl: db.url, declaredHold: hold });
      const inject = r.service.app.inject.bind(r.service.app);
      const release = () => {
        Atomics.store(hold, 0, 1);
        Atomics.notify(hold, 0);
      };
      try {
        const setup = (await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json();
        const admin = bearer(setup.session.token);
        const project = (await inject({ method: 'POST', url: '/api/projects', headers: admin, payload: { name: 'P' } })).json();
        assert.equal((await inject({ method: 'POST', url: '/api/users', headers: admin, payload: { email: 'other@example.com', password: PASSWORD } })).statusCode, 201);
        const other = bearer((await inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'other@example.com', password: PASSWORD } })).json().token);
        const theirProject = (await inject({ method: 'POST', url: '/api/projects', headers: other, payload: { name: 'Theirs' } })).json();
        assert.ok(theirProject.id);
        const upload = (who: Record<string, string>) => {
          const m = multipart([{ name: 'file', file: knwfWithConfigurationNodes(), filename: 'W.knwf' }]);
          const to = who === other ? theirProject.id : project.id;
          return inject({ method: 'POST', url: `/api/projects/${to}/workflows`, headers: { ...who, ...m.headers }, payload: m.payload });
        };
        // The admin's share: each held in the worker (the first parses, the next waits its turn).
        const mine = Array.from({ length: UPLOADS_PER_USER }, () => upload(admin));
        for (let i = 0; Atomics.load(hold, 1) === 0; i++) {
          assert.ok(i < 1500, 'the first parse never reached its worker');
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const past = await upload(admin);
        assert.equal(past.statusCode, 429, past.body);
        assert.equal(past.json().code, 'too_many_requests');
        assert.match(past.json().detail, new RegExp(`at most ${UPLOADS_PER_USER} of your uploads`));
        assert.ok(Number(past.headers['retry-after']) >= 1);
        // Another user is not refused for the admin's uploads.
        const theirs = upload(other);
        release();
        const answers = await Promise.all([...mine, theirs]);
        for (const a of answers) assert.equal(a.statusCode, 201, a.body);
        const listed = (await inject({ method: 'GET', url: `/api/projects/${project.id}/workflows`, headers: admin })).json().items;
        assert.equal(listed.length, UPLOADS_PER_USER, 'the refused upload stored nothing');
        // The share is given back: the admin uploads again.
        assert.equal((await upload(admin)).statusCode, 201);
      } finally {
        release();
        await r.close();
        await db.drop();
      }
    });
  });
}

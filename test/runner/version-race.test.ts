import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { UPLOADS_PER_USER } from '../../src/runner/workflows/service.js';
import { dialects, tempDir } from '../helpers/db.js';
import { API_KEY, apiKey, bearer, makeZip, multipart, startRunner, TestClock, type TestRunner, SETUP_TOKEN } from './helpers.js';

/**
 * Concurrent uploads of new versions of one workflow each get the next number: no upload is
 * refused for losing a race, and the numbers have neither gaps nor duplicates. On PostgreSQL the
 * uploads go through two instances on one database and one storage dir; on SQLite through one
 * (two SQLite instances in one process would wait for each other's write lock on the event loop).
 */
/** As many as the settings reader queues at once on one instance (isolated-declared.ts, 16 waiting behind one read). */
const UPLOADS = 16;
/** Each user may have UPLOADS_PER_USER uploads stored at once (workflows/service.ts): many users race here. */
const USERS = UPLOADS / UPLOADS_PER_USER;
const PASSWORD = 'a long enough password';

for (const target of dialects()) {
  describe(`${UPLOADS} concurrent version uploads of one workflow (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let storageDir: string;
    let instances: TestRunner[];

    before(async () => {
      dbh = await target.create();
      storageDir = tempDir('pier-runner-storage-');
      const clock = new TestClock();
      const env = { RUNNER_STORAGE_DIR: storageDir };
      const count = target.name === 'postgres' ? 2 : 1;
      instances = [];
      for (let i = 0; i < count; i++) instances.push(await startRunner({ databaseUrl: dbh.url, clock, env }));
    });
    after(async () => {
      for (const r of instances) await r.close();
      await dbh.drop();
      fs.rmSync(storageDir, { recursive: true, force: true });
    });

    test('all answer 201 with distinct, consecutive version numbers, and every archive downloads as uploaded', async () => {
      const first = instances[0]!.service.app;
      const setup = await first.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'a@example.com', password: PASSWORD } });
      const session = setup.json().session.token as string;
      const project = (await first.inject({ method: 'POST', url: '/api/projects', headers: bearer(session), payload: { name: 'p' } })).json();
      const m0 = multipart([{ name: 'file', file: makeZip() }]);
      const wf = (
        await first.inject({ method: 'POST', url: `/api/projects/${project.id}/workflows`, headers: { ...bearer(session), ...m0.headers }, payload: m0.payload })
      ).json();

      // Editors of the project, each with a session of its own.
      const editors: string[] = [];
      for (let u = 0; u < USERS; u++) {
        const email = `editor${u}@example.com`;
        assert.equal((await first.inject({ method: 'POST', url: '/api/users', headers: bearer(session), payload: { email, password: PASSWORD } })).statusCode, 201);
        const token = (await first.inject({ method: 'POST', url: '/api/auth/login', payload: { email, password: PASSWORD } })).json().token as string;
        const invited = await first.inject({ method: 'POST', url: `/api/projects/${project.id}/members`, headers: bearer(session), payload: { email, role: 'editor' } });
        assert.ok(invited.statusCode < 300, invited.body);
        const [invitation] = (await first.inject({ method: 'GET', url: '/api/me/invitations', headers: bearer(token) })).json().items;
        assert.equal((await first.inject({ method: 'POST', url: `/api/me/invitations/${invitation.id}/accept`, headers: bearer(token) })).statusCode, 200);
        editors.push(token);
      }

      const uploads = Array.from({ length: UPLOADS }, (_, i) => {
        const content = `upload ${i}`;
        const m = multipart([{ name: 'file', file: makeZip('w/workflow.knime', content), filename: `v${i}.knwf` }]);
        const app = instances[i % instances.length]!.service.app;
        return app
          .inject({ method: 'POST', url: `/api/workflows/${wf.id}/versions`, headers: { ...bearer(editors[i % USERS]!), ...m.headers }, payload: m.payload })
          .then((res) => ({ res, fileName: `v${i}.knwf`, zip: makeZip('w/workflow.knime', content) }));
      });
      const done = await Promise.all(uploads);
      for (const { res } of done) assert.equal(res.statusCode, 201, res.body);
      const versions = done.map(({ res }) => res.json().version as number).sort((x, y) => x - y);
      assert.deepEqual(versions, Array.from({ length: UPLOADS }, (_, i) => i + 2));

      const listed = (await first.inject({ method: 'GET', url: `/api/workflows/${wf.id}`, headers: bearer(session) })).json();
      assert.equal(listed.latestVersion, UPLOADS + 1, JSON.stringify(listed));
      // Each number names the archive its own upload sent.
      for (const { res, zip } of done) {
        const last = instances[instances.length - 1]!.service.app;
        const dl = await last.inject({ method: 'GET', url: `/api/workflows/${wf.id}/versions/${res.json().version}/download`, headers: apiKey(API_KEY) });
        assert.equal(dl.statusCode, 200, dl.body);
        assert.deepEqual(dl.rawPayload, zip);
      }
    });
  });
}

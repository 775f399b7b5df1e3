import assert from 'node:assert/strict';
import { UPLOADS_PER_USER } from '../../src/runner/workflows/service.js';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, test } from 'node:test';
import pg from 'pg';
import { dialects, tempDir } from '../helpers/db.js';
import { bearer, makeZip, multipart, SETUP_TOKEN, startRunner, type TestRunner, UNPACED } from './helpers.js';

/**
 * The storage quota of a project (RUNNER_PROJECT_STORAGE_BYTES): the bytes of every stored
 * workflow version of the project count; an upload (a new workflow or a new version) that would
 * pass the quota is refused with 409 project_storage_full and stores nothing; deleting frees
 * room; 0 = no limit. Concurrent uploads through two instances on one PostgreSQL database cannot
 * pass the quota together.
 */

/** Every archive of these tests has the same bytes, so each takes exactly ARCHIVE.length. */
const ARCHIVE = makeZip('w/workflow.knime', '<workflow>the same bytes in every upload of this test</workflow>');
const S = ARCHIVE.length;

interface Ctx {
  runner: TestRunner;
  session: string;
  projectId: string;
}

async function start(databaseUrl: string, quota: string, extra: Record<string, string> = {}): Promise<Ctx> {
  const runner = await startRunner({ databaseUrl, env: { ...UNPACED, RUNNER_PROJECT_STORAGE_BYTES: quota, ...extra }, backgroundLoops: false });
  const app = runner.service.app;
  const setup = await app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'a@example.com', password: 'a long enough password' } });
  const session = setup.json().session.token as string;
  const projectId = (await app.inject({ method: 'POST', url: '/api/projects', headers: bearer(session), payload: { name: 'p' } })).json().id as string;
  return { runner, session, projectId };
}

const upload = (r: TestRunner, session: string, url: string, fileName = 'w.knwf') => {
  const m = multipart([{ name: 'file', file: ARCHIVE, filename: fileName }]);
  return r.service.app.inject({ method: 'POST', url, headers: { ...bearer(session), ...m.headers }, payload: m.payload });
};
const newWorkflow = (c: Ctx, r = c.runner) => upload(r, c.session, `/api/projects/${c.projectId}/workflows`);
const newVersion = (c: Ctx, workflowId: string, r = c.runner) => upload(r, c.session, `/api/workflows/${workflowId}/versions`);
const storage = async (c: Ctx) =>
  (await c.runner.service.app.inject({ method: 'GET', url: `/api/projects/${c.projectId}`, headers: bearer(c.session) })).json().storage as {
    usedBytes: number;
    limitBytes: number;
  };

/** Every file under the storage's workflows folder (archives and any temporary file). */
function storedFiles(storageDir: string): string[] {
  const root = path.join(storageDir, 'workflows');
  if (!fs.existsSync(root)) return [];
  return fs.readdirSync(root, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

function assertStorageFull(res: { statusCode: number; headers: Record<string, unknown>; json(): unknown }, used: number, limit: number) {
  assert.equal(res.statusCode, 409);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  const body = res.json() as { code: string; detail: string; errors: { field: string; message: string }[] };
  assert.equal(body.code, 'project_storage_full');
  assert.equal(
    body.detail,
    `the project's workflow versions take ${used} of its ${limit} bytes of storage; this archive of ${S} bytes does not fit. ` +
      "Deleting workflows that are no longer needed frees their versions' room",
  );
  assert.deepEqual(body.errors, [{ field: 'file', message: `does not fit the project's storage: ${used} of ${limit} bytes used` }]);
}

for (const target of dialects()) {
  describe(`project storage quota (${target.name})`, () => {
    const open: { close(): Promise<void> }[] = [];
    afterEach(async () => {
      for (const o of open.splice(0).reverse()) await o.close();
    });
    const database = async () => {
      const db = await target.create();
      open.push({ close: () => db.drop() });
      return db.url;
    };
    const runnerOf = (c: Ctx) => {
      open.push(c.runner);
      return c;
    };

    test('an upload past the quota is refused with 409 project_storage_full and stores nothing, a new workflow or a new version', async () => {
      const limit = 2 * S + Math.floor(S / 2);
      const c = runnerOf(await start(await database(), String(limit)));
      const dir = c.runner.config.runner.storageDir;
      assert.deepEqual(await storage(c), { usedBytes: 0, limitBytes: limit });

      const first = await newWorkflow(c);
      assert.equal(first.statusCode, 201, first.body);
      const wf = first.json().id as string;
      assert.equal((await newVersion(c, wf)).statusCode, 201);
      assert.deepEqual(await storage(c), { usedBytes: 2 * S, limitBytes: limit });

      // A third archive of S bytes would take the project to 3S > limit.
      assertStorageFull(await newVersion(c, wf), 2 * S, limit);
      assertStorageFull(await newWorkflow(c), 2 * S, limit);

      // Nothing of the refused uploads stayed: no version, no workflow, no file, no folder.
      const versions = (await c.runner.service.app.inject({ method: 'GET', url: `/api/workflows/${wf}/versions`, headers: bearer(c.session) })).json();
      assert.deepEqual(versions.items.map((v: { version: number }) => v.version), [2, 1]);
      const listed = (await c.runner.service.app.inject({ method: 'GET', url: `/api/projects/${c.projectId}/workflows`, headers: bearer(c.session) })).json();
      assert.deepEqual(listed.items.map((w: { id: string }) => w.id), [wf]);
      assert.equal(storedFiles(dir).length, 2, storedFiles(dir).join('\n'));
      assert.deepEqual(fs.readdirSync(path.join(dir, 'workflows')), [wf]);
      assert.deepEqual(await storage(c), { usedBytes: 2 * S, limitBytes: limit });
    });

    test("the quota is the project's: another project has its own room", async () => {
      const limit = S;
      const c = runnerOf(await start(await database(), String(limit)));
      assert.equal((await newWorkflow(c)).statusCode, 201);
      assertStorageFull(await newWorkflow(c), S, limit);
      const other = (await c.runner.service.app.inject({ method: 'POST', url: '/api/projects', headers: bearer(c.session), payload: { name: 'q' } })).json().id;
      assert.equal((await newWorkflow({ ...c, projectId: other })).statusCode, 201);
    });

    test('deleting a workflow frees its versions\' room', async () => {
      const limit = 2 * S;
      const c = runnerOf(await start(await database(), String(limit)));
      const a = (await newWorkflow(c)).json().id as string;
      assert.equal((await newVersion(c, a)).statusCode, 201);
      assertStorageFull(await newWorkflow(c), 2 * S, limit);

      const del = await c.runner.service.app.inject({ method: 'DELETE', url: `/api/workflows/${a}`, headers: bearer(c.session) });
      assert.equal(del.statusCode, 204, del.body);
      assert.deepEqual(await storage(c), { usedBytes: 0, limitBytes: limit });
      const again = await newWorkflow(c);
      assert.equal(again.statusCode, 201, again.body);
      assert.equal((await newVersion(c, again.json().id)).statusCode, 201);
      assert.deepEqual(await storage(c), { usedBytes: 2 * S, limitBytes: limit });
    });

    test('RUNNER_PROJECT_STORAGE_BYTES=0: no limit', async () => {
      const c = runnerOf(await start(await database(), '0'));
      const wf = (await newWorkflow(c)).json().id as string;
      for (let i = 0; i < 4; i++) assert.equal((await newVersion(c, wf)).statusCode, 201);
      assert.deepEqual(await storage(c), { usedBytes: 5 * S, limitBytes: 0 });
    });

    if (target.name === 'postgres') {
      test('concurrent uploads through two instances never pass the quota together', async () => {
        const url = await database();
        const storageDir = tempDir('pier-runner-storage-');
        open.push({ close: async () => fs.rmSync(storageDir, { recursive: true, force: true }) });
        const KEPT = 2;
        const limit = (1 + KEPT) * S + Math.floor(S / 2);
        const env = { RUNNER_STORAGE_DIR: storageDir };
        const c = runnerOf(await start(url, String(limit), env));
        const second = await startRunner({ databaseUrl: url, env: { ...UNPACED, RUNNER_PROJECT_STORAGE_BYTES: String(limit), ...env }, backgroundLoops: false });
        open.push(second);
        const wf = (await newWorkflow(c)).json().id as string;

        // Every upload's transaction is made to meet the others: a third connection holds the
        // versions table against inserts until each upload waits on a lock (this one, or the
        // project's). Without the project's lock, all of them would have summed the usage by then
        // and all would pass; with it, they sum one after the other.
        const blocker = new pg.Client({ connectionString: url });
        await blocker.connect();
        open.push({ close: () => blocker.end() });
        await blocker.query('BEGIN');
        await blocker.query('LOCK TABLE workflow_versions IN EXCLUSIVE MODE');
        // One user's share on each instance (workflows/service.ts UPLOADS_PER_USER): all in flight at once.
        const UPLOADS = 2 * UPLOADS_PER_USER;
        const pending = Promise.all(
          Array.from({ length: UPLOADS }, (_, i) => {
            const r = i % 2 ? second : c.runner;
            return i % 3 === 2 ? newWorkflow(c, r) : newVersion(c, wf, r);
          }),
        );
        const waiting = async () => {
          // Statistics views are read once per transaction unless the snapshot is cleared.
          await blocker.query('SELECT pg_stat_clear_snapshot()');
          const { rows } = await blocker.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
          );
          return rows[0]!.n;
        };
        for (let tries = 0; (await waiting()) < UPLOADS; tries++) {
          assert.ok(tries < 300, 'the uploads never all reached their transaction');
          await new Promise((r) => setTimeout(r, 10));
        }
        await blocker.query('COMMIT');

        const answers = await pending;
        const codes = answers.map((a) => a.statusCode);
        assert.equal(codes.filter((s) => s === 201).length, KEPT, codes.join(','));
        for (const a of answers.filter((x) => x.statusCode !== 201)) assert.equal(a.json().code, 'project_storage_full', a.body);
        assert.deepEqual(await storage(c), { usedBytes: (1 + KEPT) * S, limitBytes: limit });
        assert.equal(storedFiles(storageDir).length, 1 + KEPT, storedFiles(storageDir).join('\n'));
      });
    }
  });
}

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { dialects } from '../helpers/db.js';
import { type Lease, leaseOf, type ProtocolFixture, protocolFixture } from './executor-fixtures.js';
import { API_KEY, apiKey, bearer, makeZip, multipart, startRunner, type TestRunner } from './helpers.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Every file below a directory (recursively), relative to it. */
function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => fs.statSync(path.join(dir, f)).isFile()).sort();
}

/**
 * Deleting a workflow or a project deletes its runs; their output files in RUNNER_STORAGE_DIR go
 * with them, also when an executor is uploading one at that moment.
 */
for (const target of dialects()) {
  describe(`output files of deleted workflows and projects (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let f: ProtocolFixture;
    const outputsDir = () => path.join(r.config.runner.storageDir, 'outputs');

    beforeEach(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url, backgroundLoops: false });
      f = await protocolFixture(r);
    });
    afterEach(async () => {
      await r.close();
      await dbh.drop();
    });

    const uploadBody = (lease: Lease, data: Buffer) =>
      multipart([
        { name: 'leaseToken', value: lease.leaseToken },
        { name: 'attempt', value: String(lease.attempt) },
        { name: 'sha256', value: sha(data) },
        { name: 'file', file: data, filename: 'out.csv' },
      ]);
    const upload = (runId: string, lease: Lease, data: Buffer, slow?: { m: ReturnType<typeof multipart>; stream: PassThrough }) => {
      const m = slow?.m ?? uploadBody(lease, data);
      return f.inject({ method: 'PUT', url: `/api/runs/${runId}/outputs/out.csv`, headers: { ...apiKey(API_KEY), ...m.headers }, payload: slow?.stream ?? m.payload });
    };

    /** A finished run of `workflowId` with one output file on disk. */
    async function finishedRunOf(workflowId: string): Promise<string> {
      r.clock.advance(1);
      const started = await f.inject({ method: 'POST', url: `/api/workflows/${workflowId}/runs`, headers: bearer(f.session), payload: {} });
      assert.equal(started.statusCode, 201, started.body);
      const c = (await f.claim(await f.register())).claim!;
      assert.equal(c.run.id, started.json().id);
      assert.equal((await upload(c.run.id, leaseOf(c), Buffer.from(`out of ${c.run.id}\n`))).statusCode, 200);
      assert.equal((await f.complete(c.run.id, leaseOf(c), 'succeeded')).statusCode, 200);
      return c.run.id;
    }

    async function newWorkflow(projectId: string): Promise<string> {
      const m = multipart([{ name: 'file', file: makeZip() }]);
      const wf = await f.inject({ method: 'POST', url: `/api/projects/${projectId}/workflows`, headers: { ...bearer(f.session), ...m.headers }, payload: m.payload });
      assert.equal(wf.statusCode, 201, wf.body);
      return wf.json().id;
    }

    test('deleting a workflow removes the output files of its runs, and only those', async () => {
      const other = await newWorkflow(f.projectId);
      const doomed = [await finishedRunOf(f.workflowId), await finishedRunOf(f.workflowId)];
      const kept = await finishedRunOf(other);
      for (const id of [...doomed, kept]) assert.ok(fs.existsSync(path.join(outputsDir(), id)));
      const del = await f.inject({ method: 'DELETE', url: `/api/workflows/${f.workflowId}`, headers: bearer(f.session) });
      assert.equal(del.statusCode, 204, del.body);
      for (const id of doomed) assert.equal(fs.existsSync(path.join(outputsDir(), id)), false, `outputs of ${id} are gone`);
      assert.deepEqual(filesUnder(outputsDir()), [path.join(kept, '1', 'out.csv')]);
      const got = await f.inject({ method: 'GET', url: `/api/runs/${kept}/outputs/out.csv`, headers: bearer(f.session) });
      assert.equal(got.body, `out of ${kept}\n`);
    });

    test('deleting a project removes the output files of the runs of all its workflows', async () => {
      const second = await newWorkflow(f.projectId);
      const ids = [await finishedRunOf(f.workflowId), await finishedRunOf(second)];
      const otherProject = (await f.inject({ method: 'POST', url: '/api/projects', headers: bearer(f.session), payload: { name: 'other' } })).json().id;
      const kept = await finishedRunOf(await newWorkflow(otherProject));
      const del = await f.inject({ method: 'DELETE', url: `/api/projects/${f.projectId}`, headers: bearer(f.session) });
      assert.equal(del.statusCode, 204, del.body);
      for (const id of ids) assert.equal(fs.existsSync(path.join(outputsDir(), id)), false);
      assert.deepEqual(filesUnder(outputsDir()), [path.join(kept, '1', 'out.csv')]);
      assert.deepEqual(fs.readdirSync(path.join(r.config.runner.storageDir, 'workflows')).length, 1, 'only the other project\'s archives are left');
    });

    test('an upload in flight while its workflow is deleted leaves no file behind', async () => {
      const run = await f.start();
      const c = (await f.claim(await f.register())).claim!;
      const data = Buffer.alloc(256 * 1024, 'x');
      const m = uploadBody(leaseOf(c), data);
      const body = m.payload;
      const slow = new PassThrough();
      slow.write(body.subarray(0, body.length - 1000));
      const answer = upload(run.id, leaseOf(c), data, { m, stream: slow });
      const tmp = path.join(outputsDir(), '.tmp');
      while (!fs.existsSync(tmp) || fs.readdirSync(tmp).length === 0) await delay(5);
      assert.equal((await f.inject({ method: 'DELETE', url: `/api/workflows/${f.workflowId}`, headers: bearer(f.session) })).statusCode, 204);
      slow.end(body.subarray(body.length - 1000));
      assert.equal((await answer).statusCode, 404);
      assert.deepEqual(filesUnder(outputsDir()), []);
    });

    test('retention removes output files whose run no longer exists (left by a crash between the delete and the file removal)', async () => {
      const kept = await finishedRunOf(f.workflowId);
      const orphan = path.join(outputsDir(), '0b5a8c1e-2d4f-4e6a-9c3b-7f1e2d3c4b5a', '1');
      fs.mkdirSync(orphan, { recursive: true });
      fs.writeFileSync(path.join(orphan, 'left.csv'), 'left behind\n');
      // Nothing is old enough to prune; the orphan goes all the same.
      assert.equal(await r.service.retention.prune(r.clock.now()), 0);
      assert.deepEqual(filesUnder(outputsDir()), [path.join(kept, '1', 'out.csv')]);
    });

    test('uploads racing a project delete leave no file behind, whichever commits first', async () => {
      const workflows = [f.workflowId, await newWorkflow(f.projectId), await newWorkflow(f.projectId)];
      const held: { runId: string; lease: Lease }[] = [];
      for (const w of workflows) {
        for (let i = 0; i < 4; i++) {
          r.clock.advance(1);
          await f.inject({ method: 'POST', url: `/api/workflows/${w}/runs`, headers: bearer(f.session), payload: {} });
        }
      }
      const ex = await f.register({ capacity: 12 });
      for (let i = 0; i < 12; i++) {
        const c = (await f.claim(ex)).claim!;
        held.push({ runId: c.run.id, lease: leaseOf(c) });
      }
      const data = Buffer.from('racing output\n');
      const uploads = held.map((h, i) => delay(i % 4).then(() => upload(h.runId, h.lease, data)));
      const del = f.inject({ method: 'DELETE', url: `/api/projects/${f.projectId}`, headers: bearer(f.session) });
      const answers = await Promise.all(uploads);
      assert.equal((await del).statusCode, 204);
      for (const a of answers) assert.ok([200, 404, 409].includes(a.statusCode), a.body);
      assert.deepEqual(filesUnder(outputsDir()), []);
    });
  });
}

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { dialects } from '../helpers/db.js';
import { type Lease, leaseOf, type ProtocolFixture, protocolFixture } from './executor-fixtures.js';
import { API_KEY, apiKey, bearer, multipart, startRunner, type TestRunner } from './helpers.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/**
 * A cancel and the executor's completion of the same run: the first to commit wins, and the
 * run's status, exit code, outputs and the answers all tell the same story.
 */
for (const target of dialects()) {
  describe(`cancel racing a run's end (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let f: ProtocolFixture;
    const outputsOf = (runId: string) => path.join(r.config.runner.storageDir, 'outputs', runId);

    beforeEach(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url, backgroundLoops: false });
      f = await protocolFixture(r);
    });
    afterEach(async () => {
      await r.close();
      await dbh.drop();
    });

    const upload = (runId: string, lease: Lease, data: Buffer) => {
      const m = multipart([
        { name: 'leaseToken', value: lease.leaseToken },
        { name: 'attempt', value: String(lease.attempt) },
        { name: 'sha256', value: sha(data) },
        { name: 'file', file: data, filename: 'out.csv' },
      ]);
      return f.inject({ method: 'PUT', url: `/api/runs/${runId}/outputs/out.csv`, headers: { ...apiKey(API_KEY), ...m.headers }, payload: m.payload });
    };
    const cancel = (runId: string) => f.inject({ method: 'POST', url: `/api/runs/${runId}/cancel`, headers: bearer(f.session) });
    const complete = (runId: string, lease: Lease, status: string, exitCode: number | null) =>
      f.inject({ method: 'POST', url: `/api/runs/${runId}/complete`, headers: apiKey(API_KEY), payload: { ...lease, status, exitCode } });
    const runOf = async (runId: string) => (await f.inject({ method: 'GET', url: `/api/runs/${runId}`, headers: bearer(f.session) })).json();
    const outputNames = async (runId: string) =>
      (await f.inject({ method: 'GET', url: `/api/runs/${runId}/outputs`, headers: bearer(f.session) })).json().items.map((o: { name: string }) => o.name);

    async function held(): Promise<{ runId: string; lease: Lease }> {
      await f.start();
      const c = (await f.claim(await f.register())).claim!;
      assert.equal((await upload(c.run.id, leaseOf(c), Buffer.from('result\n'))).statusCode, 200);
      return { runId: c.run.id, lease: leaseOf(c) };
    }

    /** The run ended cancelled: no exit code, no outputs listed or on disk. */
    async function assertCancelled(runId: string) {
      const run = await runOf(runId);
      assert.equal(run.status, 'cancelled');
      assert.equal(run.exitCode, null);
      assert.deepEqual(await outputNames(runId), []);
      assert.equal(fs.existsSync(path.join(outputsOf(runId), '1', 'out.csv')), false);
    }

    /** The run ended as the executor reported: succeeded with exit code 0 and its output. */
    async function assertSucceeded(runId: string) {
      const run = await runOf(runId);
      assert.equal(run.status, 'succeeded');
      assert.equal(run.exitCode, 0);
      assert.deepEqual(await outputNames(runId), ['out.csv']);
      const got = await f.inject({ method: 'GET', url: `/api/runs/${runId}/outputs/out.csv`, headers: bearer(f.session) });
      assert.equal(got.body, 'result\n');
    }

    test('cancel first: the success reported afterwards is refused (409 run_cancelled); the run is cancelled without exit code or outputs', async () => {
      const { runId, lease } = await held();
      const c = await cancel(runId);
      assert.equal(c.statusCode, 200, c.body);
      assert.equal(c.json().status, 'cancelling');
      // Outputs are no longer taken once the cancel committed.
      const late = await upload(runId, lease, Buffer.from('late\n'));
      assert.equal(late.statusCode, 409, late.body);
      assert.equal(late.json().code, 'run_cancelled');
      const done = await complete(runId, lease, 'succeeded', 0);
      assert.equal(done.statusCode, 409, done.body);
      assert.equal(done.json().code, 'run_cancelled');
      await assertCancelled(runId);
      // The agent's confirmation that follows finds the run ended.
      assert.equal((await complete(runId, lease, 'cancelled', null)).statusCode, 409);
      await assertCancelled(runId);
    });

    test('completion first: the cancel afterwards is 409 run_finished and the run stays succeeded with its outputs', async () => {
      const { runId, lease } = await held();
      const done = await complete(runId, lease, 'succeeded', 0);
      assert.equal(done.statusCode, 200, done.body);
      const c = await cancel(runId);
      assert.equal(c.statusCode, 409, c.body);
      assert.equal(c.json().code, 'run_finished');
      assert.match(c.json().detail, /succeeded/);
      await assertSucceeded(runId);
    });

    test('cancel and completion at the same moment, many times: each run ends one way, and every record agrees', async () => {
      const runs: { runId: string; lease: Lease }[] = [];
      const ex = await f.register({ capacity: 20 });
      for (let i = 0; i < 20; i++) await f.start();
      for (let i = 0; i < 20; i++) {
        const c = (await f.claim(ex)).claim!;
        assert.equal((await upload(c.run.id, leaseOf(c), Buffer.from('result\n'))).statusCode, 200);
        runs.push({ runId: c.run.id, lease: leaseOf(c) });
      }
      const outcomes = await Promise.all(
        runs.map(async ({ runId, lease }, i) => {
          const [c, d] = i % 2 === 0 ? await Promise.all([cancel(runId), complete(runId, lease, 'succeeded', 0)]) : await Promise.all([complete(runId, lease, 'succeeded', 0), cancel(runId)]).then(([x, y]) => [y, x]);
          return { runId, cancel: c!, complete: d! };
        }),
      );
      for (const o of outcomes) {
        if (o.complete.statusCode === 200) {
          assert.equal(o.cancel.statusCode, 409, o.cancel.body);
          assert.equal(o.cancel.json().code, 'run_finished');
          await assertSucceeded(o.runId);
        } else {
          assert.equal(o.complete.statusCode, 409, o.complete.body);
          assert.equal(o.complete.json().code, 'run_cancelled');
          assert.equal(o.cancel.statusCode, 200, o.cancel.body);
          await assertCancelled(o.runId);
        }
      }
    });
  });
}

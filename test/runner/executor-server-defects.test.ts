import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { dialects } from '../helpers/db.js';
import { leaseOf, type ProtocolFixture, protocolFixture } from './executor-fixtures.js';
import { API_KEY, apiKey, bearer, multipart, startRunner, type TestRunner } from './helpers.js';

const sha = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');

/**
 * Server-side defects found by a review of the executor protocol, each through the HTTP API as an
 * executor sees it, on both databases. The sweeper is driven by hand with a moved clock.
 */
for (const target of dialects()) {
  describe(`executor protocol, review of #8 (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let f: ProtocolFixture;
    const sweep = () => r.service.sweeper.sweep();

    beforeEach(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url, env: { RUNNER_SWEEP_SECONDS: '3600', RUNNER_LEASE_SECONDS: '60', RUNNER_MAX_ATTEMPTS: '3' } });
      f = await protocolFixture(r);
    });
    afterEach(async () => {
      await r.close();
      await dbh.drop();
    });

    test('a claim whose answer was lost is not kept alive by heartbeats that do not list it: swept and claimable again', async () => {
      const lost = await f.start();
      const kept = await f.start();
      const ex = await f.register({ capacity: 2 });
      // The first answer never reaches the executor; it knows only the second run.
      assert.equal((await f.claim(ex)).claim!.run.id, lost.id);
      const c2 = (await f.claim(ex)).claim!;
      assert.equal(c2.run.id, kept.id);
      for (let i = 0; i < 3; i++) {
        r.clock.advance(40_000);
        await f.heartbeat(ex, [kept.id]);
      }
      await sweep();
      assert.equal((await f.run(lost.id)).status, 'queued', 'the forgotten run goes back to the queue');
      assert.equal((await f.run(kept.id)).status, 'running', 'the listed run keeps its lease');
      const again = (await f.claim(await f.register())).claim!;
      assert.equal(again.run.id, lost.id);
      // An executor that lists nothing keeps nothing either.
      r.clock.advance(40_000);
      await f.heartbeat(ex, []);
      r.clock.advance(40_000);
      await f.heartbeat(ex);
      await sweep();
      assert.equal((await f.run(kept.id)).status, 'queued');
      assert.equal((await f.complete(kept.id, leaseOf(c2), 'succeeded')).statusCode, 409);
    });

    test('NUL in log text and in the error of complete is stored as U+FFFD (PostgreSQL text refuses NUL), not a 500', async () => {
      const run = await f.start();
      const c = (await f.claim(await f.register())).claim!;
      const logged = await f.logs(run.id, leaseOf(c), [{ seq: 1, text: 'a\u0000b' }, { seq: 2, text: '\u0000' }]);
      assert.equal(logged.statusCode, 200, JSON.stringify(logged.body));
      assert.equal(logged.body.ack, 2);
      const read = await f.inject({ method: 'GET', url: `/api/runs/${run.id}/logs`, headers: { authorization: `Bearer ${f.session}` } });
      assert.deepEqual(read.json().items.map((l: { text: string }) => l.text), ['a\uFFFDb', '\uFFFD']);
      const done = await f.inject({
        method: 'POST',
        url: `/api/runs/${run.id}/complete`,
        headers: apiKey(API_KEY),
        payload: { ...leaseOf(c), status: 'failed', exitCode: 1, error: 'bad\u0000byte' },
      });
      assert.equal(done.statusCode, 200, done.body);
      assert.equal((await f.run(run.id)).error, 'bad\uFFFDbyte');
    });

    test('a log batch as large as the schema allows fits the route\'s body limit; a larger body is a 413 problem', async () => {
      const run = await f.start();
      const c = (await f.claim(await f.register())).claim!;
      // 200 chunks of 16,384 three-byte characters: 9.4 MiB of JSON, above the app-wide 1 MiB.
      const big = Array.from({ length: 200 }, (_, i) => ({ seq: i + 1, text: '\u20ac'.repeat(16_384) }));
      const ok = await f.logs(run.id, leaseOf(c), big);
      assert.equal(ok.statusCode, 200, JSON.stringify(ok.body).slice(0, 300));
      assert.equal(ok.body.ack, 200);
      // Over the schema: one character more is a 400, not stored.
      const long = await f.logs(run.id, leaseOf(c), [{ seq: 201, text: 'x'.repeat(16_385) }]);
      assert.equal(long.statusCode, 400);
      // Over the body limit: 413 problem+json, and nothing stored.
      const huge = await f.inject({
        method: 'POST',
        url: `/api/runs/${run.id}/logs`,
        headers: { ...apiKey(API_KEY), 'content-type': 'application/json' },
        payload: JSON.stringify({ ...leaseOf(c), chunks: Array.from({ length: 200 }, (_, i) => ({ seq: 201 + i, text: '\u0001'.repeat(16_384) })) }),
      });
      assert.equal(huge.statusCode, 413, huge.body.slice(0, 300));
      assert.match(String(huge.headers['content-type']), /application\/problem\+json/);
      assert.equal(huge.json().code, 'payload_too_large');
      const read = await f.inject({ method: 'GET', url: `/api/runs/${run.id}/logs?after=1.199&limit=10`, headers: { authorization: `Bearer ${f.session}` } });
      assert.deepEqual(read.json().items.map((l: { seq: number }) => l.seq), [200]);
    });

    /** PUT of one output under a lease; `body` may be a stream (a slow upload). */
    const put = (runId: string, name: string, lease: { leaseToken: string; attempt: number }, data: Buffer, digest = sha(data)) => {
      const m = multipart([
        { name: 'leaseToken', value: lease.leaseToken },
        { name: 'attempt', value: String(lease.attempt) },
        { name: 'sha256', value: digest },
        { name: 'file', file: data, filename: name },
      ]);
      return { m, send: (payload: Buffer | Readable = m.payload) => f.inject({ method: 'PUT', url: `/api/runs/${runId}/outputs/${name}`, headers: { ...apiKey(API_KEY), ...m.headers }, payload }) };
    };
    const download = (runId: string, name: string) => f.inject({ method: 'GET', url: `/api/runs/${runId}/outputs/${name}`, headers: bearer(f.session) });
    const listed = async (runId: string) =>
      (await f.inject({ method: 'GET', url: `/api/runs/${runId}/outputs`, headers: bearer(f.session) })).json().items.map((o: { name: string }) => o.name);
    const outputsDir = () => path.join(r.config.runner.storageDir, 'outputs');

    test('a slow upload of a lost attempt never replaces the file of the attempt that holds the run now', async () => {
      const run = await f.start();
      const c1 = (await f.claim(await f.register())).claim!;
      const stale = put(run.id, 'result.csv', leaseOf(c1), Buffer.alloc(64 * 1024, 'A'));
      // Attempt 1 starts its upload: the lease holds, the bytes begin to flow, then stall.
      const slow = new PassThrough();
      const half = stale.m.payload.length - 1000;
      slow.write(stale.m.payload.subarray(0, half));
      const staleAnswer = stale.send(slow);
      while (!fs.existsSync(path.join(outputsDir(), '.tmp')) || fs.readdirSync(path.join(outputsDir(), '.tmp')).length === 0) await delay(5);
      // Its executor is lost meanwhile; attempt 2 uploads its own result.
      r.clock.advance(61_000);
      await sweep();
      const c2 = (await f.claim(await f.register())).claim!;
      assert.equal(c2.lease.attempt, 2);
      const fresh = Buffer.from('from attempt 2\n');
      assert.equal((await put(run.id, 'result.csv', leaseOf(c2), fresh).send()).statusCode, 200);
      // Attempt 1's upload ends now: refused, and the file stays attempt 2's.
      slow.end(stale.m.payload.subarray(half));
      assert.equal((await staleAnswer).statusCode, 409);
      assert.equal((await f.complete(run.id, leaseOf(c2), 'succeeded')).statusCode, 200);
      const dl = await download(run.id, 'result.csv');
      assert.equal(dl.statusCode, 200);
      assert.equal(dl.body, fresh.toString());
      assert.equal(dl.headers['x-content-sha256'], sha(fresh));
    });

    test('a re-upload with a wrong sha256 keeps the recorded file (was: deleted it, download 404)', async () => {
      const run = await f.start();
      const c = (await f.claim(await f.register())).claim!;
      const good = Buffer.from('good\n');
      assert.equal((await put(run.id, 'r.txt', leaseOf(c), good).send()).statusCode, 200);
      const bad = await put(run.id, 'r.txt', leaseOf(c), Buffer.from('other\n'), sha('not it')).send();
      assert.equal(bad.statusCode, 400);
      assert.equal(bad.json().code, 'checksum_mismatch');
      const dl = await download(run.id, 'r.txt');
      assert.equal(dl.statusCode, 200);
      assert.equal(dl.body, 'good\n');
      assert.deepEqual(fs.readdirSync(path.join(outputsDir(), '.tmp')), []);
    });

    test('outputs of a lost attempt leave the run: requeued by the sweeper, handed back, or executor removed', async () => {
      const run = await f.start();
      const data = Buffer.from('attempt output\n');
      // 1. the sweeper
      let ex = await f.register();
      let c = (await f.claim(ex)).claim!;
      assert.equal((await put(run.id, 'result.csv', leaseOf(c), data).send()).statusCode, 200);
      assert.deepEqual(await listed(run.id), ['result.csv']);
      r.clock.advance(61_000);
      await sweep();
      assert.deepEqual(await listed(run.id), []);
      assert.equal((await download(run.id, 'result.csv')).statusCode, 404);
      assert.equal(fs.existsSync(path.join(outputsDir(), run.id, String(c.lease.attempt))), false, 'the lost attempt\'s files are removed');
      // 2. release
      c = (await f.claim(ex)).claim!;
      assert.equal((await put(run.id, 'result.csv', leaseOf(c), data).send()).statusCode, 200);
      const released = await f.inject({ method: 'POST', url: `/api/runs/${run.id}/release`, headers: apiKey(API_KEY), payload: leaseOf(c) });
      assert.equal(released.statusCode, 200, released.body);
      assert.deepEqual(await listed(run.id), []);
      assert.equal(fs.existsSync(path.join(outputsDir(), run.id, String(c.lease.attempt))), false);
      // 3. executor removal
      ex = await f.register();
      c = (await f.claim(ex)).claim!;
      assert.equal((await put(run.id, 'result.csv', leaseOf(c), data).send()).statusCode, 200);
      assert.equal((await f.inject({ method: 'DELETE', url: `/api/executors/${ex}`, headers: apiKey(API_KEY) })).statusCode, 204);
      assert.deepEqual(await listed(run.id), []);
      assert.equal(fs.existsSync(path.join(outputsDir(), run.id, String(c.lease.attempt))), false);
      // The attempt that finishes shows only its own outputs.
      c = (await f.claim(await f.register())).claim!;
      assert.equal((await put(run.id, 'final.csv', leaseOf(c), data).send()).statusCode, 200);
      assert.equal((await f.complete(run.id, leaseOf(c), 'succeeded')).statusCode, 200);
      assert.deepEqual(await listed(run.id), ['final.csv']);
      assert.equal((await download(run.id, 'final.csv')).body, data.toString());
    });

    test('cancel racing the sweeper: one statement, so it never misses both states (never 409 for a live run)', async () => {
      const ex = await f.register({ capacity: 200 });
      const ids: string[] = [];
      for (let i = 0; i < 40; i++) ids.push((await f.start()).id);
      for (let i = 0; i < 40; i++) assert.ok((await f.claim(ex)).claim);
      r.clock.advance(61_000);
      const cancels = ids.map((id) => f.inject({ method: 'POST', url: `/api/runs/${id}/cancel`, headers: bearer(f.session) }));
      const sweeps = [sweep(), sweep(), sweep(), sweep()];
      const answers = await Promise.all(cancels);
      await Promise.all(sweeps);
      await sweep();
      assert.deepEqual(answers.map((a) => a.statusCode).filter((c) => c !== 200), [], 'every cancel of a live run succeeds');
      for (const id of ids) assert.equal((await f.run(id)).status, 'cancelled');
    });

    test('hand-backs (release, executor removal) do not use up attempts; log attempts stay unique; lost executors still do', async () => {
      const run = await f.start();
      const ex = await f.register({ capacity: 5 });
      for (let i = 1; i <= 5; i++) {
        const c = (await f.claim(ex)).claim!;
        assert.equal(c.lease.attempt, i);
        assert.equal((await f.logs(run.id, leaseOf(c), [{ seq: 1, text: `attempt ${i}` }])).body.ack, 1);
        const released = await f.inject({ method: 'POST', url: `/api/runs/${run.id}/release`, headers: apiKey(API_KEY), payload: leaseOf(c) });
        assert.equal(released.statusCode, 200, released.body);
        assert.equal(released.json().status, 'queued');
      }
      // Removing the executor that holds it is a hand-back too.
      const doomed = await f.register();
      assert.equal((await f.claim(doomed)).claim!.lease.attempt, 6);
      assert.equal((await f.inject({ method: 'DELETE', url: `/api/executors/${doomed}`, headers: apiKey(API_KEY) })).statusCode, 204);
      // RUNNER_MAX_ATTEMPTS=3 counts only lost executors: two losses are re-queued, the third fails.
      for (let lost = 1; lost <= 3; lost++) {
        const c = (await f.claim(ex)).claim!;
        assert.equal(c.lease.attempt, 6 + lost);
        r.clock.advance(61_000);
        await sweep();
        assert.equal((await f.run(run.id)).status, lost < 3 ? 'queued' : 'failed', `after loss ${lost}`);
      }
      const logs = (await f.inject({ method: 'GET', url: `/api/runs/${run.id}/logs`, headers: bearer(f.session) })).json().items;
      assert.deepEqual(logs.map((l: { attempt: number; text: string }) => `${l.attempt}:${l.text}`), [1, 2, 3, 4, 5].map((i) => `${i}:attempt ${i}`));
    });
  });
}

import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { dialects } from '../helpers/db.js';
import { leaseOf, type ProtocolFixture, protocolFixture } from './executor-fixtures.js';
import { API_KEY, apiKey, startRunner, type TestRunner } from './helpers.js';

/**
 * Server-side defects found by the review of issue #8, each through the HTTP API as an executor
 * sees it, on both databases. The sweeper is driven by hand with a moved clock.
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
  });
}

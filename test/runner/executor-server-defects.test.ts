import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { dialects } from '../helpers/db.js';
import { leaseOf, type ProtocolFixture, protocolFixture } from './executor-fixtures.js';
import { startRunner, type TestRunner } from './helpers.js';

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
  });
}

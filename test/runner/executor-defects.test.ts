import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import pg from 'pg';
import { SWEEP_LOCK_KEY } from '../../src/runner/service.js';
import { dialects } from '../helpers/db.js';
import { leaseOf, type ProtocolFixture, protocolFixture } from './executor-fixtures.js';
import { startRunner, type TestRunner } from './helpers.js';

/**
 * Four defects of the executor protocol, each reproduced through the HTTP API as an executor sees
 * it. The background sweeper is slowed down (RUNNER_SWEEP_SECONDS) so the tests sweep by hand with
 * a moved clock; one test lets the background loop do it.
 */
for (const target of dialects()) {
  describe(`executor protocol defects (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let f: ProtocolFixture;
    /** The sweeper, when the runner has one (it is how lost executors are found). */
    const sweep = async () => (r.service as { sweeper?: { sweep(): Promise<unknown> } }).sweeper?.sweep();

    // A fresh runner and database per test: claims take the oldest queued run of any workflow.
    beforeEach(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url, env: { RUNNER_SWEEP_SECONDS: '3600', RUNNER_LEASE_SECONDS: '60', RUNNER_MAX_ATTEMPTS: '3' } });
      f = await protocolFixture(r);
    });
    afterEach(async () => {
      await r.close();
      await dbh.drop();
    });

    test('capacity is checked in the same atomic step as the claim: 10 parallel claims, capacity 1 → one run', async () => {
      for (let i = 0; i < 10; i++) await f.start();
      const one = await f.register({ capacity: 1 });
      const results = await Promise.all(Array.from({ length: 10 }, () => f.claim(one)));
      assert.equal(results.filter((x) => x.statusCode === 200).length, 1);
      const three = await f.register({ capacity: 3 });
      const more = await Promise.all(Array.from({ length: 10 }, () => f.claim(three)));
      const got = more.filter((x) => x.claim).map((x) => x.claim!.run.id);
      assert.equal(got.length, 3);
      assert.equal(new Set(got).size, 3);
    });

    test('log sequences are per attempt: a retried run acknowledges again from 1; a stray far-ahead chunk is refused', async () => {
      const run = await f.start();
      const ex1 = await f.register();
      const c1 = (await f.claim(ex1)).claim!;
      assert.equal(c1.run.id, run.id);
      assert.equal((await f.logs(run.id, leaseOf(c1), [{ seq: 1, text: 'a1' }, { seq: 2, text: 'a2' }])).body.ack, 2);
      // The executor dies; a whole lease later the run is taken again.
      r.clock.advance(121_000);
      await sweep();
      const ex2 = await f.register();
      const c2 = (await f.claim(ex2)).claim!;
      assert.equal(c2.run.id, run.id);
      assert.equal(c2.lease.attempt, 2);
      assert.equal(c2.nextLogSeq, 1);
      assert.equal((await f.logs(run.id, leaseOf(c2), [{ seq: 1, text: 'b1' }])).body.ack, 1);
      const stray = await f.logs(run.id, leaseOf(c2), [{ seq: 999_999_999, text: 'stray' }]);
      assert.equal(stray.statusCode, 400);
      assert.equal(stray.body.code, 'log_seq_out_of_window');
      assert.equal((await f.logs(run.id, leaseOf(c2), [{ seq: 2, text: 'b2' }])).body.ack, 2);
      // The old attempt's lease is fenced off.
      assert.equal((await f.logs(run.id, leaseOf(c1), [{ seq: 3, text: 'late' }])).statusCode, 409);
      const read = async (q: string) => (await f.inject({ method: 'GET', url: `/api/runs/${run.id}/logs${q}`, headers: { authorization: `Bearer ${f.session}` } })).json();
      const all = await read('');
      assert.deepEqual(all.items.map((l: { attempt: number; seq: number; text: string }) => `${l.attempt}.${l.seq}:${l.text}`), ['1.1:a1', '1.2:a2', '2.1:b1', '2.2:b2']);
      assert.deepEqual((await read('?attempt=1')).items.map((l: { text: string }) => l.text), ['a1', 'a2']);
      assert.deepEqual((await read('?attempt=2')).items.map((l: { text: string }) => l.text), ['b1', 'b2']);
      const page = await read('?limit=3');
      assert.equal(page.nextAfter, '2.1');
      assert.deepEqual((await read(`?after=${page.nextAfter}`)).items.map((l: { text: string }) => l.text), ['b2']);
      await f.complete(run.id, leaseOf(c2), 'succeeded');
    });

    test('a cancelled running run keeps its executor busy until the executor confirms the kill', async () => {
      const ex = await f.register({ capacity: 1 });
      const a = await f.start();
      const b = await f.start();
      const ca = (await f.claim(ex)).claim!;
      assert.equal(ca.run.id, a.id);
      const cancel = await f.inject({ method: 'POST', url: `/api/runs/${a.id}/cancel`, headers: { authorization: `Bearer ${f.session}` } });
      assert.equal(cancel.statusCode, 200, cancel.body);
      assert.equal(cancel.json().status, 'cancelling');
      assert.equal((await f.claim(ex)).statusCode, 204, 'the process of the cancelled run may still run');
      const hb = await f.heartbeat(ex);
      assert.deepEqual(hb.cancel, [a.id]);
      assert.equal(hb.runningRuns, 1);
      // Its last lines still arrive; then it confirms.
      assert.equal((await f.logs(a.id, leaseOf(ca), [{ seq: 1, text: 'terminated' }])).body.ack, 1);
      const done = await f.complete(a.id, leaseOf(ca), 'cancelled');
      assert.equal(done.body.status, 'cancelled');
      assert.equal((await f.claim(ex)).claim?.run.id, b.id);
      assert.equal((await f.logs(a.id, leaseOf(ca), [{ seq: 2, text: 'late' }])).statusCode, 409);
      assert.equal((await f.complete(a.id, leaseOf(ca), 'cancelled')).statusCode, 409);
    });

    test('a run whose executor died is re-queued by the sweeper, then fails as "executor lost" after the last attempt', async () => {
      const run = await f.start();
      const dead = await f.register({ capacity: 5 });
      let c = (await f.claim(dead)).claim!;
      assert.equal(c.run.id, run.id);
      for (let attempt = 1; attempt <= 3; attempt++) {
        assert.equal(c.lease.attempt, attempt);
        // Heartbeats keep it: 40 s, then 40 s more is past the first lease but not the extended one.
        r.clock.advance(40_000);
        await f.heartbeat(dead, [run.id]);
        r.clock.advance(40_000);
        await sweep();
        assert.equal((await f.run(run.id)).status, 'running');
        // Then the executor goes silent; nobody claims, yet the run does not stay running.
        r.clock.advance(61_000);
        await sweep();
        const after = await f.run(run.id);
        if (attempt < 3) {
          assert.equal(after.status, 'queued');
          c = (await f.claim(dead)).claim!;
          assert.equal(c.run.id, run.id);
        } else {
          assert.equal(after.status, 'failed');
          assert.equal(after.error, 'executor lost');
        }
      }
      assert.equal((await f.complete(run.id, leaseOf(c), 'succeeded')).statusCode, 409);
    });
  });
}

describe('the sweeper runs by itself in the background', () => {
  test('a held run of a silent executor is re-queued without any request', async () => {
    const r = await startRunner({ env: { RUNNER_SWEEP_SECONDS: '1', RUNNER_LEASE_SECONDS: '60' } });
    try {
      const f = await protocolFixture(r);
      const run = await f.start();
      const ex = await f.register();
      assert.equal((await f.claim(ex)).claim?.run.id, run.id);
      r.clock.advance(61_000);
      let status = 'running';
      for (let i = 0; i < 100 && status === 'running'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        status = (await f.run(run.id)).status;
      }
      assert.equal(status, 'queued');
    } finally {
      await r.close();
    }
  });
});

describe('the sweeper runs on one instance at a time (PostgreSQL)', { skip: !process.env.TEST_DATABASE_URL && !process.env.CI }, () => {
  test('while another instance holds the sweep lock, a sweep does nothing; then it sweeps', async () => {
    const target = dialects().find((d) => d.name === 'postgres');
    assert.ok(target, 'TEST_DATABASE_URL is needed');
    const dbh = await target.create();
    const r = await startRunner({ databaseUrl: dbh.url, env: { RUNNER_SWEEP_SECONDS: '3600', RUNNER_LEASE_SECONDS: '60' } });
    const other = new pg.Client({ connectionString: dbh.url });
    await other.connect();
    try {
      const f = await protocolFixture(r);
      const run = await f.start();
      assert.equal((await f.claim(await f.register())).claim?.run.id, run.id);
      r.clock.advance(61_000);
      // "Another instance" sweeping right now: it holds the lock.
      await other.query('SELECT pg_advisory_lock($1)', [SWEEP_LOCK_KEY]);
      assert.equal(await r.service.sweeper.sweep(), null);
      assert.equal((await f.run(run.id)).status, 'running');
      await other.query('SELECT pg_advisory_unlock($1)', [SWEEP_LOCK_KEY]);
      assert.deepEqual((await r.service.sweeper.sweep())?.requeued, [run.id]);
      assert.equal((await f.run(run.id)).status, 'queued');
    } finally {
      await other.end();
      await r.close();
      await dbh.drop();
    }
  });
});

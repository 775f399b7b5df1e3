import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { dialects, tempDir } from '../helpers/db.js';
import { exited, leaseOf, protocolFixture, startExecutor } from './executor-fixtures.js';
import { API_KEY, apiKey, startRunner, TestClock } from './helpers.js';

/** The wall clock: leases and heartbeats of real processes run on real time. */
const realClock = Object.assign(new TestClock(), { now: () => new Date(), advance: () => {} });

/** Waits (bounded) until `check` holds; for state another process reaches, never for time itself. */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (await check()) return;
    await sleep(50);
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** The JSON log lines an executor process wrote. */
function events(child: ChildProcess & { output: string[] }): { event: string; [k: string]: unknown }[] {
  return child.output
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

for (const target of dialects()) {
  describe(`executor identity across restarts (${target.name})`, () => {
    test('POST /api/executors/{id}/register: same executor, the new name, labels and capacity, not draining; the runs it held go back to the queue', async () => {
      const dbh = await target.create();
      const r = await startRunner({ databaseUrl: dbh.url, env: { RUNNER_SWEEP_SECONDS: '3600' } });
      try {
        const f = await protocolFixture(r);
        const key = apiKey(API_KEY);
        const id = await f.register({ name: 'old', labels: ['a'], capacity: 1 });
        const held = await f.start();
        const claim = (await f.claim(id)).claim!;
        assert.equal(claim.run.id, held.id);
        assert.equal((await f.inject({ method: 'POST', url: `/api/executors/${id}/drain`, headers: key })).statusCode, 200);

        const again = await f.inject({ method: 'POST', url: `/api/executors/${id}/register`, headers: key, payload: { name: 'new', labels: ['b', 'b'], capacity: 2 } });
        assert.equal(again.statusCode, 200, again.body);
        const view = again.json();
        assert.deepEqual([view.id, view.name, view.labels, view.capacity, view.status], [id, 'new', ['b'], 2, 'online']);
        const list = (await f.inject({ method: 'GET', url: '/api/executors', headers: key })).json().items;
        assert.deepEqual(list.map((e: { id: string }) => e.id), [id], 'no second executor');

        // The restarted process holds nothing: the next sweep re-queues the run as attempt 2.
        r.clock.advance(1);
        const swept = await r.service.sweeper.sweep();
        assert.deepEqual(swept?.requeued, [held.id]);
        assert.equal((await f.logs(held.id, leaseOf(claim), [{ seq: 1, text: 'late' }])).statusCode, 409, 'the old lease is gone');
        const retaken = (await f.claim(id)).claim!;
        assert.deepEqual([retaken.run.id, retaken.lease.attempt], [held.id, 2]);

        const bad = await f.inject({ method: 'POST', url: `/api/executors/${id}/register`, headers: key, payload: { name: 'x', capacity: 0 } });
        assert.equal(bad.statusCode, 400);
        assert.equal((await f.inject({ method: 'POST', url: `/api/executors/${id}/register`, payload: { name: 'x' } })).statusCode, 401);
        assert.equal((await f.inject({ method: 'DELETE', url: `/api/executors/${id}`, headers: key })).statusCode, 204);
        const gone = await f.inject({ method: 'POST', url: `/api/executors/${id}/register`, headers: key, payload: { name: 'new' } });
        assert.equal(gone.statusCode, 404);
        assert.equal(gone.json().code, 'not_found');
        assert.equal((await f.inject({ method: 'GET', url: '/api/executors', headers: key })).json().items.length, 0, 'a 404 registers nothing');
      } finally {
        await r.close();
        await dbh.drop();
      }
    });

    test('pier runner executor --state-file: a restart is the same executor; once removed, it registers anew and keeps the new id', { timeout: 5 * 60_000 }, async () => {
      const dbh = await target.create();
      const storageDir = tempDir('pier-runner-storage-');
      const r = await startRunner({ databaseUrl: dbh.url, clock: realClock, env: { RUNNER_STORAGE_DIR: storageDir } });
      const work = tempDir('pier-executor-identity-');
      const state = path.join(work, 'state', 'executor.json');
      const children: (ChildProcess & { output: string[] })[] = [];
      const start = (name: string, extra: string[]) => {
        const child = startExecutor(url, name, path.join(work, name), 'echo ran {runId}', ['--state-file', state, ...extra]);
        children.push(child);
        return child;
      };
      let url = '';
      try {
        url = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
        const f = await protocolFixture(r);
        const key = apiKey(API_KEY);
        const executors = async () => (await f.inject({ method: 'GET', url: '/api/executors', headers: key })).json().items as { id: string; name: string; labels: string[]; capacity: number; status: string }[];
        const runOnce = async () => {
          const run = await f.start();
          await until(async () => (await f.run(run.id)).status === 'succeeded', `run ${run.id} to succeed`);
          return (await f.run(run.id)).executorId;
        };

        const first = start('first', ['--labels', 'x']);
        const firstId = await runOnce();
        const saved = JSON.parse(fs.readFileSync(state, 'utf8'));
        assert.deepEqual(saved, { executorId: firstId });
        assert.equal(fs.statSync(state).mode & 0o777, 0o600);
        first.kill('SIGTERM');
        assert.equal(await exited(first), 0, first.output.join(''));

        // Restarted with other settings: still the one executor, with the new settings.
        const second = start('second', ['--labels', 'y', '--capacity', '2']);
        assert.equal(await runOnce(), firstId);
        assert.deepEqual(
          (await executors()).map((e) => [e.id, e.name, e.labels, e.capacity, e.status]),
          [[firstId, 'second', ['y'], 2, 'online']],
        );
        assert.ok(events(second).some((e) => e.event === 'registered' && e.executorId === firstId && e.again === true));
        second.kill('SIGTERM');
        assert.equal(await exited(second), 0, second.output.join(''));

        // Removed by an admin: the next start is told 404 and registers as a new executor.
        assert.equal((await f.inject({ method: 'DELETE', url: `/api/executors/${firstId}`, headers: key })).statusCode, 204);
        const third = start('third', []);
        const thirdId = await runOnce();
        assert.notEqual(thirdId, firstId);
        assert.deepEqual(JSON.parse(fs.readFileSync(state, 'utf8')), { executorId: thirdId });
        assert.deepEqual((await executors()).map((e) => e.id), [thirdId]);
        assert.ok(events(third).some((e) => e.event === 'state_unknown' && e.executorId === firstId));
        third.kill('SIGTERM');
        assert.equal(await exited(third), 0, third.output.join(''));

        // A state file that is not ours stops the executor before it registers anything.
        fs.writeFileSync(state, 'not json');
        const broken = start('broken', []);
        assert.notEqual(await exited(broken), 0);
        assert.match(broken.output.join(''), /is not an executor state file/);
        assert.deepEqual((await executors()).map((e) => e.id), [thirdId]);
      } finally {
        for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
        await r.close();
        await dbh.drop();
        fs.rmSync(storageDir, { recursive: true, force: true });
        fs.rmSync(work, { recursive: true, force: true });
      }
    });
  });
}

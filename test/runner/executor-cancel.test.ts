import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, test } from 'node:test';
import { dialects, tempDir } from '../helpers/db.js';
import { exited, protocolFixture, startExecutor } from './executor-fixtures.js';
import { API_KEY, apiKey, bearer, startRunner, TestClock } from './helpers.js';

const realClock = Object.assign(new TestClock(), { now: () => new Date(), advance: () => {} });

async function until(check: () => Promise<boolean> | boolean, what: () => string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`timed out waiting for ${what()}`);
}

for (const target of dialects()) {
  describe(`a real executor: cancel and drain (${target.name})`, () => {
    test('a running run is killed at the next heartbeat and ends cancelled; the queued one runs next; drain ends the process', { timeout: 120_000 }, async () => {
      const dbh = await target.create();
      const r = await startRunner({ databaseUrl: dbh.url, clock: realClock, env: { RUNNER_LEASE_SECONDS: '3' } });
      const base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
      const work = tempDir('pier-executors-');
      // mode=loop runs until killed (it says so on SIGTERM); anything else finishes at once.
      const command = `if [ {param.mode} = loop ]; then trap 'echo got TERM; exit 143' TERM; echo looping; while true; do sleep 0.1; done; else echo quick; fi`;
      const ex = startExecutor(base, 'one', work, command, ['--capacity', '1', '--kill-grace', '5']);
      try {
        const f = await protocolFixture(r);
        const loop = await f.start({ parameters: { mode: 'loop' } });
        const quick = await f.start({ parameters: { mode: 'quick' } });
        const logs = async (id: string) =>
          (await f.inject({ method: 'GET', url: `/api/runs/${id}/logs`, headers: apiKey(API_KEY) })).json().items.map((l: { text: string }) => l.text).join('');
        await until(async () => (await logs(loop.id)).includes('looping'), () => ex.output.join(''));
        const cancel = await f.inject({ method: 'POST', url: `/api/runs/${loop.id}/cancel`, headers: bearer(f.session) });
        assert.equal(cancel.json().status, 'cancelling');
        assert.equal((await f.run(quick.id)).status, 'queued', 'capacity 1 is still taken by the run being cancelled');
        await until(async () => (await f.run(loop.id)).status === 'cancelled', () => ex.output.join(''));
        assert.match(await logs(loop.id), /looping\n(.|\n)*got TERM\n/);
        await until(async () => (await f.run(quick.id)).status === 'succeeded', () => ex.output.join(''));
        assert.equal(await logs(quick.id), 'quick\n');
        const executorId = (await f.inject({ method: 'GET', url: '/api/executors', headers: apiKey(API_KEY) })).json().items[0].id;
        await f.inject({ method: 'POST', url: `/api/executors/${executorId}/drain`, headers: apiKey(API_KEY) });
        assert.equal(await exited(ex), 0);
        assert.match(ex.output.join(''), /"event":"drained"/);
      } finally {
        if (ex.exitCode === null) ex.kill('SIGKILL');
        await r.close();
        await dbh.drop();
        fs.rmSync(work, { recursive: true, force: true });
      }
    });
  });
}

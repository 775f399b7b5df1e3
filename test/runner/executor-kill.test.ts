import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, test } from 'node:test';
import { openRunnerDatabase } from '../../src/runner/db/index.js';
import { dialects, tempDir } from '../helpers/db.js';
import { exited, protocolFixture, startExecutor } from './executor-fixtures.js';
import { API_KEY, apiKey, SETUP_TOKEN, startRunner, TestClock } from './helpers.js';

const realClock = Object.assign(new TestClock(), { now: () => new Date(), advance: () => {} });

/** Waits (bounded) for a condition another process brings about. */
async function until(check: () => Promise<boolean> | boolean, what: string | (() => string), tries = 600): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

for (const target of dialects()) {
  describe(`SIGKILL (${target.name})`, () => {
    test('an executor killed mid-run: the run is re-queued and finished by another executor as attempt 2', { timeout: 120_000 }, async () => {
      const dbh = await target.create();
      // Short leases so the lost executor is noticed within seconds; the sweeper runs every second.
      const r = await startRunner({ databaseUrl: dbh.url, clock: realClock, env: { RUNNER_LEASE_SECONDS: '2', RUNNER_SWEEP_SECONDS: '1' } });
      const base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
      const work = tempDir('pier-executors-');
      const started: ChildProcess[] = [];
      try {
        const f = await protocolFixture(r);
        const run = await f.start();
        // Attempt 1 hangs (until its executor dies and the pipe breaks); attempt 2 finishes.
        const command = 'echo attempt {attempt} started; if [ {attempt} = 1 ]; then sleep 5; echo never; fi; echo attempt {attempt} done';
        const first = startExecutor(base, 'doomed', path.join(work, 'a'), command);
        started.push(first);
        await until(async () => (await f.run(run.id)).status === 'running', 'the first executor to take the run');
        const read = async () => (await f.inject({ method: 'GET', url: `/api/runs/${run.id}/logs`, headers: apiKey(API_KEY) })).json();
        await until(async () => (await read()).items.length > 0, 'the first log line');
        first.kill('SIGKILL');
        await exited(first);
        const second = startExecutor(base, 'rescuer', path.join(work, 'b'), command);
        started.push(second);
        await until(async () => (await f.run(run.id)).status === 'succeeded', 'the run to finish on the second executor');
        const done = await f.run(run.id);
        assert.equal(done.attempt, 2);
        const logs = (await read()).items.map((l: { attempt: number; text: string }) => `${l.attempt}:${l.text}`);
        assert.deepEqual(logs, ['1:attempt 1 started\n', '2:attempt 2 started\nattempt 2 done\n']);
        second.kill('SIGTERM');
        assert.equal(await exited(second), 0);
      } finally {
        for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
        await r.close();
        await dbh.drop();
        fs.rmSync(work, { recursive: true, force: true });
      }
    });

    test('the API killed and restarted mid-run: no log line lost or doubled', { timeout: 120_000 }, async () => {
      const dbh = await target.create();
      const dataDir = tempDir('pier-api-');
      const storageDir = tempDir('pier-runner-storage-');
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const env = {
        ...process.env,
        PIER_DATA_DIR: dataDir,
        PIER_LOG_LEVEL: 'warn',
        RUNNER_PORT: String(port),
        RUNNER_URL: base,
        API_KEY,
        // The same setup token as the in-process runner: both instances open setup on one database.
        RUNNER_SETUP_TOKEN: SETUP_TOKEN,
        RUNNER_DATABASE_URL: dbh.url,
        RUNNER_STORAGE_DIR: storageDir,
      };
      const serve = () => spawn(process.execPath, ['bin/pier.js', 'serve', '--only', 'runner'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
      const up = async () => until(() => fetch(`${base}/api/version`).then((x) => x.ok, () => false), 'the API to answer');
      let api = serve();
      const work = tempDir('pier-executors-');
      let executor: (ChildProcess & { output: string[] }) | null = null;
      // A runner in this process on the same database, for setting up and reading (not listening).
      const local = await startRunner({ databaseUrl: dbh.url, clock: realClock, env: { RUNNER_SWEEP_SECONDS: '3600', RUNNER_STORAGE_DIR: storageDir } });
      try {
        await up();
        const f = await protocolFixture(local);
        const run = await f.start();
        // 300 numbered lines over about three seconds.
        const command = 'i=1; while [ $i -le 300 ]; do echo "line $i"; i=$((i+1)); sleep 0.01; done';
        executor = startExecutor(base, 'steady', work, command);
        const database = await openRunnerDatabase(dbh.url);
        try {
          const lines = async () =>
            Number((await database.db.selectFrom('run_logs').where('run_id', '=', run.id).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
          await until(async () => (await lines()) > 0, () => `the first log chunks: ${executor?.output.join('')}`);
          api.kill('SIGKILL');
          await exited(api);
          // Down for a moment while the command keeps writing; then back.
          await new Promise((resolve) => setTimeout(resolve, 700));
          api = serve();
          await up();
          await until(async () => (await f.run(run.id)).status === 'succeeded', 'the run to finish');
        } finally {
          await database.close();
        }
        const all: string[] = [];
        let after = '0';
        for (;;) {
          const page = (await f.inject({ method: 'GET', url: `/api/runs/${run.id}/logs?after=${after}&limit=1000`, headers: apiKey(API_KEY) })).json();
          all.push(...page.items.map((l: { text: string }) => l.text));
          if (page.items.length === 0) break;
          after = page.nextAfter;
        }
        const text = all.join('');
        assert.equal(text, Array.from({ length: 300 }, (_, i) => `line ${i + 1}\n`).join(''));
      } finally {
        if (executor && executor.exitCode === null) {
          executor.kill('SIGTERM');
          await exited(executor);
        }
        api.kill('SIGKILL');
        await exited(api);
        await local.close();
        await dbh.drop();
        fs.rmSync(work, { recursive: true, force: true });
        fs.rmSync(dataDir, { recursive: true, force: true });
        fs.rmSync(storageDir, { recursive: true, force: true });
      }
    });
  });
}

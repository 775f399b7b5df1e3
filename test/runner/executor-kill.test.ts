import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, test } from 'node:test';
import { dialects, tempDir } from '../helpers/db.js';
import { exited, protocolFixture, startExecutor } from './executor-fixtures.js';
import { API_KEY, apiKey, SETUP_TOKEN, startRunner, TestClock } from './helpers.js';

const realClock = Object.assign(new TestClock(), { now: () => new Date(), advance: () => {} });

/**
 * Waits for a condition another process brings about: bounded by a deadline rather than a number
 * of tries, so a slow check on a loaded machine does not stretch it.
 */
async function until(check: () => Promise<boolean> | boolean, what: string | (() => string), ms = 90_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
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
    test('an executor killed mid-run: the run is re-queued and finished by another executor as attempt 2', { timeout: 240_000 }, async () => {
      const dbh = await target.create();
      // Short leases so the lost executor is noticed within seconds; the sweeper runs every second.
      // Long enough that the rescuer, heartbeating every lease/3, keeps its lease on a busy machine.
      const r = await startRunner({ databaseUrl: dbh.url, clock: realClock, env: { RUNNER_LEASE_SECONDS: '4', RUNNER_SWEEP_SECONDS: '1' } });
      const base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
      const work = tempDir('pier-executors-');
      const started: ChildProcess[] = [];
      try {
        const f = await protocolFixture(r);
        const run = await f.start();
        // Attempt 1 waits for a file nobody makes (until its executor dies and its supervisor
        // kills it); attempt 2 finishes at once.
        const never = path.join(work, 'never');
        const command = `echo attempt {attempt} started; if [ {attempt} = 1 ]; then while [ ! -e ${never} ]; do sleep 0.1; done; echo never; fi; echo attempt {attempt} done`;
        const first = startExecutor(base, 'doomed', path.join(work, 'a'), command);
        started.push(first);
        await until(async () => (await f.run(run.id)).status === 'running', 'the first executor to take the run');
        const read = async () => (await f.inject({ method: 'GET', url: `/api/runs/${run.id}/logs`, headers: apiKey(API_KEY) })).json();
        await until(async () => (await read()).items.length > 0, 'the first log line');
        first.kill('SIGKILL');
        await exited(first);
        const second = startExecutor(base, 'rescuer', path.join(work, 'b'), command);
        started.push(second);
        await until(async () => (await f.run(run.id)).status === 'succeeded', () => `the run to finish on the second executor: ${second.output.join('')}`);
        const done = await f.run(run.id);
        assert.equal(done.attempt, 2);
        // Each attempt's text, whole: how its lines fall into chunks depends on the shipper's timing.
        const byAttempt = new Map<number, string>();
        for (const l of (await read()).items as { attempt: number; text: string }[]) byAttempt.set(l.attempt, (byAttempt.get(l.attempt) ?? '') + l.text);
        assert.deepEqual([...byAttempt], [[1, 'attempt 1 started\n'], [2, 'attempt 2 started\nattempt 2 done\n']]);
        second.kill('SIGTERM');
        assert.equal(await exited(second), 0);
      } finally {
        for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
        await r.close();
        await dbh.drop();
        fs.rmSync(work, { recursive: true, force: true });
      }
    });

    test('the API killed and restarted mid-run: no log line lost or doubled', { timeout: 240_000 }, async () => {
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
        const logText = async () => {
          const parts: string[] = [];
          let after = '0';
          for (;;) {
            const page = (await f.inject({ method: 'GET', url: `/api/runs/${run.id}/logs?after=${after}&limit=1000`, headers: apiKey(API_KEY) })).json();
            if (page.items.length === 0) return parts.join('');
            parts.push(...page.items.map((l: { text: string }) => l.text));
            after = page.nextAfter;
          }
        };
        // 300 numbered lines in three parts: the first before the API is killed, the second while
        // it is down (the command waits for the file `down`), the third once it is back (`back`).
        const gate = (name: string) => `while [ ! -e ${path.join(work, name)} ]; do sleep 0.05; done`;
        const lines = (from: number, to: number) => `i=${from}; while [ $i -le ${to} ]; do echo "line $i"; i=$((i+1)); done`;
        const command = [lines(1, 100), gate('down'), lines(101, 200), gate('back'), lines(201, 300)].join('; ');
        executor = startExecutor(base, 'steady', path.join(work, 'ex'), command);
        const expected = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}\n`).join('');
        await until(async () => (await logText()) === expected(100), () => `the first 100 lines: ${executor?.output.join('')}`);
        api.kill('SIGKILL');
        await exited(api);
        // The command writes on while the API is down: the executor keeps those lines.
        fs.writeFileSync(path.join(work, 'down'), '');
        api = serve();
        await up();
        fs.writeFileSync(path.join(work, 'back'), '');
        await until(async () => (await f.run(run.id)).status === 'succeeded', () => `the run to finish: ${executor?.output.join('')}`);
        assert.equal(await logText(), expected(300));
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

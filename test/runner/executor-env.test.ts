import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { randomUUID } from '../../src/infra/secrets.js';
import { tempDir } from '../helpers/db.js';
import { exited, type ProtocolFixture, protocolFixture } from './executor-fixtures.js';
import { API_KEY, apiKey, startRunner, TestClock, type TestRunner } from './helpers.js';

/** Leases and heartbeats of a real process run on the wall clock. */
const realClock = Object.assign(new TestClock(), { now: () => new Date(), advance: () => {} });

/** Waits (bounded) for a condition another process brings about. */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

// The environment variables of the runner and publishing service that hold secrets (names as
// src/infra/config.ts reads them), each with a value no command may print.
const marker = (name: string) => `secret-of-${name}-${randomUUID()}`;
const SERVICE_SECRETS: Record<string, string> = {
  JWT_SECRET: marker('JWT_SECRET'),
  RUNNER_DATABASE_URL: `postgres://runner:${marker('RUNNER_DATABASE_URL')}@db.internal/runner`,
  PIER_DATABASE_URL: `postgres://pier:${marker('PIER_DATABASE_URL')}@db.internal/pier`,
  API_KEY: marker('API_KEY'),
  PIER_DATA_DIR: `/srv/${marker('PIER_DATA_DIR')}`,
  RUNNER_STORAGE_DIR: `/srv/${marker('RUNNER_STORAGE_DIR')}`,
};
// What an operator sets for the commands on purpose.
const OPERATOR: Record<string, string> = {
  JAVA_TOOL_OPTIONS: '-Xmx2g -Dknime.operator=yes',
  HTTPS_PROXY: 'http://proxy.example:3128',
  LANG: 'C.UTF-8',
};

describe('what a command sees of the executor\'s environment', () => {
  let r: TestRunner;
  let base: string;
  let f: ProtocolFixture;
  let work: string;
  let executor: ChildProcess | undefined;

  before(async () => {
    r = await startRunner({ clock: realClock, env: { RUNNER_LEASE_SECONDS: '30', RUNNER_SWEEP_SECONDS: '1' } });
    base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
    f = await protocolFixture(r);
    work = tempDir('pier-executor-env-');
  });

  after(async () => {
    if (executor && executor.exitCode === null && executor.signalCode === null) executor.kill('SIGKILL');
    await r.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  test('an executor started beside the service: `env` prints the operator\'s variables and none of the service\'s secrets', { timeout: 120_000 }, async () => {
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PIER_EXECUTOR_') && !(k in SERVICE_SECRETS)));
    executor = spawn(process.execPath, ['bin/pier.js', 'runner', 'executor', '--url', base, '--name', 'env', '--work-dir', path.join(work, 'w'), '--command', 'env'], {
      env: { ...inherited, ...SERVICE_SECRETS, ...OPERATOR, PIER_EXECUTOR_API_KEY: API_KEY },
      stdio: 'ignore',
    });
    const run = await f.start();
    await until(async () => ['succeeded', 'failed', 'cancelled'].includes((await f.run(run.id)).status), 'the run to end');
    assert.equal((await f.run(run.id)).status, 'succeeded');
    const page = (await f.inject({ method: 'GET', url: `/api/runs/${run.id}/logs?limit=1000`, headers: apiKey(API_KEY) })).json();
    const log = page.items.map((l: { text: string }) => l.text).join('');
    const lines = log.split('\n');

    for (const [name, value] of Object.entries(OPERATOR)) assert.ok(lines.includes(`${name}=${value}`), `${name} is missing:\n${log}`);
    assert.ok(lines.some((l: string) => l.startsWith('PATH=')), log);
    assert.ok(lines.some((l: string) => l.startsWith('HOME=')), log);
    assert.ok(lines.includes(`PIER_RUN_ID=${run.id}`), log);
    for (const [name, value] of Object.entries(SERVICE_SECRETS)) {
      assert.ok(!log.includes(value), `the value of ${name} reached the command:\n${log}`);
      assert.ok(!lines.some((l: string) => l.startsWith(`${name}=`)), `${name} reached the command`);
    }
    executor.kill('SIGTERM');
    assert.equal(await exited(executor), 0);
  });
});

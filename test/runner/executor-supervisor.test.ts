import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dialects, tempDir } from '../helpers/db.js';
import { exited, type ProtocolFixture, protocolFixture, startExecutor } from './executor-fixtures.js';
import { API_KEY, apiKey, bearer, startRunner, TestClock, type TestRunner } from './helpers.js';

/** Leases and heartbeats of real processes run on the wall clock. */
const realClock = Object.assign(new TestClock(), { now: () => new Date(), advance: () => {} });

/** Waits (bounded by tries) for a condition another process brings about. */
async function until(check: () => Promise<boolean> | boolean, what: () => string, tries = 600): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`timed out waiting for ${what()}`);
}

/** Pids of the `sleep <duration>` processes running (read from /proc). */
function sleeping(duration: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      // Arguments are separated by NUL bytes there.
      argv = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (path.basename(argv[0] ?? '') === 'sleep' && argv[1] === duration) pids.push(Number(entry));
  }
  return pids;
}

/** `sleep` for a duration no other process on the machine uses: its command line identifies it. */
const markedSleep = () => `300.${String(Math.random()).slice(2, 10)}`;

const target = dialects()[0]!;

describe(`a command that kills its supervisor (${target.name})`, () => {
  let dbh: Awaited<ReturnType<typeof target.create>>;
  let r: TestRunner;
  let base: string;
  let f: ProtocolFixture;
  let work: string;
  const started: ChildProcess[] = [];
  const markers: string[] = [];

  before(async () => {
    dbh = await target.create();
    r = await startRunner({ databaseUrl: dbh.url, clock: realClock, env: { RUNNER_LEASE_SECONDS: '30', RUNNER_SWEEP_SECONDS: '1' } });
    base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
    f = await protocolFixture(r);
    work = tempDir('pier-supervisor-');
  });

  after(async () => {
    for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    for (const m of markers) for (const pid of sleeping(m)) process.kill(pid, 'SIGKILL');
    await r.close();
    await dbh.drop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  const spawnExecutor = (name: string, command: string, extra: string[] = []) => {
    const child = startExecutor(base, name, path.join(work, name), command, extra);
    started.push(child);
    return child;
  };
  const logText = async (runId: string) =>
    (await f.inject({ method: 'GET', url: `/api/runs/${runId}/logs?limit=1000`, headers: apiKey(API_KEY) })).json().items.map((l: { text: string }) => l.text).join('');

  test('kill -9 $PPID: the executor stops the command\'s processes and the run fails, saying why', { timeout: 120_000 }, async () => {
    const m = markedSleep();
    markers.push(m);
    const ex = spawnExecutor('killer', `sleep ${m} & kill -9 $PPID; sleep ${m}`);
    const run = await f.start();
    await until(async () => ['succeeded', 'failed', 'cancelled'].includes((await f.run(run.id)).status), () => `the run to end: ${ex.output.join('')}`);
    const done = await f.run(run.id);
    assert.equal(done.status, 'failed');
    assert.match(done.error ?? '', /supervisor was killed/);
    assert.match(await logText(run.id), /executor: the command's supervisor was killed; its processes were stopped\n/);
    await until(() => sleeping(m).length === 0, () => `no "sleep ${m}" left (${sleeping(m).join(', ')})`);
    ex.kill('SIGTERM');
    assert.equal(await exited(ex), 0);
  });

  test('a cancel pending when the supervisor is killed completes: the run ends cancelled, nothing of it left', { timeout: 120_000 }, async () => {
    const m = markedSleep();
    markers.push(m);
    const go = path.join(work, `go-${m}`);
    // Ignores SIGTERM (the cancel), then kills its supervisor before the grace period ends.
    const command = `trap '' TERM; echo ready; while [ ! -e ${go} ]; do sleep 0.1; done; sleep ${m} & kill -9 $PPID; sleep ${m}`;
    const ex = spawnExecutor('cancelled-killer', command, ['--kill-grace', '3600']);
    const run = await f.start();
    await until(async () => (await logText(run.id)).includes('ready'), () => ex.output.join(''));
    const cancel = await f.inject({ method: 'POST', url: `/api/runs/${run.id}/cancel`, headers: bearer(f.session) });
    assert.equal(cancel.json().status, 'cancelling', cancel.body);
    await until(() => ex.output.join('').includes('"event":"cancel"'), () => `the executor to learn of the cancel: ${ex.output.join('')}`);
    fs.writeFileSync(go, '');
    await until(async () => (await f.run(run.id)).status === 'cancelled', () => `the cancel to complete: ${ex.output.join('')}`);
    await until(() => sleeping(m).length === 0, () => `no "sleep ${m}" left (${sleeping(m).join(', ')})`);
    ex.kill('SIGTERM');
    assert.equal(await exited(ex), 0);
  });
});

import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { zipSync } from 'fflate';
import { commandEnv } from '../../src/runner/executor-agent/command-process.js';
import { cutPoint, MAX_LOG_REQUEST_BYTES, takeBatch } from '../../src/runner/executor-agent/log-shipper.js';
import { apiUrl } from '../../src/runner/executor-agent/client.js';
import { unzipInto } from '../../src/runner/executor-agent/unzip.js';
import { dialects, tempDir } from '../helpers/db.js';
import { exited, type ProtocolFixture, protocolFixture, startExecutor } from './executor-fixtures.js';
import { API_KEY, apiKey, bearer, multipart, startRunner, TestClock, type TestRunner } from './helpers.js';

/** Leases and heartbeats of real processes run on the wall clock. */
const realClock = Object.assign(new TestClock(), { now: () => new Date(), advance: () => {} });

/** Waits (bounded) for a condition another process brings about. */
async function until(check: () => Promise<boolean> | boolean, what: string | (() => string), tries = 600): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
}

/** A real `pier runner executor` process with exactly the given key settings in its environment. */
function executorWith(env: Record<string, string>, url: string, name: string, workDir: string, command: string, extra: string[] = []): ChildProcess & { output: string[] } {
  const rest = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PIER_EXECUTOR_') && k !== 'API_KEY'));
  const child = spawn(process.execPath, ['bin/pier.js', 'runner', 'executor', '--url', url, '--name', name, '--work-dir', workDir, '--command', command, ...extra], {
    env: { ...rest, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  }) as ChildProcess & { output: string[] };
  child.output = [];
  child.stdout!.setEncoding('utf8').on('data', (d: string) => child.output.push(d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => child.output.push(d));
  return child;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('executor agent units', () => {
  test('request paths are joined onto the base URL path (a runner behind a prefix)', () => {
    assert.equal(apiUrl('https://h.example/runner', '/api/executors/register').href, 'https://h.example/runner/api/executors/register');
    assert.equal(apiUrl('https://h.example/runner/', '/api/executors/x/claim?wait=20').href, 'https://h.example/runner/api/executors/x/claim?wait=20');
    assert.equal(apiUrl('http://127.0.0.1:8090', '/api/runs/a/logs').href, 'http://127.0.0.1:8090/api/runs/a/logs');
    assert.equal(apiUrl('http://127.0.0.1:8090/', '/api/x?a=1&b=2').href, 'http://127.0.0.1:8090/api/x?a=1&b=2');
  });

  test('the command environment has none of the executor settings (its admin key)', () => {
    const env = commandEnv({ PATH: '/bin', PIER_EXECUTOR_API_KEY: 'k', PIER_EXECUTOR_API_KEY_FILE: '/f', PIER_EXECUTOR_URL: 'u', API_KEY: 'k2', PIER_API_KEY: 'k3' }, { PIER_RUN_ID: 'r' });
    assert.deepEqual(env, { PATH: '/bin', PIER_RUN_ID: 'r' });
  });

  test('a chunk is never cut between the two halves of a surrogate pair', () => {
    const text = `${'x'.repeat(15_999)}😀`;
    assert.equal(cutPoint(text, 16_000), 15_999);
    assert.equal(cutPoint('ab', 1), 1);
    assert.equal(cutPoint('😀', 1), 1);
  });

  test('log batches stay within the request size however large the chunks are', () => {
    const pending = Array.from({ length: 200 }, (_, i) => ({ seq: i + 1, text: '\u0001'.repeat(16_000) }));
    const batch = takeBatch(pending, MAX_LOG_REQUEST_BYTES);
    assert.ok(batch.length >= 1 && batch.length < 200);
    assert.ok(Buffer.byteLength(JSON.stringify({ leaseToken: 'x'.repeat(64), attempt: 1, chunks: batch })) <= MAX_LOG_REQUEST_BYTES);
    assert.equal(takeBatch(pending.slice(0, 1), 10).length, 1);
  });

  test('an archive whose entries clash (a file, then a directory of the same name) is refused, not a crash', async () => {
    const dir = tempDir();
    const bad = path.join(dir, 'clash.zip');
    const enc = new TextEncoder();
    fs.writeFileSync(bad, zipSync({ 'wf/workflow.knime': enc.encode('<w/>'), 'wf/data': enc.encode('file'), 'wf/data/inner.txt': enc.encode('x') }));
    await assert.rejects(unzipInto(bad, path.join(dir, 'out')), /EEXIST|ENOTDIR|not a directory/);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

const target = dialects()[0]!;

describe(`pier runner executor against a real runner (${target.name})`, () => {
  let dbh: Awaited<ReturnType<typeof target.create>>;
  let r: TestRunner;
  let base: string;
  let f: ProtocolFixture;
  let work: string;
  const started: ChildProcess[] = [];

  before(async () => {
    dbh = await target.create();
    r = await startRunner({ databaseUrl: dbh.url, clock: realClock, env: { RUNNER_LEASE_SECONDS: '30', RUNNER_SWEEP_SECONDS: '1' } });
    base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
    f = await protocolFixture(r);
    work = tempDir('pier-executors-');
  });

  after(async () => {
    for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await r.close();
    await dbh.drop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  const logText = async (runId: string) => {
    let text = '';
    let after = '0';
    for (;;) {
      const page = (await f.inject({ method: 'GET', url: `/api/runs/${runId}/logs?after=${after}&limit=1000`, headers: apiKey(API_KEY) })).json();
      if (page.items.length === 0) return text;
      text += page.items.map((l: { text: string }) => l.text).join('');
      after = page.nextAfter;
    }
  };
  const ended = async (runId: string) => {
    await until(async () => ['succeeded', 'failed', 'cancelled'].includes((await f.run(runId)).status), `run ${runId} to end`);
    return f.run(runId);
  };

  test('the admin key reaches no command: not in its environment, nor the executor\'s command line or environment', { timeout: 120_000 }, async () => {
    // What a hostile workflow could print into a log every viewer reads.
    // The command's parent is its supervisor; the executor is the supervisor's parent.
    const parent = "EXECUTOR=$(cut -d' ' -f4 /proc/$PPID/stat); ";
    const command = parent + "env; echo; tr '\\0' ' ' < /proc/$EXECUTOR/cmdline; echo; tr '\\0' '\\n' < /proc/$EXECUTOR/environ; echo";
    const keyFile = path.join(work, 'key');
    fs.writeFileSync(keyFile, `${API_KEY}\n`, { mode: 0o600 });
    // Given by file: the key is nowhere the command can look.
    const byFile = executorWith({ PIER_EXECUTOR_API_KEY_FILE: keyFile }, base, 'by-file', path.join(work, 'f'), command);
    started.push(byFile);
    const run1 = await f.start();
    assert.equal((await ended(run1.id)).status, 'succeeded');
    const log1 = await logText(run1.id);
    assert.match(log1, /PIER_RUN_ID=/);
    assert.match(log1, /runner executor/);
    assert.ok(!log1.includes(API_KEY), 'the key shows in the log of a run');
    byFile.kill('SIGTERM');
    assert.equal(await exited(byFile), 0);

    // Given by env var: not in the command's environment nor the executor's command line. (The
    // executor's own /proc/<pid>/environ keeps what it was started with: README says to prefer
    // --api-key-file and to run commands as another user.)
    const byEnv = executorWith({ PIER_EXECUTOR_API_KEY: API_KEY }, base, 'by-env', path.join(work, 'e'), parent + "env; echo; tr '\\0' ' ' < /proc/$EXECUTOR/cmdline; echo");
    started.push(byEnv);
    const run2 = await f.start();
    assert.equal((await ended(run2.id)).status, 'succeeded');
    const log2 = await logText(run2.id);
    assert.match(log2, /PIER_RUN_ID=/);
    assert.ok(!log2.includes(API_KEY), 'the key shows in the log of a run');
    byEnv.kill('SIGTERM');
    assert.equal(await exited(byEnv), 0);

    // Given as an argument: the executor rewrites its command line.
    const byArg = executorWith({}, base, 'by-arg', path.join(work, 'a'), parent + "tr '\\0' ' ' < /proc/$EXECUTOR/cmdline; echo", ['--api-key', API_KEY]);
    started.push(byArg);
    const run3 = await f.start();
    assert.equal((await ended(run3.id)).status, 'succeeded');
    const log3 = await logText(run3.id);
    assert.match(log3, /pier runner executor/);
    assert.ok(!log3.includes(API_KEY), 'the key shows in the log of a run');
    byArg.kill('SIGTERM');
    assert.equal(await exited(byArg), 0);
  });

  test('3 MB printed at once: the run succeeds with its whole log, byte for byte; no chunk splits an emoji', { timeout: 120_000 }, async () => {
    // The emoji first: the first chunk boundary (16,000 UTF-16 units) falls inside it.
    const ex = startExecutor(base, 'big', path.join(work, 'big'), "printf '%s😀\\n' \"$(head -c 15999 /dev/zero | tr '\\0' x)\"; yes 'héllo wörld ✓ 0123456789' | head -n 100000");
    started.push(ex);
    const run = await f.start();
    const done = await ended(run.id);
    assert.equal(done.status, 'succeeded', `${done.error} ${ex.output.join('')}`);
    const expected = `${'x'.repeat(15_999)}😀\n${'héllo wörld ✓ 0123456789\n'.repeat(100_000)}`;
    const text = await logText(run.id);
    assert.equal(text.length, expected.length);
    assert.ok(text === expected, 'the stored log differs from what the command printed');
    ex.kill('SIGTERM');
    assert.equal(await exited(ex), 0);
  });

  test('an archive that cannot be unpacked fails its run with a clear error; the executor keeps going', { timeout: 120_000 }, async () => {
    const enc = new TextEncoder();
    const zip = Buffer.from(zipSync({ 'wf/workflow.knime': enc.encode('<w/>'), 'wf/data': enc.encode('file'), 'wf/data/inner.txt': enc.encode('x') }));
    const m = multipart([{ name: 'file', file: zip }]);
    const wf = await f.inject({ method: 'POST', url: `/api/projects/${f.projectId}/workflows`, headers: { ...bearer(f.session), ...m.headers }, payload: m.payload });
    assert.equal(wf.statusCode, 201, wf.body);
    const ex = startExecutor(base, 'unzip', path.join(work, 'unzip'), 'echo ran');
    started.push(ex);
    const badRun = (await f.inject({ method: 'POST', url: `/api/workflows/${wf.json().id}/runs`, headers: bearer(f.session), payload: {} })).json();
    const bad = await ended(badRun.id);
    assert.equal(bad.status, 'failed');
    assert.match(bad.error ?? '', /^executor: .*(EEXIST|ENOTDIR|not a directory)/);
    assert.equal(ex.exitCode, null, `the executor exited: ${ex.output.join('')}`);
    const good = await f.start();
    assert.equal((await ended(good.id)).status, 'succeeded');
    ex.kill('SIGTERM');
    assert.equal(await exited(ex), 0);
  });

  test('the executor removed while a command runs: the executor kills the command and exits', { timeout: 120_000 }, async () => {
    const pidFile = path.join(work, 'sleep.pid');
    const ex = startExecutor(base, 'removed', path.join(work, 'removed'), `sleep 300 & echo $! > '${pidFile}'; wait`, ['--kill-grace', '1']);
    started.push(ex);
    const run = await f.start();
    await until(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').endsWith('\n'), 'the command to start');
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    assert.ok(alive(pid));
    const { executorId } = await f.run(run.id);
    const del = await f.inject({ method: 'DELETE', url: `/api/executors/${executorId}`, headers: bearer(f.session) });
    assert.equal(del.statusCode, 204, del.body);
    // Bounded: heartbeats come every few seconds; the sleep would go on for 300.
    await until(() => ex.exitCode !== null, () => `the executor to exit: ${ex.output.join('')}`, 300);
    assert.notEqual(ex.exitCode, 0);
    await until(() => !alive(pid), 'the command to be gone', 50);
    // The runner queued the run again; not for the next test's executor.
    const cancel = await f.inject({ method: 'POST', url: `/api/runs/${run.id}/cancel`, headers: bearer(f.session) });
    assert.equal(cancel.statusCode, 200, cancel.body);
  });

  test('API down while outputs upload: two SIGTERMs and the executor exits', { timeout: 120_000 }, async () => {
    const mark = path.join(work, 'go');
    const ex = startExecutor(base, 'upload', path.join(work, 'upload'), `echo data > {out}/a.txt; touch '${mark}.started'; while [ ! -f '${mark}' ]; do sleep 0.1; done`, ['--kill-grace', '2']);
    started.push(ex);
    await f.start();
    // The command runs (archive downloaded): only the upload is left to reach the API.
    await until(() => fs.existsSync(`${mark}.started`), 'the command to start');
    await r.service.app.close();
    fs.writeFileSync(mark, '');
    await until(() => ex.output.join('').includes('outputs/a.txt'), () => `the upload to be retried: ${ex.output.join('')}`);
    ex.kill('SIGTERM');
    ex.kill('SIGTERM');
    // Bounded (the grace is 2 s; a few tries of at most a few seconds each).
    await until(() => ex.exitCode !== null, () => `the executor to exit: ${ex.output.join('')}`, 300);
  });
});

/** A proxy in front of a real runner that answers 500 to the requests `fail` picks. */
async function faultProxy(upstream: string, fail: (req: http.IncomingMessage) => boolean): Promise<http.Server> {
  const proxy = http.createServer(async (req, res) => {
    if (fail(req)) {
      req.resume();
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"status":500}');
      return;
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length', 'transfer-encoding'].includes(k))) as Record<string, string>;
    try {
      const up = await fetch(upstream + (req.url ?? ''), { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
      res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'application/octet-stream' });
      res.end(Buffer.from(await up.arrayBuffer()));
    } catch {
      res.writeHead(502).end();
    }
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return proxy;
}

describe('the same executor given its own re-queued run again (heartbeats lost longer than the lease)', () => {
  test('both attempts are tracked apart: the old one ending does not drop the new one', { timeout: 120_000 }, async () => {
    const dbh = await target.create();
    const r = await startRunner({ databaseUrl: dbh.url, clock: realClock, env: { RUNNER_LEASE_SECONDS: '2', RUNNER_SWEEP_SECONDS: '1' } });
    const upstream = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
    let blocked = false;
    const proxy = await faultProxy(upstream, (req) => blocked && /\/(heartbeat|logs)$/.test(req.url ?? ''));
    const work = tempDir('pier-executors-');
    const mark = path.join(work, 'go');
    const ex = startExecutor(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, 'twice', path.join(work, 'x'), `while [ ! -f '${mark}' ]; do echo tick {attempt}; sleep 0.3; done; echo done {attempt}`, [
      '--capacity',
      '2',
    ]);
    try {
      const f = await protocolFixture(r);
      const run = await f.start();
      await until(async () => (await f.run(run.id)).status === 'running', 'attempt 1 to run');
      blocked = true;
      // The sweeper re-queues the run; the executor (idle slot, long-poll claim) takes it again.
      await until(async () => (await f.run(run.id)).attempt === 2, 'attempt 2 to be claimed');
      await until(() => (ex.output.join('').match(/"event":"claimed"/g) ?? []).length === 2, () => `the second claim: ${ex.output.join('')}`);
      blocked = false;
      // Attempt 1 learns it lost its lease (409 on its next log batch) and is stopped.
      await until(() => ex.output.join('').includes('lease_lost'), () => `attempt 1 to be stopped: ${ex.output.join('')}`);
      // Stopping now must wait for attempt 2, which still runs.
      ex.kill('SIGTERM');
      await until(() => ex.output.join('').includes('"event":"stopping"'), 'the executor to stop claiming');
      // Had the old attempt's end dropped the new one, the executor would think it holds nothing
      // and exit at once (its heartbeat loop checks every 0.1 s), leaving attempt 2 orphaned.
      await new Promise((resolve) => setTimeout(resolve, 2000));
      assert.equal(ex.exitCode, null, `the executor exited while attempt 2 runs: ${ex.output.join('')}`);
      fs.writeFileSync(mark, '');
      await until(async () => (await f.run(run.id)).status === 'succeeded', () => `attempt 2 to finish: ${ex.output.join('')}`, 300);
      assert.equal(await exited(ex), 0);
    } finally {
      if (ex.exitCode === null) ex.kill('SIGKILL');
      await exited(ex);
      proxy.close();
      await r.close();
      await dbh.drop();
      fs.rmSync(work, { recursive: true, force: true });
    }
  });
});

describe('a runner whose log endpoint keeps failing with 500', () => {
  test('the run is failed with an error naming the cause instead of being held forever', { timeout: 120_000 }, async () => {
    const dbh = await target.create();
    const r = await startRunner({ databaseUrl: dbh.url, clock: realClock });
    const upstream = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
    // A proxy in front of the real runner that answers 500 to every log request.
    const proxy = await faultProxy(upstream, (req) => req.method === 'POST' && /\/logs$/.test(req.url ?? ''));
    const work = tempDir('pier-executors-');
    const ex = startExecutor(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, 'flaky', work, 'echo hello; sleep 300', ['--give-up', '3', '--kill-grace', '1']);
    try {
      const f = await protocolFixture(r);
      const run = await f.start();
      await until(async () => (await f.run(run.id)).status === 'failed', () => `the run to fail: ${ex.output.join('')}`);
      assert.match((await f.run(run.id)).error ?? '', /could not send the log.*giving up/);
      assert.equal(ex.exitCode, null);
    } finally {
      ex.kill('SIGKILL');
      await exited(ex);
      proxy.close();
      await r.close();
      await dbh.drop();
      fs.rmSync(work, { recursive: true, force: true });
    }
  });
});

/**
 * A command that prints without end (`yes | head -c 3G`): the executor pauses it while its log is
 * behind, stops sending once the runner's log of the attempt is full, and a cancel or a second
 * SIGTERM ends the run without shipping the backlog first.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import { PAUSE_AT_CHARS } from '../../src/runner/executor-agent/log-shipper.js';
import { logLimitMarker } from '../../src/runner/runs/log-limit.js';
import { dialects, tempDir } from '../helpers/db.js';
import { exited, type ProtocolFixture, protocolFixture, startExecutor } from './executor-fixtures.js';
import { API_KEY, apiKey, bearer, startRunner, TestClock, type TestRunner } from './helpers.js';

const realClock = Object.assign(new TestClock(), { now: () => new Date(), advance: () => {} });
const MiB = 1024 * 1024;

async function until(check: () => Promise<boolean> | boolean, what: () => string): Promise<void> {
  for (let i = 0; i < 900; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`timed out waiting for ${what()}`);
}

/**
 * A proxy in front of the runner that can hold the executor's log requests (a runner that is
 * slow to take logs) while everything else passes; counts the log requests it saw.
 */
async function logGate(target: string): Promise<{ url: string; hold(): void; release(): void; held(): number; logRequests(): number; close(): Promise<void> }> {
  const upstream = new URL(target);
  let holding = false;
  let logRequests = 0;
  const waiting: (() => void)[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    const forward = () => {
      const out = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      out.on('error', () => res.destroy());
      req.pipe(out);
    };
    const isLog = req.method === 'POST' && /\/logs$/.test(req.url ?? '');
    if (isLog) logRequests++;
    if (isLog && holding) waiting.push(forward);
    else forward();
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hold: () => {
      holding = true;
    },
    release: () => {
      holding = false;
      for (const go of waiting.splice(0)) go();
    },
    held: () => waiting.length,
    logRequests: () => logRequests,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Writes `total` bytes (0: without end) in 64 KiB lines, noting its pid and how much it wrote. */
const FLOOD = `
const fs = require('fs');
const [state, total] = [process.argv[2], Number(process.argv[3])];
// Its stdout (a socket the executor reads, through the supervisor) blocks: a write waits while
// nobody reads.
const out = 1;
fs.writeFileSync(state + '.pid', String(process.pid));
const block = Buffer.alloc(65536, 'x');
block[65535] = 10;
let written = 0;
while (total === 0 || written < total) {
  fs.writeSync(out, block);
  written += block.length;
  fs.writeFileSync(state + '.tmp', String(written));
  fs.renameSync(state + '.tmp', state);
}
`;

/** Whether the process is blocked writing to its full stdout, a pipe or a socket (Linux). */
function blockedOnPipe(pid: number): boolean {
  try {
    return /pipe_write|pipe_wait|sock_alloc_send|unix_stream_sendmsg|wait_for_unix_gc/.test(fs.readFileSync(`/proc/${pid}/wchan`, 'utf8'));
  } catch {
    return false;
  }
}

const target = dialects()[0]!;

describe(`an executor under an output flood (${target.name})`, () => {
  let dbh: Awaited<ReturnType<typeof target.create>>;
  let r: TestRunner;
  let gate: Awaited<ReturnType<typeof logGate>>;
  let f: ProtocolFixture;
  let work: string;
  let script: string;
  const started: ChildProcess[] = [];

  before(async () => {
    dbh = await target.create();
    r = await startRunner({ databaseUrl: dbh.url, clock: realClock, env: { RUNNER_LEASE_SECONDS: '3', RUNNER_SWEEP_SECONDS: '1', RUNNER_MAX_LOG_BYTES: '8M' } });
    gate = await logGate(await r.service.app.listen({ host: '127.0.0.1', port: 0 }));
    f = await protocolFixture(r);
    work = tempDir('pier-flood-');
    script = path.join(work, 'flood.cjs');
    fs.writeFileSync(script, FLOOD);
  });

  // A test that failed half-way leaves no executor to take the next test's run.
  afterEach(async () => {
    gate.release();
    for (const c of started.splice(0)) {
      if (c.exitCode === null && c.signalCode === null) {
        c.kill('SIGKILL');
        await exited(c);
      }
    }
  });

  after(async () => {
    await gate.close();
    await r.close();
    await dbh.drop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  const storedText = async (runId: string) => {
    const parts: string[] = [];
    let after = '0';
    for (;;) {
      const page = (await f.inject({ method: 'GET', url: `/api/runs/${runId}/logs?after=${after}&limit=1000`, headers: apiKey(API_KEY) })).json();
      if (page.items.length === 0) return parts.join('');
      parts.push(...page.items.map((l: { text: string }) => l.text));
      after = page.nextAfter;
    }
  };
  const ended = async (runId: string, ex: { output: string[] }) => {
    await until(async () => ['succeeded', 'failed', 'cancelled'].includes((await f.run(runId)).status), () => `run ${runId}: ${ex.output.join('').slice(-3000)}`);
    return f.run(runId);
  };
  const spawn = (name: string, total: number) => {
    const state = path.join(work, name);
    const ex = startExecutor(gate.url, name, path.join(work, `${name}-work`), `'${process.execPath}' ${script} ${state} ${total}`, ['--kill-grace', '5']);
    started.push(ex);
    const written = () => Number(fs.readFileSync(state, 'utf8'));
    const pid = () => Number(fs.readFileSync(`${state}.pid`, 'utf8'));
    return { ex, state, written, pid };
  };
  /** Waits until the command is blocked on its pipe (or, without backpressure, done writing `total`). */
  const pausedOrDone = async (c: ReturnType<typeof spawn>, total: number) =>
    until(
      () => fs.existsSync(c.state) && (blockedOnPipe(c.pid()) || (total > 0 && c.written() >= total)),
      () => `the command to be paused (${fs.existsSync(c.state) ? `${c.written()} bytes written, ${fs.readFileSync(`/proc/${c.pid()}/wchan`, 'utf8')}` : 'not started'}): ${c.ex.output.join('').slice(-2000)}`,
    );

  test('a runner slow to take the log pauses the command instead of filling the executor; once the log is full the rest is dropped, not sent', { timeout: 300_000 }, async () => {
    const total = 48 * MiB;
    gate.hold();
    const c = spawn('backpressure', total);
    const run = await f.start();
    await pausedOrDone(c, total);
    // Paused: no more than the shipper's backlog, what one read brings and the pipe's buffer.
    assert.ok(c.written() < total, 'the command wrote everything while the runner took nothing');
    assert.ok(c.written() <= PAUSE_AT_CHARS + 2 * MiB, `the command wrote ${c.written()} bytes while its log was held`);
    const before = gate.logRequests();
    gate.release();
    const done = await ended(run.id, c.ex);
    assert.equal(done.status, 'succeeded', `${done.error} ${c.ex.output.join('').slice(-2000)}`);
    assert.equal(c.written(), total);
    const text = await storedText(run.id);
    assert.ok(text.endsWith(logLimitMarker(8 * MiB)), text.slice(-200));
    assert.ok(Buffer.byteLength(text) <= 8 * MiB + 1024);
    // The runner said the log was full: the remaining 40 MiB were not sent (256 KiB per request
    // at most: sending them would take 160 more requests).
    assert.ok(gate.logRequests() - before < 80, `${gate.logRequests() - before} log requests`);
    c.ex.kill('SIGTERM');
    assert.equal(await exited(c.ex), 0);
  });

  test('a cancel ends a flooding run without sending its backlog: one line says how much was dropped', { timeout: 300_000 }, async () => {
    gate.hold();
    const c = spawn('cancel', 0);
    const run = await f.start();
    await pausedOrDone(c, 0);
    await until(() => gate.held() > 0, () => 'a log request to be held');
    const cancel = await f.inject({ method: 'POST', url: `/api/runs/${run.id}/cancel`, headers: bearer(f.session) });
    assert.equal(cancel.json().status, 'cancelling');
    // The executor hears of the cancel by its heartbeat (not held) and drops what waits.
    await until(() => !fs.existsSync(`/proc/${c.pid()}`), () => `the command to be killed: ${c.ex.output.join('').slice(-2000)}`);
    gate.release();
    const done = await ended(run.id, c.ex);
    assert.equal(done.status, 'cancelled');
    const text = await storedText(run.id);
    // The request held when the cancel came (at most 256 KiB), the line, the command's last words.
    assert.ok(Buffer.byteLength(text) < 1024 * 1024, `${Buffer.byteLength(text)} bytes stored`);
    assert.match(text, /executor: \d+ bytes of output not sent: the run was cancelled\n/);
    const dropped = Number(/executor: (\d+) bytes of output not sent/.exec(text)![1]);
    assert.ok(dropped >= PAUSE_AT_CHARS / 2, `only ${dropped} bytes dropped`);
    c.ex.kill('SIGTERM');
    assert.equal(await exited(c.ex), 0);
  });

  test('a second SIGTERM hands a flooding run back without sending its backlog', { timeout: 300_000 }, async () => {
    gate.hold();
    const c = spawn('handback', 0);
    const run = await f.start();
    await pausedOrDone(c, 0);
    await until(() => gate.held() > 0, () => 'a log request to be held');
    c.ex.kill('SIGTERM');
    await until(() => c.ex.output.join('').includes('"event":"stopping"'), () => c.ex.output.join(''));
    c.ex.kill('SIGTERM');
    await until(() => !fs.existsSync(`/proc/${c.pid()}`), () => `the command to be killed: ${c.ex.output.join('').slice(-2000)}`);
    gate.release();
    assert.equal(await exited(c.ex), 0);
    assert.match(c.ex.output.join(''), /"event":"handed_back"/);
    assert.equal((await f.run(run.id)).status, 'queued');
    const text = await storedText(run.id);
    assert.ok(Buffer.byteLength(text) < 1024 * 1024, `${Buffer.byteLength(text)} bytes stored`);
    assert.match(text, /executor: \d+ bytes of output not sent: the executor is stopping: the run goes back to the queue\n/);
    // Nothing else to run here: the run handed back stays queued.
    await f.inject({ method: 'POST', url: `/api/runs/${run.id}/cancel`, headers: bearer(f.session) });
  });
});

import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dialects, tempDir } from '../helpers/db.js';
import { exited, type ProtocolFixture, protocolFixture } from './executor-fixtures.js';
import { API_KEY, apiKey, startRunner, TestClock, type TestRunner } from './helpers.js';

/** Leases and heartbeats of real processes run on the wall clock. */
const realClock = Object.assign(new TestClock(), { now: () => new Date(), advance: () => {} });

/** Waits (bounded by tries) for a condition another process brings about. */
async function until(check: () => Promise<boolean> | boolean, what: string | (() => string), tries = 600): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
}

/** A real `pier runner executor` process with exactly the given key settings in its environment. */
function executor(env: Record<string, string>, args: string[]): ChildProcess & { output: string[] } {
  const rest = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PIER_EXECUTOR_') && k !== 'API_KEY'));
  const child = spawn(process.execPath, ['bin/pier.js', 'runner', 'executor', ...args], { env: { ...rest, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }) as ChildProcess & {
    output: string[];
  };
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

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const target = dialects()[0]!;

describe(`executor host safety: real processes (${target.name})`, () => {
  let dbh: Awaited<ReturnType<typeof target.create>>;
  let r: TestRunner;
  let base: string;
  let f: ProtocolFixture;
  let work: string;
  const started: ChildProcess[] = [];
  const spawnExecutor = (name: string, command: string, extra: string[] = [], env: Record<string, string> = { PIER_EXECUTOR_API_KEY: API_KEY }, url = base) => {
    const child = executor(env, ['--url', url, '--name', name, '--work-dir', path.join(work, name), '--command', command, ...extra]);
    started.push(child);
    return child;
  };

  before(async () => {
    dbh = await target.create();
    r = await startRunner({ databaseUrl: dbh.url, clock: realClock, env: { RUNNER_LEASE_SECONDS: '30', RUNNER_SWEEP_SECONDS: '1' } });
    base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
    f = await protocolFixture(r);
    work = tempDir('pier-host-safety-');
  });

  after(async () => {
    for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await r.close();
    await dbh.drop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  const logText = async (runId: string) => {
    const page = (await f.inject({ method: 'GET', url: `/api/runs/${runId}/logs?limit=1000`, headers: apiKey(API_KEY) })).json();
    return page.items.map((l: { text: string }) => l.text).join('');
  };
  const ended = async (runId: string) => {
    await until(async () => ['succeeded', 'failed', 'cancelled'].includes((await f.run(runId)).status), `run ${runId} to end`);
    return f.run(runId);
  };
  const registered = (child: { output: string[] }) => until(() => child.output.join('').includes('"event":"registered"'), () => `registration: ${child.output.join('')}`);

  test('a run parameter never becomes shell syntax: bare, in "…", as an argument after sh -c, in `…` and $(…) it arrives byte for byte and runs nothing', { timeout: 120_000 }, async () => {
    const canary = path.join(work, 'canary');
    fs.mkdirSync(canary);
    const value = `$(touch ${canary}/a) \`touch ${canary}/b\` '; touch ${canary}/c; ' "; touch ${canary}/d; " \\ $HOME`;
    const command = [
      `printf 'bare=%s|\\n' {param.x}`,
      `printf 'dq=%s|\\n' "v={param.x}"`,
      `sh -c 'printf "sq=v=%s|\\n" "$1"' _ {param.x}`,
      "printf 'bq=%s|\\n' \"`printf '%s' {param.x}`\"",
      `printf 'cs=%s|\\n' "$(printf '%s' "{param.x}")"`,
      // A parameter the run lacks is one empty word, not none.
      `printf 'missing=<%s><%s>|\\n' {param.missing} x`,
    ].join('; ');
    const ex = spawnExecutor('quoting', command);
    const run = await f.start({ parameters: { x: value } });
    const done = await ended(run.id);
    const log = await logText(run.id);
    assert.equal(done.status, 'succeeded', log);
    assert.equal(log, `bare=${value}|\ndq=v=${value}|\nsq=v=${value}|\nbq=${value}|\ncs=${value}|\nmissing=<><x>|\n`);
    assert.deepEqual(fs.readdirSync(canary), [], 'the parameter ran a command');
    ex.kill('SIGTERM');
    assert.equal(await exited(ex), 0);
  });

  const pidsIn = async (runId: string) => {
    let m: RegExpExecArray | null = null;
    await until(async () => {
      m = /bg=(\d+) sh=(\d+)/.exec(await logText(runId));
      return m !== null;
    }, 'the command to print its pids');
    return [Number(m![1]), Number(m![2])];
  };

  test('a SIGKILLed executor takes its command and the command\'s background children with it', { timeout: 120_000 }, async () => {
    const ex = spawnExecutor('sigkilled', 'sleep 300 & echo "bg=$! sh=$$"; sleep 300');
    const run = await f.start();
    const pids = await pidsIn(run.id);
    try {
      assert.ok(pids.every(alive));
      ex.kill('SIGKILL');
      await exited(ex);
      await until(() => !pids.some(alive), () => `the command (${pids.filter(alive).join(', ')} still running)`);
    } finally {
      for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  });

  test('a run that ended leaves nothing running: its background children are killed with it', { timeout: 120_000 }, async () => {
    const ex = spawnExecutor('background', 'sleep 300 > /dev/null 2>&1 & echo "bg=$! sh=$$"');
    const run = await f.start();
    const pids = await pidsIn(run.id);
    try {
      assert.equal((await ended(run.id)).status, 'succeeded');
      await until(() => !pids.some(alive), () => `the background child (${pids.filter(alive).join(', ')} still running)`);
    } finally {
      for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
      ex.kill('SIGTERM');
      await exited(ex);
    }
  });

  const outputs = async (runId: string) =>
    (await f.inject({ method: 'GET', url: `/api/runs/${runId}/outputs`, headers: apiKey(API_KEY) })).json().items.map((o: { name: string }) => o.name).sort();

  test('an output directory replaced by a symbolic link uploads nothing: the run fails and says why', { timeout: 120_000 }, async () => {
    const secrets = path.join(work, 'secrets');
    fs.mkdirSync(secrets);
    fs.writeFileSync(path.join(secrets, 'executor.key'), API_KEY, { mode: 0o600 });
    const ex = spawnExecutor('swapped-out', `rm -rf {out} && ln -s ${secrets} {out}`);
    const run = await f.start();
    const done = await ended(run.id);
    assert.equal(done.status, 'failed');
    assert.match(done.error ?? '', /output directory .*symbolic link/);
    assert.deepEqual(await outputs(run.id), []);
    ex.kill('SIGTERM');
    assert.equal(await exited(ex), 0);
  });

  test('symbolic links and other non-regular files inside the output directory are skipped, each with a log line', { timeout: 120_000 }, async () => {
    const secrets = path.join(work, 'secrets-2');
    fs.mkdirSync(secrets);
    fs.writeFileSync(path.join(secrets, 'executor.key'), API_KEY, { mode: 0o600 });
    const ex = spawnExecutor('links-in-out', `echo result > {out}/real.txt; ln -s ${secrets}/executor.key {out}/key.txt; ln -s ${secrets} {out}/dir; mkfifo {out}/fifo`);
    const run = await f.start();
    const done = await ended(run.id);
    const log = await logText(run.id);
    assert.equal(done.status, 'succeeded', log);
    assert.deepEqual(await outputs(run.id), ['real.txt']);
    for (const name of ['key.txt', 'dir', 'fifo']) assert.match(log, new RegExp(`output "${name}" skipped: not a regular file`));
    ex.kill('SIGTERM');
    assert.equal(await exited(ex), 0);
  });

  test('--api-key=KEY and --api-key KEY: the key is not in /proc/<pid>/cmdline of the executor', { timeout: 120_000 }, async () => {
    for (const form of [[`--api-key=${API_KEY}`], ['--api-key', API_KEY]]) {
      const ex = spawnExecutor(`cmdline-${form.length}`, 'true', form, {});
      await registered(ex);
      const cmdline = fs.readFileSync(`/proc/${ex.pid}/cmdline`, 'utf8');
      assert.ok(!cmdline.includes(API_KEY), `the key shows in the command line (${form.length === 1 ? '=' : 'separate'} form): ${cmdline}`);
      assert.match(cmdline, /pier runner executor/);
      ex.kill('SIGTERM');
      assert.equal(await exited(ex), 0);
    }
  });

  test('--api-key=KEY under a parent that shows it (as npx does): the executor warns, naming that process, and never prints the key', { timeout: 120_000 }, async () => {
    // `sh -c '… & wait'` stays alive as the executor's parent with the key in its own command line.
    const line = `"${process.execPath}" bin/pier.js runner executor --url ${base} --name shown --work-dir ${path.join(work, 'shown')} --command true --api-key=${API_KEY} & echo "child=$!"; wait`;
    const sh = spawn('/bin/sh', ['-c', line], { env: { ...process.env, PIER_EXECUTOR_API_KEY: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    started.push(sh);
    const output: string[] = [];
    sh.stdout.on('data', (c: Buffer) => output.push(c.toString()));
    sh.stderr.on('data', (c: Buffer) => output.push(c.toString()));
    await registered({ output });
    const text = output.join('');
    assert.match(text, new RegExp(`warning: the admin key stays readable .* process ${sh.pid} `));
    assert.match(text, /--api-key-file/);
    assert.ok(!text.includes(API_KEY), 'the warning shows the key');
    // Given as a file, nothing is shown and nothing is said.
    const keyFile = path.join(work, 'key');
    fs.writeFileSync(keyFile, API_KEY, { mode: 0o600 });
    const quiet = spawnExecutor('unshown', 'true', ['--api-key-file', keyFile], {});
    await registered(quiet);
    assert.doesNotMatch(quiet.output.join(''), /warning: the admin key/);
    quiet.kill('SIGTERM');
    assert.equal(await exited(quiet), 0);
    process.kill(Number(/child=(\d+)/.exec(text)![1]), 'SIGTERM');
    assert.equal(await exited(sh), 0);
  });

  test('a drained executor stops claiming: the claims after the drain are counted, not timed', { timeout: 120_000 }, async () => {
    // A counting proxy in front of the runner sees every claim the executor sends.
    let draining = false;
    let claimsAfterDrain = 0;
    let heartbeats = 0;
    const proxy = http.createServer((req, res) => {
      if (/\/heartbeat$/.test(req.url ?? '')) res.once('finish', () => heartbeats++);
      if (draining && req.method === 'POST' && /\/claim(\?|$)/.test(req.url ?? '')) claimsAfterDrain++;
      const upstream = http.request(new URL(req.url ?? '/', base), { method: req.method, headers: req.headers }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxied = `http://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
    try {
      const ex = spawnExecutor('drained', 'true', [], { PIER_EXECUTOR_API_KEY: API_KEY }, proxied);
      await registered(ex);
      const id = /"executorId":"([^"]+)"/.exec(ex.output.join(''))![1]!;
      // Drained between two heartbeats: only the claim answer can tell the executor at once.
      await until(() => heartbeats > 0 && r.service.queue.waiting > 0, 'the first heartbeat and a waiting claim');
      draining = true;
      assert.equal((await f.inject({ method: 'POST', url: `/api/executors/${id}/drain`, headers: apiKey(API_KEY) })).statusCode, 200);
      assert.equal(await exited(ex), 0);
      assert.match(ex.output.join(''), /"event":"drained"/);
      // The claim waiting when the drain came, and at most one more, answered "draining".
      assert.ok(claimsAfterDrain <= 2, `${claimsAfterDrain} claims after the drain`);
    } finally {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});

test('pier runner executor refuses a template that hands a placeholder to a second reading, naming it, before it registers', { timeout: 60_000 }, async () => {
  const work = tempDir('pier-refused-template-');
  try {
    for (const [command, why] of [
      ["sh -c 'echo {param.x}'", /\{param\.x\} stands inside '…'/],
      ['trap "rm -f {out}/x" EXIT; true', /\{out\} is an argument of trap/],
      ['[[ {param.n} -gt 3 ]]', /\[\[ … \]\]/],
    ] as const) {
      // The URL points nowhere: the template is refused before any request.
      const ex = executor({ PIER_EXECUTOR_API_KEY: API_KEY }, ['--url', 'http://127.0.0.1:9', '--name', 'refused', '--work-dir', work, '--command', command]);
      assert.notEqual(await exited(ex), 0);
      const out = ex.output.join('');
      assert.match(out, /--command: the placeholder/, out);
      assert.match(out, why, out);
      assert.match(out, /PIER_PARAM_<name>/, out);
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
});

describe('a runner without API_KEY', () => {
  test('pier runner executor says the runner has no admin key configured, and how to set one', { timeout: 120_000 }, async () => {
    const dbh = await target.create();
    const r = await startRunner({ databaseUrl: dbh.url, clock: realClock, apiKey: null });
    const base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
    const work = tempDir('pier-no-key-');
    try {
      const ex = executor({ PIER_EXECUTOR_API_KEY: API_KEY }, ['--url', base, '--name', 'keyless', '--work-dir', work, '--command', 'true']);
      assert.notEqual(await exited(ex), 0);
      const out = ex.output.join('');
      assert.match(out, /no admin key configured/, out);
      assert.match(out, /API_KEY/, out);
      assert.doesNotMatch(out, /is not valid/, out);
    } finally {
      await r.close();
      await dbh.drop();
      fs.rmSync(work, { recursive: true, force: true });
    }
  });

  test('pier serve says at start that the runner has no admin key configured', { timeout: 120_000 }, async () => {
    const dbh = await target.create();
    const dataDir = tempDir('pier-serve-');
    const port = await freePort();
    const rest = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'API_KEY'));
    const serve = spawn(process.execPath, ['bin/pier.js', 'serve', '--only', 'runner'], {
      env: { ...rest, PIER_DATA_DIR: dataDir, PIER_LOG_LEVEL: 'warn', RUNNER_PORT: String(port), RUNNER_URL: `http://127.0.0.1:${port}`, RUNNER_DATABASE_URL: dbh.url },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    serve.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d;
    });
    try {
      await until(() => err.includes('Next steps'), () => `the runner to start: ${err}`);
      // Said once, in the start summary's next steps.
      assert.equal(err.match(/no admin key configured/g)?.length, 1, err);
      assert.match(err, /API_KEY/);
    } finally {
      serve.kill('SIGTERM');
      await exited(serve);
      await dbh.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});


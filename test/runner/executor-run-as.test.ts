/**
 * The separate-user set-up, for real (docs/runner.md "Commands as their own users"): the
 * executor runs as root and runs each command as a throwaway Unix user made here with `useradd`
 * (`--run-as`). What one run leaves behind must not reach the executor's files, the next run's
 * folder, another project's outputs or the cached archives.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import { processesOf } from '../../src/runner/executor-agent/run-user.js';
import { randomId } from '../../src/infra/secrets.js';
import { dialects, tempDir } from '../helpers/db.js';
import { IN_CI } from '../helpers/tools.js';
import { exited, type ProtocolFixture, protocolFixture, startExecutor } from './executor-fixtures.js';
import { API_KEY, apiKey, bearer, makeZipOf, multipart, startRunner, TestClock, type TestRunner } from './helpers.js';

const realClock = Object.assign(new TestClock(), { now: () => new Date(), advance: () => {} });
const isRoot = process.getuid?.() === 0;
if (!isRoot && IN_CI) throw new Error('CI runs the tests as root: the separate-user executor tests need it');
const skip = isRoot ? false : 'needs root (useradd, and an executor that switches users)';

async function until(check: () => Promise<boolean> | boolean, what: () => string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`timed out waiting for ${what()}`);
}

interface TestUser {
  name: string;
  uid: number;
}

/** A throwaway system user (no home, no login shell). */
function addUser(): TestUser {
  const name = `piert${randomId(4).toLowerCase().replace(/[^a-z0-9]/g, 'x')}`;
  execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', name]);
  return { name, uid: Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim()) };
}

const target = dialects()[0]!;

describe(`an executor running commands as other users (${target.name})`, { skip }, () => {
  let dbh: Awaited<ReturnType<typeof target.create>>;
  let r: TestRunner;
  let base: string;
  let work: string;
  /** A folder every user may write: how the test tells a process what to attack. */
  let board: string;
  /** Stands for the root-only folder the executor's key file sits in. */
  let rootOnly: string;
  const users: TestUser[] = [];
  const started: ChildProcess[] = [];

  before(async () => {
    dbh = await target.create();
    r = await startRunner({ databaseUrl: dbh.url, clock: realClock, env: { RUNNER_LEASE_SECONDS: '30', RUNNER_SWEEP_SECONDS: '1' } });
    base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
    work = tempDir('pier-run-as-');
    // The command users pass through to their run folders; they may list nothing on the way.
    fs.chmodSync(work, 0o711);
    board = path.join(work, 'board');
    fs.mkdirSync(board);
    fs.chmodSync(board, 0o1777);
    rootOnly = path.join(work, 'root-only');
    fs.mkdirSync(rootOnly, { mode: 0o700 });
    fs.writeFileSync(path.join(rootOnly, 'executor.key'), 'the admin key');
    users.push(addUser(), addUser());
    // The administrator every test signs in as.
    await protocolFixture(r);
  });

  // A test that failed half-way leaves no executor to take the next test's runs.
  afterEach(async () => {
    for (const c of started.splice(0)) {
      if (c.exitCode === null && c.signalCode === null) {
        c.kill('SIGKILL');
        await exited(c);
      }
    }
  });

  after(async () => {
    for (const u of users) {
      try {
        execFileSync('pkill', ['-KILL', '-u', u.name]);
      } catch {
        // none left: as it should be
      }
      execFileSync('userdel', [u.name]);
    }
    await r.close();
    await dbh.drop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  const logText = async (f: ProtocolFixture, runId: string) =>
    (await f.inject({ method: 'GET', url: `/api/runs/${runId}/logs?limit=1000`, headers: apiKey(API_KEY) })).json().items.map((l: { text: string }) => l.text).join('');
  const ended = async (f: ProtocolFixture, runId: string, ex: { output: string[] }) => {
    await until(async () => ['succeeded', 'failed', 'cancelled'].includes((await f.run(runId)).status), () => `run ${runId}: ${ex.output.join('')}`);
    return f.run(runId);
  };
  /** Uploads a new version of the fixture's workflow made of these files. */
  const upload = async (f: ProtocolFixture, files: [string, string][]) => {
    const m = multipart([{ name: 'file', file: makeZipOf(files) }]);
    const res = await f.inject({ method: 'POST', url: `/api/workflows/${f.workflowId}/versions`, headers: { ...bearer(f.session), ...m.headers }, payload: m.payload });
    assert.equal(res.statusCode, 201, res.body);
  };
  /**
   * Shell text that leaves `loop` running out of the command's process group (setsid) and ends
   * only once it runs: it notes its pid on the board first, so the run cannot end before it is
   * established (killed with the group while still starting).
   */
  const leaveRunning = (name: string, loop: string) => {
    const pidFile = path.join(board, `${name}.pid`);
    return `setsid sh -c 'echo $$ > ${pidFile}; ${loop}' </dev/null >/dev/null 2>&1 & while [ ! -s ${pidFile} ]; do sleep 0.05; done; echo planted`;
  };
  const planted = (name: string) => Number(fs.readFileSync(path.join(board, `${name}.pid`), 'utf8'));
  /** Running, not just a zombie waiting for whoever adopted it to reap it. */
  const alive = (pid: number) => {
    try {
      return !/^State:\s+[ZX]/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    } catch {
      return false;
    }
  };
  const spawnExecutor = (name: string, command: string, runAs: string[]) => {
    const ex = startExecutor(base, name, path.join(work, name), command, ['--run-as', runAs.join(','), '--capacity', String(runAs.length), '--kill-grace', '1']);
    started.push(ex);
    return ex;
  };

  test('a process left by one run is ended with it: it cannot swap a folder of the next run for a link while its archive is unpacked', { timeout: 180_000 }, async () => {
    const f = await protocolFixture(r, false);
    const user = users[0]!;
    const runs = path.join(work, 'unpack', 'runs');
    // Left running by mode=plant (setsid: out of the command's process group), it watches for
    // run folders and puts a link to the root-only folder where their archive has the directory d/.
    const attacker = `while :; do for w in ${runs}/*/workflow/workflow; do [ -L "$w/d" ] || { rm -rf "$w/d"; ln -s ${rootOnly} "$w/d"; }; done 2>/dev/null; sleep 0.01; done`;
    const command = [
      'case {param.mode} in',
      `plant) ${leaveRunning('unpack', attacker)} ;;`,
      'look) echo "uid=$(id -u) folder=$(stat -c %u:%a {workdir}) home=$HOME"',
      `  ls {workdir}/.. >/dev/null 2>&1 && echo runs:listed || echo runs:denied`,
      `  cat {workdir}/../../archives/* >/dev/null 2>&1 && echo archives:read || echo archives:denied`,
      `  cat ${rootOnly}/executor.key >/dev/null 2>&1 && echo key:read || echo key:denied`,
      '  echo "owned=$(cat {workflow}/workflow/d/owned.txt)" ;;',
      'esac',
    ].join('\n');
    // Many entries before d/: unpacking takes long enough for a process watching to step in.
    await upload(f, [
      ['workflow/workflow.knime', '<workflow/>'],
      ...Array.from({ length: 400 }, (_, i): [string, string] => [`workflow/node ${i}/settings.xml`, `<config n="${i}"/>`]),
      ['workflow/d/owned.txt', 'from the archive'],
    ]);
    const ex = spawnExecutor('unpack', command, [user.name]);
    const plant = await f.start({ parameters: { mode: 'plant' } });
    const first = await ended(f, plant.id, ex);
    assert.equal(first.status, 'succeeded', `${first.error} ${await logText(f, plant.id)} ${ex.output.join('')}`);
    assert.equal(await logText(f, plant.id), 'planted\n');
    // The run is over: so is every process of its user, the one it left running included.
    assert.ok(!alive(planted('unpack')), 'the process left behind still runs');
    assert.deepEqual(await processesOf(user.uid), [], 'a process of the command user outlived its run');
    assert.match(ex.output.join(''), new RegExp(`"event":"user_processes_ended","runId":"${plant.id}","user":"${user.name}"`));
    const look = await f.start({ parameters: { mode: 'look' } });
    const second = await ended(f, look.id, ex);
    const log = await logText(f, look.id);
    assert.equal(second.status, 'succeeded', `${second.error} ${log}`);
    assert.equal(log, `uid=${user.uid} folder=${user.uid}:700 home=${path.join(runs, `${look.id}-1`, 'home')}\nruns:denied\narchives:denied\nkey:denied\nowned=from the archive\n`);
    // Nothing was written through a link into the root-only folder.
    assert.deepEqual(fs.readdirSync(rootOnly), ['executor.key']);
    ex.kill('SIGTERM');
    assert.equal(await exited(ex), 0);
    assert.deepEqual(await processesOf(user.uid), []);
  });

  test("projects apart: a process left by one project's run cannot rewrite another's output; a run cannot read another's folder or the cached archives", { timeout: 180_000 }, async () => {
    const mine = await protocolFixture(r, false);
    const theirs = await protocolFixture(r, false);
    const runs = path.join(work, 'projects', 'runs');
    // Left by project M's run: rewrites whatever result.txt of the run it is told about it can.
    const attacker = `while :; do id=$(cat ${board}/victim 2>/dev/null); [ -n "$id" ] && for f in ${runs}/$id-*/out/result.txt; do echo forged > "$f" 2>/dev/null; done; sleep 0.01; done`;
    const command = [
      'case {param.mode} in',
      `plant) ${leaveRunning('projects', attacker)} ;;`,
      // Project A's run: its result, kept for a while (a forgery would show), then printed.
      'genuine) echo genuine > {out}/result.txt; touch ' + `${board}/a-wrote` + '; i=0; while [ $i -lt 30 ] && [ "$(cat {out}/result.txt)" = genuine ]; do sleep 0.1; i=$((i+1)); done; cat {out}/result.txt ;;',
      // Project M's run at the same time, as the other user: it knows where A's run is.
      `peek) while [ ! -e ${board}/a-wrote ]; do sleep 0.05; done; id=$(cat ${board}/victim)`,
      `  (echo forged > ${runs}/$id-1/out/result.txt) 2>/dev/null && echo write:done || echo write:denied`,
      `  cat ${runs}/$id-1/workflow.knwf >/dev/null 2>&1 && echo folder:read || echo folder:denied`,
      `  cat ${path.join(work, 'projects', 'archives')}/* >/dev/null 2>&1 && echo archives:read || echo archives:denied ;;`,
      'esac',
    ].join('\n');
    const ex = spawnExecutor('projects', command, users.map((u) => u.name));
    const plant = await mine.start({ parameters: { mode: 'plant' } });
    assert.equal((await ended(mine, plant.id, ex)).status, 'succeeded');
    assert.ok(!alive(planted('projects')), 'the process left behind still runs');
    for (const u of users) assert.deepEqual(await processesOf(u.uid), [], `${u.name} still runs a process after the run ended`);
    // Project A's run, and a run of M alongside it (capacity 2: each has a user of its own).
    const genuine = await theirs.start({ parameters: { mode: 'genuine' } });
    fs.writeFileSync(path.join(board, 'victim'), genuine.id);
    const peek = await mine.start({ parameters: { mode: 'peek' } });
    const a = await ended(theirs, genuine.id, ex);
    const m = await ended(mine, peek.id, ex);
    assert.equal(a.status, 'succeeded', `${a.error} ${ex.output.join('')}`);
    assert.equal(m.status, 'succeeded', `${m.error} ${ex.output.join('')}`);
    assert.equal(await logText(theirs, genuine.id), 'genuine\n');
    const output = await theirs.inject({ method: 'GET', url: `/api/runs/${genuine.id}/outputs/result.txt`, headers: bearer(theirs.session) });
    assert.equal(output.statusCode, 200);
    assert.equal(output.body, 'genuine\n');
    assert.equal(await logText(mine, peek.id), 'write:denied\nfolder:denied\narchives:denied\n');
    ex.kill('SIGTERM');
    assert.equal(await exited(ex), 0);
    for (const u of users) assert.deepEqual(await processesOf(u.uid), []);
  });

  test('--run-as is refused without a user for each run at once, or with root, or an unknown user', { timeout: 60_000 }, async () => {
    const cases: [string[], RegExp][] = [
      [['--run-as', users[0]!.name, '--capacity', '2'], /--run-as names 1 user\(s\) but --capacity is 2/],
      [['--run-as', 'root'], /--run-as: root is root/],
      [['--run-as', 'no-such-user-here'], /--run-as: there is no user no-such-user-here/],
    ];
    for (const [args, message] of cases) {
      const ex = startExecutor(base, 'refused', path.join(work, 'refused'), 'true', args);
      assert.equal(await exited(ex), 1);
      assert.match(ex.output.join(''), message);
    }
  });
});

import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { ArchiveCache } from './archive-cache.js';
import { ApiError, type Logger, RunnerClient } from './client.js';
import { type CommandExit, commandEnv, commandExit, killGroup, running, SUPERVISOR, SUPERVISOR_KILLED, signalGroup } from './command-process.js';
import { GIVE_UP_MS, LogShipper } from './log-shipper.js';
import { uploadOutputs } from './output-upload.js';
import { ARITHMETIC_WARNING, type CommandShell, defaultShell, inspectShell } from './shell.js';
import { readExecutorState, writeExecutorState } from './state-file.js';
import { compileTemplate, parameterNames, templateEnv } from './template.js';
import { unzipInto } from './unzip.js';

export interface AgentOptions {
  url: string;
  apiKey: string;
  name: string;
  labels: string[];
  capacity: number;
  workDir: string;
  command: string;
  /** Seconds between SIGTERM and SIGKILL when a run is cancelled or the executor stops. */
  killGraceSeconds: number;
  log: Logger;
  /** How long a log batch or the final report may keep failing before the run fails (default 2 min). */
  giveUpMs?: number;
  /**
   * Where the executor keeps its id across restarts (`--state-file`): a restarted process
   * registers again as the same executor instead of leaving a stale one listed.
   */
  stateFile?: string;
  /**
   * The shell that runs each command (`--shell`): default /bin/dash where it exists, else
   * /bin/sh (see shell.ts: bash evaluates variable contents reaching arithmetic).
   */
  shell?: string;
}

interface ClaimAnswer {
  run: { id: string; workflowId: string; workflowVersion: number; parameters: Record<string, unknown> };
  lease: { token: string; attempt: number };
  nextLogSeq: number;
  download: string;
}

interface HeartbeatAnswer {
  cancel: string[];
  drain: boolean;
  heartbeatMs: number;
}

interface ActiveRun {
  id: string;
  attempt: number;
  child: ChildProcess | null;
  cancelled: boolean;
  /** Set when the executor stops and hands the run back. */
  handBack: boolean;
  /** Set when the run must fail on the executor's side (its log cannot be delivered). */
  failure: string | null;
  killTimer?: NodeJS.Timeout;
  done: Promise<void>;
}

/**
 * `pier runner executor`: registers, heartbeats, claims with long-poll, runs the command template
 * for each run, streams its output as numbered log chunks, uploads `<run dir>/out/*`, reports
 * the exit status; kills cancelled runs (SIGTERM, then SIGKILL after the grace period); drains;
 * rides out API outages. The only state it keeps on disk is its id (with `stateFile`): a
 * restarted executor registers again as itself (or anew without one), and the runner re-queues
 * what the old process held.
 */
export class ExecutorAgent {
  readonly #client: RunnerClient;
  /**
   * Runs held, keyed by run id and attempt: after a long outage the runner may hand this executor
   * its own re-queued run again, and the old attempt must not overwrite or remove the new one.
   */
  readonly #active = new Map<string, ActiveRun>();
  #id = '';
  #heartbeatMs = 10_000;
  #stopping = false;
  #draining = false;
  #fatal: Error | null = null;
  #claimAbort = new AbortController();
  #slotFreed: (() => void) | null = null;
  readonly #archives: ArchiveCache;
  /** The command for the shell: placeholders are references to the variables of `templateEnv`. */
  readonly #command: string;
  readonly #parameterNames: string[];
  readonly #shell: CommandShell;

  constructor(private readonly o: AgentOptions) {
    this.#command = compileTemplate(o.command);
    this.#parameterNames = parameterNames(o.command);
    this.#shell = inspectShell(o.shell ?? defaultShell());
    this.#client = new RunnerClient({ url: o.url, apiKey: o.apiKey, log: o.log, stopping: () => this.#stopping });
    this.#archives = new ArchiveCache(this.#client, path.join(o.workDir, 'archives'), o.log);
  }

  get id(): string {
    return this.#id;
  }

  /**
   * First SIGTERM: claim nothing more, let the runs held finish, then exit. Second: kill them and
   * hand them back to the queue for another executor.
   */
  stop(): void {
    if (this.#stopping) {
      this.o.log('stopping_now', { handBack: [...this.#active.values()].map((r) => r.id) });
      for (const run of this.#active.values()) {
        run.handBack = true;
        this.#kill(run);
      }
      return;
    }
    this.#stopping = true;
    this.o.log('stopping', { running: this.#active.size });
    this.#claimAbort.abort();
    this.#slotFreed?.();
  }

  /**
   * Ends every command this executor started (SIGTERM to its process group, SIGKILL after the
   * grace period) and resolves once they are gone: called on every exit path, so no command
   * keeps running after the executor while the runner gives its run to another executor.
   */
  async killAll(): Promise<void> {
    const children = [...this.#active.values()].map((r) => r.child).filter((c): c is ChildProcess => !!c && running(c));
    for (const child of children) signalGroup(child, 'SIGTERM');
    const deadline = Date.now() + this.o.killGraceSeconds * 1000;
    while (Date.now() < deadline && children.some(running)) await sleep(50);
    for (const child of children) signalGroup(child, 'SIGKILL');
  }

  /**
   * Synchronous last resort (a fatal error): SIGKILL every command's process group now. The
   * supervisors kill them anyway once this process has exited and their control pipes close.
   */
  killAllNow(): void {
    for (const run of this.#active.values()) if (run.child) signalGroup(run.child, 'SIGKILL');
  }

  /** The shell commands run with, and whether it evaluates values reaching arithmetic. */
  get shell(): CommandShell {
    return this.#shell;
  }

  async run(): Promise<void> {
    fs.mkdirSync(this.o.workDir, { recursive: true });
    // The start line names the shell; one that evaluates variable contents as arithmetic (bash,
    // ksh, zsh) makes a value reaching arithmetic code, which no check of the template can see.
    const sh = this.#shell;
    this.o.log('started', { shell: sh.path, shellKind: sh.kind, ...(sh.evaluatesValues ? { warning: `${sh.path} is ${sh.kind}: ${ARITHMETIC_WARNING}` } : {}) });
    await this.#register();
    const heartbeats = this.#heartbeatLoop();
    while (!this.#stopping && !this.#draining && !this.#fatal) {
      if (this.#active.size >= this.o.capacity) {
        await new Promise<void>((resolve) => {
          this.#slotFreed = resolve;
        });
        this.#slotFreed = null;
        continue;
      }
      let claim: ClaimAnswer | null = null;
      try {
        const res = await this.#client.request('POST', `/api/executors/${this.#id}/claim?wait=20`, undefined, { signal: this.#claimAbort.signal });
        claim = res.status === 200 ? ((await res.json()) as ClaimAnswer) : null;
      } catch (e) {
        if (this.#stopping || this.#fatal) break;
        if (e instanceof ApiError && e.status === 404) this.#fail(new Error('the runner no longer knows this executor (removed?)'));
        else if (e instanceof ApiError && e.code === 'executor_draining') this.#drain();
        else {
          this.o.log('claim_failed', { error: (e as Error).message });
          await sleep(1000);
        }
        continue;
      }
      if (claim) this.#start(claim);
    }
    if (this.#fatal) {
      this.#stopping = true;
      await this.killAll();
      throw this.#fatal;
    }
    await Promise.all([...this.#active.values()].map((r) => r.done));
    this.#stopping = true;
    await heartbeats;
    this.o.log(this.#draining ? 'drained' : 'stopped', { executorId: this.#id });
  }

  /**
   * Registers; with a state file, as the executor it names when the runner still knows it (a
   * restart is not a new executor), else anew, keeping the new id there.
   */
  async #register(): Promise<void> {
    const body = { name: this.o.name, labels: this.o.labels, capacity: this.o.capacity };
    const file = this.o.stateFile;
    const saved = file ? readExecutorState(file) : null;
    if (saved) {
      try {
        this.#id = (await this.#client.json<{ id: string }>('POST', `/api/executors/${saved}/register`, body)).id;
        this.o.log('registered', { executorId: this.#id, again: true, ...body });
        return;
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 404)) throw e;
        this.o.log('state_unknown', { executorId: saved, stateFile: file, detail: 'the runner no longer knows this executor: registering anew' });
      }
    }
    this.#id = (await this.#client.json<{ id: string }>('POST', '/api/executors/register', body)).id;
    if (file) writeExecutorState(file, this.#id);
    this.o.log('registered', { executorId: this.#id, again: false, ...body });
  }

  /** Ends the executor: the main loop kills what runs and `run()` throws `e`. */
  #fail(e: Error): void {
    if (this.#fatal) return;
    this.#fatal = e;
    this.#claimAbort.abort();
    this.#slotFreed?.();
  }

  async #heartbeatLoop(): Promise<void> {
    while (!(this.#stopping && this.#active.size === 0) && !this.#fatal) {
      let ok = false;
      try {
        const runs = [...new Set([...this.#active.values()].map((r) => r.id))];
        const hb = await this.#client.json<HeartbeatAnswer>('POST', `/api/executors/${this.#id}/heartbeat`, { runs }, { retry: false });
        this.#heartbeatMs = hb.heartbeatMs;
        ok = true;
        for (const id of hb.cancel) {
          for (const run of this.#active.values()) {
            if (run.id !== id || run.cancelled) continue;
            this.o.log('cancel', { runId: id });
            run.cancelled = true;
            this.#kill(run);
          }
        }
        if (hb.drain) this.#drain();
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) {
          this.#fail(new Error('the runner no longer knows this executor (removed?)'));
          return;
        }
        this.o.log('heartbeat_failed', { error: (e as Error).message });
      }
      // A missed heartbeat is tried again within a second: waiting a whole interval (10 s before
      // the runner first said how often) could let the leases of the runs held lapse.
      await this.#pause(ok ? Math.min(this.#heartbeatMs, 10_000) : Math.min(this.#heartbeatMs, 1000));
    }
  }

  /** Told to drain (by a heartbeat or a claim's answer): claim nothing more, finish what runs, exit. */
  #drain(): void {
    if (this.#draining) return;
    this.#draining = true;
    this.o.log('draining', { running: this.#active.size });
    this.#claimAbort.abort();
    this.#slotFreed?.();
  }

  /** Sleeps, but wakes early once the executor stops with nothing left to run. */
  async #pause(ms: number): Promise<void> {
    const step = 100;
    for (let t = 0; t < ms; t += step) {
      if ((this.#stopping && this.#active.size === 0) || this.#fatal) return;
      await sleep(step);
    }
  }

  #kill(run: ActiveRun): void {
    const child = run.child;
    if (!child || !running(child)) return;
    // The command runs in its own process group: the shell and everything it started get it.
    signalGroup(child, 'SIGTERM');
    clearTimeout(run.killTimer);
    run.killTimer = setTimeout(() => signalGroup(child, 'SIGKILL'), this.o.killGraceSeconds * 1000);
    run.killTimer.unref();
  }

  #start(claim: ClaimAnswer): void {
    const run: ActiveRun = { id: claim.run.id, attempt: claim.lease.attempt, child: null, cancelled: false, handBack: false, failure: null, done: Promise.resolve() };
    const key = `${run.id}#${run.attempt}`;
    this.#active.set(key, run);
    this.o.log('claimed', { runId: run.id, attempt: claim.lease.attempt });
    run.done = this.#execute(claim, run)
      .catch((e) => this.o.log('run_error', { runId: run.id, error: (e as Error).message }))
      .finally(() => {
        clearTimeout(run.killTimer);
        if (this.#active.get(key) === run) this.#active.delete(key);
        this.#slotFreed?.();
      });
  }

  async #execute(claim: ClaimAnswer, run: ActiveRun): Promise<void> {
    const lease = { leaseToken: claim.lease.token, attempt: claim.lease.attempt };
    const runDir = path.join(this.o.workDir, 'runs', `${run.id}-${lease.attempt}`);
    const workflowDir = path.join(runDir, 'workflow');
    const outDir = path.join(runDir, 'out');
    fs.rmSync(runDir, { recursive: true, force: true });
    fs.mkdirSync(outDir, { recursive: true });
    // Where {out} really is, fixed before the command runs: it must still be there afterwards.
    const realOutDir = fs.realpathSync(outDir);
    const shipper = new LogShipper(
      this.#client,
      run.id,
      lease,
      () => {
        // The run is no longer ours (re-queued after an outage, or ended): stop it.
        this.o.log('lease_lost', { runId: run.id });
        run.cancelled = true;
        this.#kill(run);
      },
      (why) => {
        this.o.log('log_failed', { runId: run.id, error: why });
        run.failure = why;
        this.#kill(run);
      },
      this.o.giveUpMs,
    );
    try {
      const archive = path.join(runDir, 'workflow.knwf');
      await this.#archives.copy(claim.download, `${claim.run.workflowId}-${claim.run.workflowVersion}`, run.id, archive);
      await unzipInto(archive, workflowDir);
      // Values travel in the environment, never in the shell text (see compileTemplate).
      const values = templateEnv({
        archive,
        workDir: runDir,
        workflowDir,
        outDir,
        runId: run.id,
        attempt: String(lease.attempt),
        // A parameter the template names but the run lacks is the empty string (see reference()).
        parameters: { ...Object.fromEntries(this.#parameterNames.map((n) => [n, ''])), ...claim.run.parameters },
      });
      const exit = await new Promise<CommandExit>((resolve, reject) => {
        // The supervisor leads a new process group and runs `<shell> -c` in it: the group's id is
        // the supervisor's pid. Its stdin is its control pipe, fd 3 tells how the shell ended.
        const child = spawn(process.execPath, [SUPERVISOR, this.#shell.path, this.#command], {
          cwd: runDir,
          detached: true,
          stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
          // Never the executor's own settings: PIER_EXECUTOR_API_KEY is the runner's admin key.
          env: commandEnv(process.env, values),
        });
        run.child = child;
        // Writing to a supervisor that has just exited fails with EPIPE: nothing left to signal.
        child.stdin.on('error', () => {});
        if (run.cancelled || run.handBack || run.failure) this.#kill(run);
        child.stdout.setEncoding('utf8').on('data', (d: string) => shipper.write(d));
        child.stderr.setEncoding('utf8').on('data', (d: string) => shipper.write(d));
        let status = '';
        (child.stdio[3] as Readable).setEncoding('utf8').on('data', (d: string) => {
          status += d;
        });
        child.on('error', reject);
        // However the supervisor ended (killed by the command, say): nothing of its group runs on.
        child.on('exit', () => killGroup(child));
        child.on('close', (code, signal) => resolve(commandExit(child, status, code, signal)));
      });
      if (exit.supervisorKilled) {
        shipper.write(`executor: ${SUPERVISOR_KILLED}\n`);
        this.o.log('supervisor_killed', { runId: run.id });
        // A pending cancel or hand-back still ends the run as asked.
        if (!run.cancelled && !run.handBack) run.failure ??= SUPERVISOR_KILLED;
      }
      await shipper.flush();
      if (shipper.lost) return;
      if (run.failure) throw new Error(run.failure);
      if (run.handBack) return await this.#handBack(run, lease);
      if (!run.cancelled) {
        await uploadOutputs(this.#client, this.o.log, { id: run.id, lease, handBack: () => run.handBack, stopping: () => this.#stopping }, outDir, realOutDir, (line) => shipper.write(line));
        await shipper.flush();
      }
      const status = run.cancelled ? 'cancelled' : exit.code === 0 ? 'succeeded' : 'failed';
      const error = status === 'failed' ? (exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`) : null;
      await this.#client.json('POST', `/api/runs/${run.id}/complete`, { ...lease, status, exitCode: exit.code, error }, { giveUpAfterMs: this.o.giveUpMs ?? GIVE_UP_MS });
      this.o.log('finished', { runId: run.id, status, exitCode: exit.code });
    } catch (e) {
      if (e instanceof ApiError && e.status === 409 && e.code === 'run_cancelled') {
        // The cancel reached the runner before this run's result: the run ends cancelled and its
        // result and outputs are discarded. Confirm (if the runner has not ended it already).
        await this.#client.json('POST', `/api/runs/${run.id}/complete`, { ...lease, status: 'cancelled', exitCode: null, error: null }).catch(() => {});
        this.o.log('cancelled', { runId: run.id, detail: 'cancelled before its result was taken; result and outputs discarded' });
        return;
      }
      if (e instanceof ApiError && e.status === 409) {
        this.o.log('lease_lost', { runId: run.id });
        return;
      }
      // A second SIGTERM during the upload: the run goes back to the queue, it did not fail.
      if (run.handBack) return await this.#handBack(run, lease);
      // Could not start (archive, unzip, spawn) or could not deliver the log: a failed run.
      run.failure ??= (e as Error).message;
      this.#kill(run);
      if (!shipper.failure) await shipper.flush().catch(() => {});
      await this.#client
        .json(
          'POST',
          `/api/runs/${run.id}/complete`,
          { ...lease, status: 'failed', exitCode: null, error: `executor: ${(e as Error).message}`.slice(0, 10_000) },
          { giveUpAfterMs: this.o.giveUpMs ?? GIVE_UP_MS },
        )
        // Not even that is accepted: the run is no longer reported in heartbeats, so its lease
        // lapses and the runner queues it again (or fails it after RUNNER_MAX_ATTEMPTS).
        .catch((err: Error) => this.o.log('complete_failed', { runId: run.id, error: err.message }));
      this.o.log('run_failed', { runId: run.id, error: (e as Error).message });
    } finally {
      shipper.close();
      fs.rmSync(runDir, { recursive: true, force: true });
    }
  }

  async #handBack(run: ActiveRun, lease: { leaseToken: string; attempt: number }): Promise<void> {
    await this.#client.json('POST', `/api/runs/${run.id}/release`, lease).catch(() => {});
    this.o.log('handed_back', { runId: run.id });
  }
}

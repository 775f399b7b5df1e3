import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ArchiveCache } from './archive-cache.js';
import { ApiError, type Logger, RunnerClient } from './client.js';
import { commandEnv, readOutput, running, SUPERVISOR_KILLED, signalGroup, startCommand } from './command-process.js';
import { GIVE_UP_MS, LogShipper } from './log-shipper.js';
import { uploadOutputs } from './output-upload.js';
import { createRunFolder, currentUmask, handOver, prepareWorkDir, type RunFolder } from './run-folder.js';
import { endProcessesNow, endProcessesOf, type RunUser } from './run-user.js';
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
  /**
   * Users the commands run as (`--run-as`, resolved by run-user.ts), at least `capacity` of them:
   * each run has one to itself, and every process of it ends with the run. Needs root.
   */
  runAs?: RunUser[];
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
  /** The user its command runs as (`--run-as`), held until the run is over. */
  user: RunUser | null;
  shipper: LogShipper | null;
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
  #runsDir = '';
  readonly #archives: ArchiveCache;
  /** Users of `--run-as` no run holds now. */
  readonly #freeUsers: RunUser[];
  readonly #umask = currentUmask();
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
    this.#freeUsers = [...(o.runAs ?? [])];
    if (this.#freeUsers.length > 0 && this.#freeUsers.length < o.capacity) throw new Error('--run-as needs a user for each run at once (--capacity)');
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
    // What a command started outside its group (setsid) ends with its user's processes.
    for (const user of this.o.runAs ?? []) await endProcessesOf(user);
  }

  /**
   * Synchronous last resort (a fatal error): SIGKILL every command's process group now. The
   * supervisors kill them anyway once this process has exited and their control pipes close.
   */
  killAllNow(): void {
    for (const run of this.#active.values()) if (run.child) signalGroup(run.child, 'SIGKILL');
    endProcessesNow(this.o.runAs ?? []);
  }

  /** The shell commands run with, and whether it evaluates values reaching arithmetic. */
  get shell(): CommandShell {
    return this.#shell;
  }

  async run(): Promise<void> {
    this.#runsDir = (await prepareWorkDir(this.o.workDir)).runs;
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
    // Cancelled or handed back: the run ends now, without first sending the output waiting.
    if (run.handBack) run.shipper?.stop('the executor is stopping: the run goes back to the queue');
    else if (run.cancelled) run.shipper?.stop('the run was cancelled');
    const child = run.child;
    if (!child || !running(child)) return;
    // The command runs in its own process group: the shell and everything it started get it.
    signalGroup(child, 'SIGTERM');
    clearTimeout(run.killTimer);
    run.killTimer = setTimeout(() => signalGroup(child, 'SIGKILL'), this.o.killGraceSeconds * 1000);
    run.killTimer.unref();
  }

  #start(claim: ClaimAnswer): void {
    const user = this.#freeUsers.shift() ?? null;
    const run: ActiveRun = {
      id: claim.run.id,
      attempt: claim.lease.attempt,
      child: null,
      cancelled: false,
      handBack: false,
      failure: null,
      user,
      shipper: null,
      done: Promise.resolve(),
    };
    const key = `${run.id}#${run.attempt}`;
    this.#active.set(key, run);
    this.o.log('claimed', { runId: run.id, attempt: claim.lease.attempt });
    run.done = this.#execute(claim, run)
      .catch((e) => this.o.log('run_error', { runId: run.id, error: (e as Error).message }))
      .finally(() => {
        clearTimeout(run.killTimer);
        if (this.#active.get(key) === run) this.#active.delete(key);
        if (user) this.#freeUsers.push(user);
        this.#slotFreed?.();
      });
  }

  async #execute(claim: ClaimAnswer, run: ActiveRun): Promise<void> {
    const lease = { leaseToken: claim.lease.token, attempt: claim.lease.attempt };
    const user = run.user;
    let folder: RunFolder | null = null;
    const shipper = new LogShipper(
      this.#client,
      run.id,
      lease,
      {
        onLost: () => {
          // The run is no longer ours (re-queued after an outage, or ended): stop it.
          this.o.log('lease_lost', { runId: run.id });
          run.cancelled = true;
          this.#kill(run);
        },
        onFailure: (why) => {
          this.o.log('log_failed', { runId: run.id, error: why });
          run.failure = why;
          this.#kill(run);
        },
        pause: () => run.child && readOutput(run.child, false),
        resume: () => run.child && readOutput(run.child, true),
      },
      this.o.giveUpMs,
    );
    run.shipper = shipper;
    try {
      // Whatever the run's user still runs (left by an executor that died) ends before this run
      // has a folder: nothing of an earlier run can reach it.
      if (user) await this.#endProcesses(user, run.id);
      folder = await createRunFolder(this.#runsDir, `${run.id}-${lease.attempt}`, user !== null);
      const { archive, workflowDir, outDir } = folder;
      await this.#archives.copy(claim.download, `${claim.run.workflowId}-${claim.run.workflowVersion}`, run.id, archive);
      await unzipInto(archive, workflowDir);
      await handOver(folder, user, this.#umask);
      // Where {out} really is, fixed before the command runs: it must still be there afterwards.
      const realOutDir = await fs.promises.realpath(outDir);
      // Values travel in the environment, never in the shell text (see compileTemplate).
      const values = templateEnv({
        archive,
        workDir: folder.dir,
        workflowDir,
        outDir,
        runId: run.id,
        attempt: String(lease.attempt),
        // A parameter the template names but the run lacks is the empty string (see reference()).
        parameters: { ...Object.fromEntries(this.#parameterNames.map((n) => [n, ''])), ...claim.run.parameters },
      });
      const own: Record<string, string> = user && folder.home && folder.tmp ? { HOME: folder.home, TMPDIR: folder.tmp, USER: user.name, LOGNAME: user.name } : {};
      const { child, ended } = startCommand({
        shell: this.#shell.path,
        command: this.#command,
        cwd: folder.dir,
        // Never the executor's own settings: PIER_EXECUTOR_API_KEY is the runner's admin key.
        env: commandEnv(process.env, { ...values, ...own }),
        user,
        output: (text) => shipper.write(text),
      });
      run.child = child;
      if (run.cancelled || run.handBack || run.failure) this.#kill(run);
      const exit = await ended;
      // Nothing of the run's user outlives its command (a process it started with setsid, say):
      // the outputs are read from a folder nothing can write any more.
      if (user) await this.#endProcesses(user, run.id);
      if (exit.supervisorKilled) {
        shipper.write(`executor: ${SUPERVISOR_KILLED}\n`);
        this.o.log('supervisor_killed', { runId: run.id });
        // A pending cancel or hand-back still ends the run as asked.
        if (!run.cancelled && !run.handBack) run.failure ??= SUPERVISOR_KILLED;
      }
      await shipper.finish();
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
      if (user) await this.#endProcesses(user, run.id).catch((e: Error) => this.o.log('end_processes_failed', { runId: run.id, error: e.message }));
      if (folder) await fs.promises.rm(folder.dir, { recursive: true, force: true });
    }
  }

  /** Ends every process of `user`, saying in the executor's log when a run left some behind. */
  async #endProcesses(user: RunUser, runId: string): Promise<void> {
    const { found, left } = await endProcessesOf(user);
    if (found > 0) this.o.log('user_processes_ended', { runId, user: user.name, processes: found, ...(left > 0 ? { stillExiting: left } : {}) });
  }

  async #handBack(run: ActiveRun, lease: { leaseToken: string; attempt: number }): Promise<void> {
    await this.#client.json('POST', `/api/runs/${run.id}/release`, lease).catch(() => {});
    this.o.log('handed_back', { runId: run.id });
  }
}

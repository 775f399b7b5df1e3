import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, type Hash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { configVariables } from '../../infra/config.js';
import { ApiError, GaveUpError, type Logger, RunnerClient } from './client.js';
import { ARITHMETIC_WARNING, type CommandShell, defaultShell, inspectShell } from './shell.js';
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

/** Executor ids as the runner makes them; anything else in a state file is not ours. */
const EXECUTOR_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The executor id kept in `file`, or null when there is no such file yet. */
export function readExecutorState(file: string): string | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  let id: unknown;
  try {
    id = (JSON.parse(text) as { executorId?: unknown }).executorId;
  } catch {
    id = undefined;
  }
  if (typeof id !== 'string' || !EXECUTOR_ID.test(id)) {
    throw new Error(`${file} is not an executor state file; remove it to register as a new executor`);
  }
  return id;
}

/** Keeps the executor id in `file`: written to a temporary name and renamed, so it is never half there. */
export function writeExecutorState(file: string, executorId: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify({ executorId })}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
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

/**
 * Runs each command (see the file): the command's process group dies when the executor does, even
 * by SIGKILL, and when the command's shell exits, whatever it left running in the background.
 */
const SUPERVISOR = fileURLToPath(new URL('./supervisor.mjs', import.meta.url));

/** Largest log chunk sent (characters); the API takes up to 65,536. */
const CHUNK_CHARS = 16_000;
/** Chunks per log request (the API takes up to 500). */
const CHUNKS_PER_REQUEST = 200;
/**
 * Largest serialized size of one log request: the runner refuses bodies over 1 MiB (413), and a
 * batch of 200 full chunks would be 3.2 MB or more.
 */
export const MAX_LOG_REQUEST_BYTES = 256 * 1024;
/** A log batch (or the final report) failing this long fails the run instead of holding it forever. */
const GIVE_UP_MS = 120_000;

/** Settings of the runner and publishing service: an executor started beside them inherits their secrets. */
const SERVICE_VARIABLES = new Set(configVariables());

/**
 * What a command must never see: the executor's own settings (its admin key) and every setting
 * of the service (JWT_SECRET, database URLs, API_KEY, …). Everything else is the operator's
 * (PATH, HOME, proxies, Java options) and passes.
 */
export function commandEnv(env: NodeJS.ProcessEnv, extra: Record<string, string>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) {
    if (k.startsWith('PIER_EXECUTOR_') || k === 'API_KEY' || k === 'PIER_API_KEY' || SERVICE_VARIABLES.has(k)) continue;
    // A run's parameters are its own: none of the same name leaks in from the executor's start.
    if (k.startsWith('PIER_PARAM_') || k.startsWith('PIER_PARAMX_')) continue;
    out[k] = v;
  }
  return { ...out, ...extra };
}

/** Where to cut `text` at most `n` UTF-16 units long without splitting a surrogate pair. */
export function cutPoint(text: string, n: number): number {
  if (n >= text.length) return text.length;
  const c = text.charCodeAt(n - 1);
  return n > 1 && c >= 0xd800 && c <= 0xdbff ? n - 1 : n;
}

/** The first chunks of `pending` whose request stays within `maxBytes` (always at least one). */
export function takeBatch(pending: { seq: number; text: string }[], maxBytes: number): { seq: number; text: string }[] {
  // Envelope (lease token, attempt, brackets) stays well under 1 KiB.
  let bytes = 1024;
  let i = 0;
  for (; i < pending.length && i < CHUNKS_PER_REQUEST; i++) {
    bytes += Buffer.byteLength(JSON.stringify(pending[i])) + 1;
    if (bytes > maxBytes && i > 0) break;
  }
  return pending.slice(0, Math.max(1, i));
}
/** Logs are sent at least this often while a run writes. */
const FLUSH_MS = 300;

/**
 * A run's log as numbered chunks (issue #8): text is cut into chunks numbered from 1 in the order
 * it was written; chunks stay here until the runner acknowledges them (`ack` = highest gap-free
 * sequence), and are sent again after any failure. The runner ignores sequences it has, so
 * nothing is lost or doubled across retries and API restarts.
 */
class LogShipper {
  #buffer = '';
  #next = 1;
  #pending: { seq: number; text: string }[] = [];
  #sending: Promise<void> | null = null;
  #timer: NodeJS.Timeout;
  #maxBytes = MAX_LOG_REQUEST_BYTES;
  lost = false;
  /** Set once sending failed for longer than the give-up time: the run must fail. */
  failure: string | null = null;

  constructor(
    private readonly client: RunnerClient,
    private readonly runId: string,
    private readonly lease: { leaseToken: string; attempt: number },
    private readonly onLost: () => void,
    private readonly onFailure: (why: string) => void = () => {},
    private readonly giveUpMs = GIVE_UP_MS,
  ) {
    // A failed periodic send keeps its chunks pending; the run's final flush reports the error.
    this.#timer = setInterval(() => void this.flush().catch(() => {}), FLUSH_MS);
  }

  write(text: string): void {
    this.#buffer += text;
    while (this.#buffer.length >= CHUNK_CHARS) this.#cut(cutPoint(this.#buffer, CHUNK_CHARS));
  }

  #cut(n: number): void {
    this.#pending.push({ seq: this.#next++, text: this.#buffer.slice(0, n) });
    this.#buffer = this.#buffer.slice(n);
  }

  /** Sends what is buffered; resolves once everything written so far is acknowledged. */
  async flush(): Promise<void> {
    if (this.#buffer.length) this.#cut(this.#buffer.length);
    while (this.#sending) await this.#sending;
    if (this.#pending.length === 0 || this.lost || this.failure) return;
    this.#sending = this.#send().finally(() => {
      this.#sending = null;
    });
    await this.#sending;
  }

  async #send(): Promise<void> {
    while (this.#pending.length && !this.lost && !this.failure) {
      const batch = takeBatch(this.#pending, this.#maxBytes);
      try {
        const { ack } = await this.client.json<{ ack: number }>('POST', `/api/runs/${this.runId}/logs`, { ...this.lease, chunks: batch }, { giveUpAfterMs: this.giveUpMs });
        this.#pending = this.#pending.filter((c) => c.seq > ack);
      } catch (e) {
        if (e instanceof ApiError && e.status === 409) {
          this.lost = true;
          this.onLost();
          return;
        }
        // Body too large for this runner (a proxy's limit, say): send smaller batches.
        if (e instanceof ApiError && e.status === 413 && batch.length > 1) {
          this.#maxBytes = Math.max(1, Math.floor(this.#maxBytes / 2));
          continue;
        }
        if (e instanceof ApiError || e instanceof GaveUpError) {
          // Retrying the same batch forever would hold the run (its lease renewed by heartbeats).
          this.failure = `could not send the log: ${(e as Error).message}`;
          this.onFailure(this.failure);
          return;
        }
        throw e;
      }
    }
  }

  close(): void {
    clearInterval(this.#timer);
  }
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
  #archives = new Map<string, Promise<CachedArchive>>();
  /** The command for the shell: placeholders are references to the variables of `templateEnv`. */
  readonly #command: string;
  readonly #parameterNames: string[];
  readonly #shell: CommandShell;

  constructor(private readonly o: AgentOptions) {
    this.#command = compileTemplate(o.command);
    this.#parameterNames = parameterNames(o.command);
    this.#shell = inspectShell(o.shell ?? defaultShell());
    this.#client = new RunnerClient({ url: o.url, apiKey: o.apiKey, log: o.log, stopping: () => this.#stopping });
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

  /**
   * The workflow archive of a version, downloaded once per executor process into
   * `<work-dir>/archives/`, with the sha256 of the bytes as downloaded (checked against the
   * runner's `x-content-sha256`). The file itself is no proof: a command runs as the executor's
   * user and may have rewritten it, or put a symbolic link in its place or the directory's.
   */
  #archive(download: string, key: string): Promise<CachedArchive> {
    let p = this.#archives.get(key);
    if (!p) {
      const fresh = this.#download(download, key);
      fresh.catch(() => {
        if (this.#archives.get(key) === fresh) this.#archives.delete(key);
      });
      this.#archives.set(key, fresh);
      p = fresh;
    }
    return p;
  }

  async #download(download: string, key: string): Promise<CachedArchive> {
    const dir = path.join(this.o.workDir, 'archives');
    // A link (or anything else) put where the directory was is removed, not followed.
    const stat = await fs.promises.lstat(dir).catch(() => null);
    if (stat && !stat.isDirectory()) await fs.promises.rm(dir, { force: true });
    await fs.promises.mkdir(dir, { recursive: true });
    const file = path.join(dir, `${key}.knwf`);
    const res = await this.#client.request('GET', download);
    const tmp = `${file}.${process.pid}.${randomUUID()}.tmp`;
    const hash = createHash('sha256');
    // Streamed to disk (archives may be large) into a new file: `wx` follows no link.
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), hashing(hash), fs.createWriteStream(tmp, { flags: 'wx' }));
    const sha256 = hash.digest('hex');
    const expected = res.headers.get('x-content-sha256');
    if (expected && expected.toLowerCase() !== sha256) {
      await fs.promises.rm(tmp, { force: true });
      throw new Error(`the workflow archive ${key} downloaded does not match the runner's checksum`);
    }
    // A rename replaces a link at `file` instead of writing through it.
    await fs.promises.rename(tmp, file);
    return { file, sha256 };
  }

  /**
   * Copies the cached archive of a version to `dest` (in the run's fresh directory), hashing the
   * very bytes copied: what the run unpacks and gets as {archive} is the copy, so only a copy
   * with the sha256 as downloaded is used. A cached archive changed on disk since is downloaded
   * again (with a line in the executor's log).
   */
  async #copyArchive(download: string, key: string, runId: string, dest: string): Promise<void> {
    for (let tries = 1; ; tries++) {
      const cached = this.#archive(download, key);
      const { file, sha256 } = await cached;
      const copied = await copyHashing(file, dest);
      if (copied === sha256) return;
      await fs.promises.rm(dest, { force: true });
      if (tries >= 3) throw new Error(`the workflow archive ${key} keeps changing on disk (${file})`);
      this.o.log('archive_changed', { runId, archive: file, detail: 'the cached workflow archive was changed or replaced: downloading it again' });
      // Runs finding the same change at once download it once.
      if (this.#archives.get(key) === cached) this.#archives.delete(key);
    }
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
      await this.#copyArchive(claim.download, `${claim.run.workflowId}-${claim.run.workflowVersion}`, run.id, archive);
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
        await this.#uploadOutputs(run, lease, outDir, realOutDir, (line) => shipper.write(line));
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

  /**
   * Uploads every regular file of `out/`, streamed from disk (outputs may be up to 1 GiB): a first
   * pass computes the sha256, the multipart body then reads the file again. Only regular files
   * really inside the output directory are read: the command may have replaced the directory by a
   * symbolic link (the run fails) or put links, directories or FIFOs in it (skipped, each with a
   * log line), and these must not make the executor upload what it can read elsewhere (its key).
   */
  async #uploadOutputs(
    run: ActiveRun,
    lease: { leaseToken: string; attempt: number },
    outDir: string,
    realOutDir: string,
    runLog: (line: string) => void,
  ): Promise<void> {
    const dir = await fs.promises.lstat(outDir).catch(() => null);
    const real = dir?.isDirectory() ? await fs.promises.realpath(outDir).catch(() => null) : null;
    if (real !== realOutDir) {
      throw new Error('the output directory {out} was removed or replaced (by a symbolic link or another file): no outputs uploaded');
    }
    for (const entry of await fs.promises.readdir(outDir, { withFileTypes: true })) {
      const file = path.join(outDir, entry.name);
      const skip = (why: string) => {
        runLog(`executor: output "${entry.name}" skipped: ${why}\n`);
        this.o.log('output_skipped', { runId: run.id, name: entry.name, reason: why });
      };
      // O_NOFOLLOW: a link swapped in after readdir is refused; O_NONBLOCK: a FIFO does not hang.
      const handle = await fs.promises.open(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK).catch((e: NodeJS.ErrnoException) => e);
      if (handle instanceof Error) {
        skip(handle.code === 'ELOOP' ? 'not a regular file (a symbolic link)' : `cannot be opened (${handle.code ?? handle.message})`);
        continue;
      }
      try {
        const stat = await handle.stat();
        if (!stat.isFile()) {
          skip(`not a regular file (${stat.isDirectory() ? 'a directory' : stat.isFIFO() ? 'a FIFO' : 'a special file'})`);
          continue;
        }
        // What was opened, by the kernel's account (Linux): a directory swapped in between the
        // check above and the open shows here.
        const opened = `/proc/self/fd/${handle.fd}`;
        const where = await fs.promises.readlink(opened).catch(() => null);
        if (where !== null && where !== path.join(realOutDir, entry.name)) {
          skip('not a regular file inside the output directory');
          continue;
        }
        await this.#uploadOutput(run, lease, entry.name, where !== null ? opened : file, stat.size);
      } finally {
        await handle.close();
      }
    }
  }

  /** One output, read through `source` (the open file where the system allows). */
  async #uploadOutput(run: ActiveRun, lease: { leaseToken: string; attempt: number }, name: string, source: string, size: number): Promise<void> {
    const hash = createHash('sha256');
    await pipeline(fs.createReadStream(source), hash);
    const digest = hash.digest('hex');
    let delay = 250;
    for (let attempt = 1; ; attempt++) {
      // A fresh body per try: FormData bodies are consumed by a request.
      const form = new FormData();
      form.set('leaseToken', lease.leaseToken);
      form.set('attempt', String(lease.attempt));
      form.set('sha256', digest);
      form.set('file', await fs.openAsBlob(source), name);
      try {
        await this.#client.request('PUT', `/api/runs/${run.id}/outputs/${encodeURIComponent(name)}`, undefined, { raw: form, retry: false });
        break;
      } catch (e) {
        if (e instanceof ApiError) throw e;
        // Stopping: a few tries, then give up; a second SIGTERM (hand back) gives up at once.
        if (run.handBack || (this.#stopping && attempt > 3)) throw new Error(`giving up uploading ${name}: the executor is stopping`);
        this.o.log('api_retry', { method: 'PUT', path: `outputs/${name}`, error: (e as Error).message, attempt });
        await sleep(Math.random() * delay);
        delay = Math.min(delay * 2, 15_000);
      }
    }
    this.o.log('output_uploaded', { runId: run.id, name, size, sha256: digest });
  }
}

/** A downloaded workflow archive and the sha256 of its bytes as they came from the runner. */
interface CachedArchive {
  file: string;
  sha256: string;
}

/** A stream step that passes the bytes on and adds them to `hash`. */
function hashing(hash: Hash): (source: AsyncIterable<Buffer>) => AsyncGenerator<Buffer> {
  return async function* (source) {
    for await (const chunk of source) {
      hash.update(chunk);
      yield chunk;
    }
  };
}

/**
 * Copies `file` to the new file `dest` and answers the sha256 of the bytes copied, or null when
 * `file` is missing, a symbolic link (not followed) or not a regular file.
 */
async function copyHashing(file: string, dest: string): Promise<string | null> {
  // O_NONBLOCK: a FIFO put in its place does not hang the open.
  const handle = await fs.promises.open(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK).catch(() => null);
  if (!handle) return null;
  try {
    if (!(await handle.stat()).isFile()) return null;
    const hash = createHash('sha256');
    await pipeline(handle.createReadStream({ autoClose: false }), hashing(hash), fs.createWriteStream(dest, { flags: 'wx' }));
    return hash.digest('hex');
  } finally {
    await handle.close();
  }
}

/** How a command ended, as its supervisor reported it. */
interface CommandExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The supervisor died without reporting (and not by the executor's SIGKILL). */
  supervisorKilled: boolean;
}

const SUPERVISOR_KILLED = "the command's supervisor was killed; its processes were stopped";

/** Supervisors the executor sent SIGKILL: their ending without a report is no surprise. */
const killedByExecutor = new WeakSet<ChildProcess>();

/** Reads the supervisor's report (see supervisor.mjs); `code` and `signal` are the supervisor's own. */
function commandExit(child: ChildProcess, report: string, code: number | null, signal: NodeJS.Signals | null): CommandExit {
  try {
    const r = JSON.parse(report) as { code?: unknown; signal?: unknown };
    if ((typeof r.code === 'number' || r.code === null) && (typeof r.signal === 'string' || r.signal === null)) {
      return { code: r.code, signal: r.signal as NodeJS.Signals | null, supervisorKilled: false };
    }
  } catch {
    // no report: see below
  }
  return { code, signal, supervisorKilled: !killedByExecutor.has(child) };
}

/**
 * Signals the command's whole process group: through the supervisor's control pipe, and SIGKILL
 * also directly (it needs no cooperation, a stopped supervisor included).
 */
function signalGroup(child: ChildProcess, signal: 'SIGTERM' | 'SIGKILL'): void {
  if (!running(child)) return;
  if (child.stdin?.writable) child.stdin.write(signal === 'SIGTERM' ? 'TERM\n' : 'KILL\n');
  if (signal === 'SIGKILL') {
    killedByExecutor.add(child);
    killGroup(child);
  }
}

/**
 * SIGKILL to the supervisor's process group. Safe after the supervisor died too: a group id is
 * not given to another process while any member of the group lives, and this runs right after
 * the supervisor is reaped (an empty group's id would have to be reused within that instant).
 */
function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // the group is gone already
  }
}

/** The supervisor exits only after the command's shell did and its group was killed (or killed by the executor). */
function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

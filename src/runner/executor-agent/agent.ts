import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, type Logger, RunnerClient } from './client.js';
import { expandTemplate } from './template.js';
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

/** Largest log chunk sent (characters); the API takes up to 65,536. */
const CHUNK_CHARS = 16_000;
/** Chunks per log request (the API takes up to 500). */
const CHUNKS_PER_REQUEST = 200;
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
  lost = false;

  constructor(
    private readonly client: RunnerClient,
    private readonly runId: string,
    private readonly lease: { leaseToken: string; attempt: number },
    private readonly onLost: () => void,
  ) {
    // A failed periodic send keeps its chunks pending; the run's final flush reports the error.
    this.#timer = setInterval(() => void this.flush().catch(() => {}), FLUSH_MS);
  }

  write(text: string): void {
    this.#buffer += text;
    while (this.#buffer.length >= CHUNK_CHARS) this.#cut(CHUNK_CHARS);
  }

  #cut(n: number): void {
    this.#pending.push({ seq: this.#next++, text: this.#buffer.slice(0, n) });
    this.#buffer = this.#buffer.slice(n);
  }

  /** Sends what is buffered; resolves once everything written so far is acknowledged. */
  async flush(): Promise<void> {
    if (this.#buffer.length) this.#cut(this.#buffer.length);
    while (this.#sending) await this.#sending;
    if (this.#pending.length === 0 || this.lost) return;
    this.#sending = this.#send().finally(() => {
      this.#sending = null;
    });
    await this.#sending;
  }

  async #send(): Promise<void> {
    while (this.#pending.length && !this.lost) {
      const batch = this.#pending.slice(0, CHUNKS_PER_REQUEST);
      try {
        const { ack } = await this.client.json<{ ack: number }>('POST', `/api/runs/${this.runId}/logs`, { ...this.lease, chunks: batch });
        this.#pending = this.#pending.filter((c) => c.seq > ack);
      } catch (e) {
        if (e instanceof ApiError && e.status === 409) {
          this.lost = true;
          this.onLost();
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
  child: ChildProcess | null;
  cancelled: boolean;
  /** Set when the executor stops and hands the run back. */
  handBack: boolean;
  killTimer?: NodeJS.Timeout;
  done: Promise<void>;
}

/**
 * `pier runner executor`: registers, heartbeats, claims with long-poll, runs the command template
 * for each run, streams its output as numbered log chunks, uploads `<run dir>/out/*`, reports
 * the exit status; kills cancelled runs (SIGTERM, then SIGKILL after the grace period); drains;
 * rides out API outages. It keeps no state on disk it could not lose: a restarted executor
 * registers anew and the runner re-queues what the old one held.
 */
export class ExecutorAgent {
  readonly #client: RunnerClient;
  readonly #active = new Map<string, ActiveRun>();
  #id = '';
  #heartbeatMs = 10_000;
  #stopping = false;
  #draining = false;
  #claimAbort = new AbortController();
  #slotFreed: (() => void) | null = null;
  #archives = new Map<string, Promise<string>>();

  constructor(private readonly o: AgentOptions) {
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
      this.o.log('stopping_now', { handBack: [...this.#active.keys()] });
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

  async run(): Promise<void> {
    fs.mkdirSync(this.o.workDir, { recursive: true });
    const reg = await this.#client.json<{ id: string }>('POST', '/api/executors/register', {
      name: this.o.name,
      labels: this.o.labels,
      capacity: this.o.capacity,
    });
    this.#id = reg.id;
    this.o.log('registered', { executorId: this.#id, name: this.o.name, labels: this.o.labels, capacity: this.o.capacity });
    const heartbeats = this.#heartbeatLoop();
    while (!this.#stopping && !this.#draining) {
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
        if (this.#stopping) break;
        if (e instanceof ApiError && e.status === 404) throw new Error('the runner no longer knows this executor (removed?)');
        this.o.log('claim_failed', { error: (e as Error).message });
        await sleep(1000);
        continue;
      }
      if (claim) this.#start(claim);
    }
    await Promise.all([...this.#active.values()].map((r) => r.done));
    this.#stopping = true;
    await heartbeats;
    this.o.log(this.#draining ? 'drained' : 'stopped', { executorId: this.#id });
  }

  async #heartbeatLoop(): Promise<void> {
    while (!(this.#stopping && this.#active.size === 0)) {
      try {
        const hb = await this.#client.json<HeartbeatAnswer>('POST', `/api/executors/${this.#id}/heartbeat`, { runs: [...this.#active.keys()] }, { retry: false });
        this.#heartbeatMs = hb.heartbeatMs;
        for (const id of hb.cancel) {
          const run = this.#active.get(id);
          if (run && !run.cancelled) {
            this.o.log('cancel', { runId: id });
            run.cancelled = true;
            this.#kill(run);
          }
        }
        if (hb.drain && !this.#draining) {
          this.#draining = true;
          this.o.log('draining', { running: this.#active.size });
          this.#claimAbort.abort();
          this.#slotFreed?.();
        }
      } catch (e) {
        this.o.log('heartbeat_failed', { error: (e as Error).message });
      }
      await this.#pause(Math.min(this.#heartbeatMs, 10_000));
    }
  }

  /** Sleeps, but wakes early once the executor stops with nothing left to run. */
  async #pause(ms: number): Promise<void> {
    const step = 100;
    for (let t = 0; t < ms; t += step) {
      if (this.#stopping && this.#active.size === 0) return;
      await sleep(step);
    }
  }

  #kill(run: ActiveRun): void {
    const child = run.child;
    if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
    // The command runs in its own process group: the shell and everything it started get it.
    const signal = (s: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, s);
      } catch {
        // already gone
      }
    };
    signal('SIGTERM');
    clearTimeout(run.killTimer);
    run.killTimer = setTimeout(() => signal('SIGKILL'), this.o.killGraceSeconds * 1000);
    run.killTimer.unref();
  }

  #start(claim: ClaimAnswer): void {
    const run: ActiveRun = { id: claim.run.id, child: null, cancelled: false, handBack: false, done: Promise.resolve() };
    this.#active.set(run.id, run);
    this.o.log('claimed', { runId: run.id, attempt: claim.lease.attempt });
    run.done = this.#execute(claim, run)
      .catch((e) => this.o.log('run_error', { runId: run.id, error: (e as Error).message }))
      .finally(() => {
        clearTimeout(run.killTimer);
        this.#active.delete(run.id);
        this.#slotFreed?.();
      });
  }

  /** The workflow archive of a version, downloaded once per executor process. */
  #archive(download: string, key: string): Promise<string> {
    let p = this.#archives.get(key);
    if (!p) {
      p = (async () => {
        const dir = path.join(this.o.workDir, 'archives');
        fs.mkdirSync(dir, { recursive: true });
        const file = path.join(dir, `${key}.knwf`);
        const res = await this.#client.request('GET', download);
        const tmp = `${file}.${process.pid}.tmp`;
        fs.writeFileSync(tmp, Buffer.from(await res.arrayBuffer()));
        fs.renameSync(tmp, file);
        return file;
      })();
      p.catch(() => this.#archives.delete(key));
      this.#archives.set(key, p);
    }
    return p;
  }

  async #execute(claim: ClaimAnswer, run: ActiveRun): Promise<void> {
    const lease = { leaseToken: claim.lease.token, attempt: claim.lease.attempt };
    const runDir = path.join(this.o.workDir, 'runs', `${run.id}-${lease.attempt}`);
    const workflowDir = path.join(runDir, 'workflow');
    const outDir = path.join(runDir, 'out');
    fs.rmSync(runDir, { recursive: true, force: true });
    fs.mkdirSync(outDir, { recursive: true });
    const shipper = new LogShipper(this.#client, run.id, lease, () => {
      // The run is no longer ours (re-queued after an outage, or ended): stop it.
      this.o.log('lease_lost', { runId: run.id });
      run.cancelled = true;
      this.#kill(run);
    });
    try {
      const archive = await this.#archive(claim.download, `${claim.run.workflowId}-${claim.run.workflowVersion}`);
      fs.copyFileSync(archive, path.join(runDir, 'workflow.knwf'));
      await unzipInto(archive, workflowDir);
      const command = expandTemplate(this.o.command, {
        archive: path.join(runDir, 'workflow.knwf'),
        workDir: runDir,
        workflowDir,
        outDir,
        runId: run.id,
        attempt: String(lease.attempt),
        parameters: claim.run.parameters,
      });
      const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
        const child = spawn('/bin/sh', ['-c', command], {
          cwd: runDir,
          detached: true,
          stdio: ['ignore', 'pipe', 'pipe'],
          env: { ...process.env, PIER_RUN_ID: run.id, PIER_ATTEMPT: String(lease.attempt), PIER_WORK_DIR: runDir, PIER_OUT_DIR: outDir, PIER_API_KEY: '' },
        });
        run.child = child;
        if (run.cancelled || run.handBack) this.#kill(run);
        child.stdout.setEncoding('utf8').on('data', (d: string) => shipper.write(d));
        child.stderr.setEncoding('utf8').on('data', (d: string) => shipper.write(d));
        child.on('error', reject);
        child.on('close', (code, signal) => resolve({ code, signal }));
      });
      await shipper.flush();
      if (shipper.lost) return;
      if (run.handBack) {
        await this.#client.json('POST', `/api/runs/${run.id}/release`, lease).catch(() => {});
        this.o.log('handed_back', { runId: run.id });
        return;
      }
      if (!run.cancelled) await this.#uploadOutputs(run.id, lease, outDir);
      const status = run.cancelled ? 'cancelled' : exit.code === 0 ? 'succeeded' : 'failed';
      const error = status === 'failed' ? (exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`) : null;
      await this.#client.json('POST', `/api/runs/${run.id}/complete`, { ...lease, status, exitCode: exit.code, error });
      this.o.log('finished', { runId: run.id, status, exitCode: exit.code });
    } catch (e) {
      if (e instanceof ApiError && e.status === 409) {
        this.o.log('lease_lost', { runId: run.id });
        return;
      }
      // Could not even start (archive, unzip, spawn): report it as a failed run.
      await shipper.flush().catch(() => {});
      await this.#client
        .json('POST', `/api/runs/${run.id}/complete`, { ...lease, status: 'failed', exitCode: null, error: `executor: ${(e as Error).message}`.slice(0, 10_000) })
        .catch(() => {});
      this.o.log('run_failed', { runId: run.id, error: (e as Error).message });
    } finally {
      shipper.close();
      fs.rmSync(runDir, { recursive: true, force: true });
    }
  }

  async #uploadOutputs(runId: string, lease: { leaseToken: string; attempt: number }, outDir: string): Promise<void> {
    for (const entry of fs.readdirSync(outDir, { withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const data = fs.readFileSync(path.join(outDir, entry.name));
      const digest = createHash('sha256').update(data).digest('hex');
      const form = new FormData();
      form.set('leaseToken', lease.leaseToken);
      form.set('attempt', String(lease.attempt));
      form.set('sha256', digest);
      form.set('file', new Blob([data]), entry.name);
      // A fresh body per try: FormData bodies are consumed by a request.
      let delay = 250;
      for (let attempt = 1; ; attempt++) {
        try {
          await this.#client.request('PUT', `/api/runs/${runId}/outputs/${encodeURIComponent(entry.name)}`, undefined, { raw: form, retry: false });
          break;
        } catch (e) {
          if (e instanceof ApiError) throw e;
          this.o.log('api_retry', { method: 'PUT', path: `outputs/${entry.name}`, error: (e as Error).message, attempt });
          await sleep(Math.random() * delay);
          delay = Math.min(delay * 2, 15_000);
        }
      }
      this.o.log('output_uploaded', { runId, name: entry.name, size: data.length, sha256: digest });
    }
  }
}

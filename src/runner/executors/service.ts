import { ConflictError, NotFoundError } from '../../infra/errors.js';
import { generateToken, randomUUID, sha256 } from '../../infra/secrets.js';
import type { Lease, RunOutputRow, RunRow, RunsRepository } from '../runs/repository.js';
import type { ExecutorRow, ExecutorsRepository } from './repository.js';

/** A claimed run stays with its executor this long after the claim or its last heartbeat. */
export const LEASE_MS = 2 * 60_000;
/** An executor without a heartbeat for this long is shown offline. */
export const OFFLINE_AFTER_MS = 90_000;
const LEASE_PREFIX = 'rnr_lease_';

export interface ExecutorsDeps {
  executors: ExecutorsRepository;
  runs: RunsRepository;
  now: () => Date;
}

export interface ExecutorView {
  row: ExecutorRow;
  status: 'online' | 'draining' | 'offline';
  runningRuns: number;
}

export interface Claim {
  run: RunRow;
  lease: { token: string; attempt: number; expiresAt: string };
  nextLogSeq: number;
}

/** What an executor sends to prove it still holds a run: the lease token and attempt of its claim. */
export interface LeaseProof {
  leaseToken: string;
  attempt: number;
}

const leaseOf = (proof: LeaseProof): Lease => ({ hash: sha256(proof.leaseToken), attempt: proof.attempt });

/**
 * The executor protocol (register, heartbeat, claim, logs, complete) and executor management.
 * Every call about a claimed run is fenced by its lease; a stale holder gets 409.
 */
export class ExecutorsService {
  constructor(private readonly d: ExecutorsDeps) {}

  private async view(row: ExecutorRow): Promise<ExecutorView> {
    const stale = this.d.now().getTime() - Date.parse(row.last_heartbeat_at) > OFFLINE_AFTER_MS;
    return {
      row,
      status: stale ? 'offline' : row.draining ? 'draining' : 'online',
      runningRuns: await this.d.runs.runningCount(row.id),
    };
  }

  private async load(id: string): Promise<ExecutorRow> {
    const e = await this.d.executors.findById(id);
    if (!e) throw new NotFoundError('no such executor');
    return e;
  }

  async register(input: { name: string; labels?: string[]; capacity?: number }, address: string): Promise<ExecutorView> {
    const now = this.d.now().toISOString();
    const row = await this.d.executors.insert({
      id: randomUUID(),
      name: input.name.trim(),
      labels: JSON.stringify(input.labels ?? []),
      capacity: input.capacity ?? 1,
      draining: 0,
      created_at: now,
      last_heartbeat_at: now,
      last_ip: address,
    });
    return this.view(row);
  }

  /** Marks the executor online and extends the leases of its running runs. */
  async heartbeat(id: string, address: string): Promise<ExecutorView> {
    await this.load(id);
    const now = this.d.now();
    const row = await this.d.executors.heartbeat(id, now.toISOString(), address);
    if (!row) throw new NotFoundError('no such executor');
    await this.d.runs.extendLeases(row.id, new Date(now.getTime() + LEASE_MS).toISOString());
    return this.view(row);
  }

  /** The oldest queued run with a fresh lease, or null (nothing queued, draining, at capacity). */
  async claim(id: string, address: string): Promise<Claim | null> {
    const executor = await this.load(id);
    const now = this.d.now();
    const nowIso = now.toISOString();
    await this.d.executors.heartbeat(executor.id, nowIso, address);
    await this.d.runs.expireLeases(nowIso);
    if (executor.draining || (await this.d.runs.runningCount(executor.id)) >= executor.capacity) return null;
    const token = generateToken(LEASE_PREFIX);
    const expiresAt = new Date(now.getTime() + LEASE_MS).toISOString();
    const run = await this.d.runs.claim(executor.id, sha256(token), expiresAt, nowIso);
    if (!run) return null;
    return { run, lease: { token, attempt: run.attempt, expiresAt }, nextLogSeq: await this.d.runs.nextLogSeq(run.id) };
  }

  /** Stores numbered chunks (retries are idempotent); answers the highest gap-free sequence. */
  async appendLogs(runId: string, proof: LeaseProof, chunks: { seq: number; text: string }[]): Promise<number> {
    const run = await this.d.runs.findById(runId);
    if (!run) throw new NotFoundError('no such run');
    if (!(await this.d.runs.leased(run.id, leaseOf(proof)))) throw staleLease();
    return this.d.runs.appendLogs(run.id, proof.attempt, chunks, this.d.now().toISOString());
  }

  async complete(
    runId: string,
    proof: LeaseProof,
    result: { status: 'succeeded' | 'failed'; exitCode: number | null; error: string | null },
    outputs: Omit<RunOutputRow, 'run_id' | 'created_at'>[],
  ): Promise<RunRow> {
    const run = await this.d.runs.findById(runId);
    if (!run) throw new NotFoundError('no such run');
    const done = await this.d.runs.complete(run.id, leaseOf(proof), result, outputs, this.d.now().toISOString());
    if (!done) throw staleLease();
    return done;
  }

  async list(): Promise<ExecutorView[]> {
    return Promise.all((await this.d.executors.list()).map((e) => this.view(e)));
  }

  async get(id: string): Promise<ExecutorView> {
    return this.view(await this.load(id));
  }

  /** The executor finishes its running runs and claims no new ones. */
  async drain(id: string): Promise<ExecutorView> {
    await this.load(id);
    const row = await this.d.executors.setDraining(id, true);
    if (!row) throw new NotFoundError('no such executor');
    return this.view(row);
  }

  /** Its running runs go back to the queue. */
  async remove(id: string): Promise<void> {
    await this.load(id);
    await this.d.runs.requeueExecutorRuns(id);
    await this.d.executors.delete(id);
  }
}

function staleLease(): ConflictError {
  return new ConflictError('the lease no longer holds this run', 'stale_lease');
}

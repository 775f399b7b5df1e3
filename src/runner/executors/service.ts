import type { Readable } from 'node:stream';
import { ConflictError, NotFoundError, PayloadTooLargeError, ValidationError } from '../../infra/errors.js';
import type { PartSource } from '../workflows/upload.js';
import { constantTimeEqual, generateToken, randomUUID, sha256 } from '../../infra/secrets.js';
import type { ReceivedOutput, RunOutputStorage } from '../runs/output-storage.js';
import { outputNameProblem } from '../runs/output-storage.js';
import type { QueueSignal } from '../runs/queue-signal.js';
import type { Lease } from '../runs/leases-repository.js';
import { LOG_WINDOW } from '../runs/logs-repository.js';
import type { RunsRepository } from '../runs/repository.js';
import type { RunRow } from '../runs/run-rows.js';
import { countRunsFinished, runnerMetrics } from '../metrics.js';
import type { ExecutorRow, ExecutorsRepository } from './repository.js';

const LEASE_PREFIX = 'rnr_lease_';
/** Longest long-poll of a claim (`?wait=`), seconds. */
export const MAX_CLAIM_WAIT_SECONDS = 30;

export interface ExecutorSettings {
  /** A held run stays with its executor this long after the claim or its last heartbeat. */
  leaseMs: number;
  /** A run is taken at most this many times; then a lost executor fails it ("executor lost"). */
  maxAttempts: number;
  /** Largest output file an executor may upload. */
  maxOutputBytes: number;
  /** Log text one attempt of a run may store (RUNNER_MAX_LOG_BYTES); the rest is dropped. */
  maxLogBytes: number;
  /**
   * A waiting claim looks at the queue again after this long even without a notification
   * (covers instances that cannot notify each other); never a tight loop.
   */
  recheckMs: number;
}

export interface ExecutorsDeps {
  executors: ExecutorsRepository;
  runs: RunsRepository;
  outputs: RunOutputStorage;
  queue: QueueSignal;
  settings: ExecutorSettings;
  now: () => Date;
}

export interface ExecutorView {
  row: ExecutorRow;
  status: 'online' | 'draining' | 'offline';
  runningRuns: number;
}

/** What an executor says about itself when it registers. */
export interface Registration {
  name: string;
  labels?: string[];
  capacity?: number;
}

/**
 * What a heartbeat answers besides the executor: what to do now
 * (docs/runner.md#writing-your-own-executor).
 */
export interface Instructions {
  /** Runs to stop now: cancelled by a user, or no longer this executor's (re-queued meanwhile). */
  cancel: string[];
  /** Claim nothing new; finish (or hand back) the runs held. */
  drain: boolean;
  /** Send the next heartbeat within this many milliseconds (a third of the lease). */
  heartbeatMs: number;
}

export interface Claim {
  run: RunRow;
  lease: { token: string; attempt: number; expiresAt: string };
  /** Log sequences are per attempt: every attempt starts at 1. */
  nextLogSeq: number;
}

/** What an executor sends to prove it still holds a run: the lease token and attempt of its claim. */
export interface LeaseProof {
  leaseToken: string;
  attempt: number;
}

export interface OutputUpload {
  /** sha256 (hex) the executor computed; the stored file must match it. */
  sha256: string;
  contentType: string | null;
  source: Readable;
}

/** The multipart fields that must come before the file: checked as strictly as JSON bodies are. */
function outputProof(fields: Record<string, string>): LeaseProof {
  const problems: { field: string; message: string }[] = [];
  const token = fields.leaseToken ?? '';
  if (token.length < 1 || token.length > 200) problems.push({ field: 'leaseToken', message: 'is required before the file (1-200 characters)' });
  const attempt = fields.attempt ?? '';
  if (!/^[1-9][0-9]{0,8}$/.test(attempt)) problems.push({ field: 'attempt', message: 'is required before the file (1-999999999)' });
  if (!/^[0-9a-fA-F]{64}$/.test(fields.sha256 ?? '')) problems.push({ field: 'sha256', message: 'is required before the file (64 hex digits)' });
  if (problems.length) throw new ValidationError('the upload needs leaseToken, attempt and sha256 before the file', problems);
  return { leaseToken: token, attempt: Number(attempt) };
}

/**
 * Command output is arbitrary bytes; PostgreSQL text refuses NUL (U+0000), so it is stored as
 * U+FFFD, the replacement character, on both databases alike.
 */
const withoutNul = (text: string): string => (text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text);

/** The run was cancelled before the executor's result arrived: the result and outputs are not taken. */
const cancelledError = () =>
  new ConflictError('the run was cancelled before its end was reported: it ends cancelled and its result and outputs are discarded', 'run_cancelled');

const leaseOf = (proof: LeaseProof): Lease => ({ hash: sha256(proof.leaseToken), attempt: proof.attempt });

/**
 * The executor protocol (register, heartbeat, claim, logs, outputs, complete, release) and
 * executor management. Every call about a claimed run is fenced by its lease; a stale holder
 * gets 409.
 */
export class ExecutorsService {
  constructor(private readonly d: ExecutorsDeps) {}

  private async view(row: ExecutorRow): Promise<ExecutorView> {
    // Shown offline once it has missed heartbeats for a whole lease: by then the sweeper
    // re-queues what it held.
    const stale = this.d.now().getTime() - Date.parse(row.last_heartbeat_at) > this.d.settings.leaseMs;
    return {
      row,
      status: stale ? 'offline' : row.draining ? 'draining' : 'online',
      runningRuns: await this.d.runs.heldCount(row.id),
    };
  }

  private async load(id: string): Promise<ExecutorRow> {
    const e = await this.d.executors.findById(id);
    if (!e) throw new NotFoundError('no such executor');
    return e;
  }

  get heartbeatMs(): number {
    return Math.max(250, Math.floor(this.d.settings.leaseMs / 3));
  }

  /** The stored fields of a registration, new or again. */
  private registration(input: Registration, address: string) {
    const now = this.d.now().toISOString();
    return {
      name: input.name.trim(),
      labels: JSON.stringify([...new Set(input.labels ?? [])]),
      capacity: input.capacity ?? 1,
      draining: 0,
      last_heartbeat_at: now,
      last_ip: address,
    };
  }

  async register(input: Registration, address: string): Promise<ExecutorView> {
    const fields = this.registration(input, address);
    const row = await this.d.executors.insert({ id: randomUUID(), created_at: fields.last_heartbeat_at, ...fields });
    return this.view(row);
  }

  /**
   * An executor process that restarted takes back its identity (`--state-file`), so restarts do
   * not leave stale executors listed. Name, labels and capacity become the new process's, and it
   * is online and not draining, as a new registration would be. It holds none of the runs the
   * previous process held: their leases end now and the sweeper re-queues them (attempt + 1) or
   * fails them after RUNNER_MAX_ATTEMPTS, as for any lost executor. 404 once the executor was removed.
   */
  async reregister(id: string, input: Registration, address: string): Promise<ExecutorView> {
    const fields = this.registration(input, address);
    const row = await this.d.executors.reregister(id, fields);
    if (!row) throw new NotFoundError('no such executor');
    await this.d.runs.endLeasesOf(row.id, fields.last_heartbeat_at);
    return this.view(row);
  }

  /**
   * Marks the executor online, extends the leases of the held runs it reports (`runIds`; a held
   * run it does not report is left to expire and is re-queued by the sweeper) and answers what to
   * do: runs being cancelled, runs it reports that are no longer its own, and drain.
   */
  async heartbeat(id: string, address: string, runIds: string[] = []): Promise<{ view: ExecutorView; instructions: Instructions }> {
    const now = this.d.now();
    const row = await this.d.executors.heartbeat(id, now.toISOString(), address);
    if (!row) throw new NotFoundError('no such executor');
    await this.d.runs.extendLeases(row.id, runIds, new Date(now.getTime() + this.d.settings.leaseMs).toISOString());
    const cancel = new Set([...(await this.d.runs.cancellingIds(row.id)), ...(await this.d.runs.notHeldBy(row.id, runIds))]);
    return {
      view: await this.view(row),
      instructions: { cancel: [...cancel], drain: row.draining === 1, heartbeatMs: this.heartbeatMs },
    };
  }

  /**
   * The oldest queued run this executor may run (labels, capacity, not draining) with a fresh
   * lease; with `waitMs` > 0 the call is held until one is queued (woken by QueueSignal) or the
   * time is up, the client went away (`abort`) or the server closes. Null: nothing to run.
   */
  async claim(id: string, address: string, waitMs = 0, abort?: AbortSignal): Promise<Claim | null> {
    const timer = runnerMetrics()?.claimDuration.startTimer();
    if (!timer) return this.claimOrWait(id, address, waitMs, abort);
    let outcome = 'error';
    try {
      const claim = await this.claimOrWait(id, address, waitMs, abort);
      outcome = claim ? 'run' : 'empty';
      return claim;
    } catch (e) {
      if (e instanceof ConflictError && e.code === 'executor_draining') outcome = 'draining';
      throw e;
    } finally {
      timer({ outcome });
    }
  }

  private async claimOrWait(id: string, address: string, waitMs: number, abort?: AbortSignal): Promise<Claim | null> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      // A client that went away takes nothing: the answer could not reach it.
      if (abort?.aborted) return null;
      const ticket = this.d.queue.ticket();
      const now = this.d.now();
      const token = generateToken(LEASE_PREFIX);
      const expiresAt = new Date(now.getTime() + this.d.settings.leaseMs).toISOString();
      const outcome = await this.d.runs.claim(id, address, sha256(token), expiresAt, now.toISOString());
      if (outcome === 'unknown-executor') throw new NotFoundError('no such executor');
      if (typeof outcome === 'object') {
        return { run: outcome.run, lease: { token, attempt: outcome.run.attempt, expiresAt }, nextLogSeq: 1 };
      }
      // A draining executor is told at once, and told apart from "nothing to run": an executor
      // that took the 204 for an empty queue would claim again at once, in a tight loop.
      if (outcome === 'draining') {
        throw new ConflictError('the executor is draining: claim nothing more, finish the runs held, then stop (registering again ends the draining)', 'executor_draining', {
          'retry-after': String(Math.ceil(this.heartbeatMs / 1000)),
        });
      }
      const left = deadline - Date.now();
      if (left <= 0 || abort?.aborted || this.d.queue.closed) return null;
      await this.d.queue.wait(ticket, Math.min(left, this.d.settings.recheckMs), abort);
    }
  }

  /**
   * Puts back a run whose claim answer could not be delivered (the client went away after the
   * run was taken): queued again without using up an attempt.
   */
  async unclaim(claim: Claim): Promise<void> {
    if (await this.d.runs.unclaim(claim.run.id, { hash: sha256(claim.lease.token), attempt: claim.lease.attempt })) this.d.queue.notify();
  }

  /**
   * Stores numbered chunks of the lease's attempt (retries are idempotent); answers the highest
   * gap-free sequence of this attempt. Chunks more than LOG_WINDOW ahead of it are refused. Past
   * RUNNER_MAX_LOG_BYTES the attempt's log is `full`: chunks are acknowledged and dropped.
   */
  async appendLogs(runId: string, proof: LeaseProof, chunks: { seq: number; text: string }[]): Promise<{ ack: number; full: boolean }> {
    const clean = chunks.map((c) => ({ seq: c.seq, text: withoutNul(c.text) }));
    const outcome = await this.d.runs.appendLogs(runId, leaseOf(proof), clean, this.d.now().toISOString(), this.d.settings.maxLogBytes);
    if (outcome === 'stale-lease') throw await this.staleOrMissing(runId);
    if (outcome === 'out-of-window') {
      throw new ValidationError(`log sequences may run at most ${LOG_WINDOW} ahead of the acknowledged one; send the missing chunks first`, [
        { field: 'chunks', message: `a sequence is more than ${LOG_WINDOW} ahead of ack` },
      ], 'log_seq_out_of_window');
    }
    return { ack: outcome.ack, full: outcome.full === true };
  }

  /**
   * Streams an output into a temporary file after checking its name and the lease; nothing is
   * visible until `commitOutput`. So a bad upload never touches the recorded file, and an upload
   * of a lost attempt never becomes an output (files are kept per attempt besides).
   */
  private async receiveOutput(runId: string, proof: LeaseProof, name: string, upload: OutputUpload): Promise<ReceivedOutput> {
    const problem = outputNameProblem(name);
    if (problem) {
      upload.source.resume();
      throw new ValidationError(`invalid output name: ${problem}`, [{ field: 'name', message: problem }], 'invalid_output_name');
    }
    if (!(await this.d.runs.leased(runId, leaseOf(proof)))) {
      upload.source.resume();
      throw await this.staleOrMissing(runId);
    }
    return this.d.outputs.receive(runId, upload.source, this.d.settings.maxOutputBytes);
  }

  /** Checks a received output's sha256, records it under the lease, only then puts it in place; else discards it. */
  private async commitOutput(
    runId: string,
    proof: LeaseProof,
    name: string,
    upload: Omit<OutputUpload, 'source'>,
    received: ReceivedOutput,
  ): Promise<{ name: string; size: number; sha256: string }> {
    const stored = { size: received.size, sha256: received.sha256 };
    try {
      if (!constantTimeEqual(stored.sha256, upload.sha256.toLowerCase())) {
        throw new ValidationError('the uploaded file does not match its sha256', [
          { field: 'sha256', message: `the file's sha256 is ${stored.sha256}` },
        ], 'checksum_mismatch');
      }
      const outcome = await this.d.runs.recordOutput(runId, leaseOf(proof), {
        name,
        size: stored.size,
        sha256: stored.sha256,
        content_type: upload.contentType,
        created_at: this.d.now().toISOString(),
      });
      if (outcome === 'cancelling') throw cancelledError();
      if (outcome !== 'recorded') throw await this.staleOrMissing(runId);
      await this.d.outputs.place(received, runId, proof.attempt, name);
    } catch (e) {
      await this.d.outputs.discard(received);
      throw e;
    }
    // The run may have been deleted (its workflow or project) between the record and the
    // rename, and the delete may have removed the run's files before this one arrived: looked
    // at after the rename, either the run is still there (a later delete removes the file) or
    // this upload removes what it put in place. No file outlives its run.
    // Likewise a cancel that ended the run (and removed its files) between the two.
    const now = await this.d.runs.findById(runId);
    if (!now) {
      await this.d.outputs.removeRun(runId);
      throw new NotFoundError('no such run');
    }
    if (now.status === 'cancelled' && now.attempt === proof.attempt) {
      await this.d.outputs.removeAttempt(runId, proof.attempt);
      throw cancelledError();
    }
    return { name, ...stored };
  }

  /**
   * Reads a multipart output upload: text fields `leaseToken`, `attempt`, `sha256` first, then
   * one `file` part, streamed to a temporary file. The output is recorded and put in place only
   * once the whole request has been read and found acceptable: a part after the file (another
   * field, a second file) refuses the upload, and nothing of it is stored.
   */
  async uploadOutputParts(runId: string, name: string, parts: PartSource): Promise<{ name: string; size: number; sha256: string }> {
    const fields: Record<string, string> = {};
    let pending: { proof: LeaseProof; upload: Omit<OutputUpload, 'source'>; received: ReceivedOutput } | null = null;
    try {
      for await (const part of parts({ fileSize: this.d.settings.maxOutputBytes + 1, files: 1, fields: 3, fieldSize: 1000 })) {
        if (pending) {
          if (part.type === 'file') part.file.resume();
          throw new ValidationError(`unexpected part "${part.fieldname}" after the file`, [
            { field: part.fieldname, message: 'the file must be the last part' },
          ]);
        }
        if (part.type === 'file') {
          if (part.fieldname !== 'file') {
            part.file.resume();
            throw new ValidationError(`unknown file part "${part.fieldname}"`, [{ field: part.fieldname, message: 'send the output as "file"' }]);
          }
          const proof = outputProof(fields);
          const upload = { sha256: fields.sha256!, contentType: part.mimetype || null };
          pending = { proof, upload, received: await this.receiveOutput(runId, proof, name, { ...upload, source: part.file }) };
        } else {
          if (!['leaseToken', 'attempt', 'sha256'].includes(part.fieldname)) {
            throw new ValidationError(`unknown field "${part.fieldname}"`, [{ field: part.fieldname, message: 'unknown field' }]);
          }
          fields[part.fieldname] = String(part.value);
        }
      }
    } catch (e) {
      if (pending) await this.d.outputs.discard(pending.received);
      const code = (e as { code?: string }).code;
      if (code === 'FST_REQ_FILE_TOO_LARGE') throw new PayloadTooLargeError(`the output is larger than ${this.d.settings.maxOutputBytes} bytes`);
      if (code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT' || code === 'FST_PARTS_LIMIT') {
        throw new ValidationError('too many parts: send leaseToken, attempt, sha256, then one "file"', [{ field: '(body)', message: 'too many parts' }]);
      }
      throw e;
    }
    if (!pending) throw new ValidationError('the "file" part is required', [{ field: 'file', message: 'is required' }]);
    return this.commitOutput(runId, pending.proof, name, pending.upload, pending.received);
  }

  /**
   * Ends a held run; that frees the executor's capacity. A run being cancelled (the cancel
   * committed first) ends cancelled: a confirmation is taken, a success or failure is refused
   * with 409 `run_cancelled` (see RunsRepository.complete). A cancelled run keeps no output files.
   */
  async complete(
    runId: string,
    proof: LeaseProof,
    result: { status: 'succeeded' | 'failed' | 'cancelled'; exitCode: number | null; error: string | null },
  ): Promise<RunRow> {
    const done = await this.d.runs.complete(runId, leaseOf(proof), { ...result, error: result.error === null ? null : withoutNul(result.error) }, this.d.now().toISOString());
    if (!done) throw await this.staleOrMissing(runId);
    countRunsFinished(done.run.status);
    this.d.queue.notify();
    if (done.run.status === 'cancelled') await this.d.outputs.removeAttempt(runId, proof.attempt);
    if (done.refused) throw cancelledError();
    return done.run;
  }

  /** The executor hands a held run back (it is shutting down): queued again for another executor. */
  async release(runId: string, proof: LeaseProof): Promise<RunRow> {
    const row = await this.d.runs.release(runId, leaseOf(proof), this.d.now().toISOString());
    if (!row) throw await this.staleOrMissing(runId);
    countRunsFinished(row.status);
    if (row.status === 'queued') await this.d.outputs.removeAttempt(runId, proof.attempt);
    this.d.queue.notify();
    return row;
  }

  private async staleOrMissing(runId: string): Promise<Error> {
    if (!(await this.d.runs.findById(runId))) return new NotFoundError('no such run');
    return new ConflictError('the lease no longer holds this run', 'stale_lease');
  }

  async list(): Promise<ExecutorView[]> {
    return Promise.all((await this.d.executors.list()).map((e) => this.view(e)));
  }

  async get(id: string): Promise<ExecutorView> {
    return this.view(await this.load(id));
  }

  /** The executor finishes its running runs and claims no new ones; its next heartbeat says so. */
  async drain(id: string): Promise<ExecutorView> {
    const row = await this.d.executors.setDraining(id, true);
    if (!row) throw new NotFoundError('no such executor');
    this.d.queue.wakeLocal();
    return this.view(row);
  }

  /** Its running runs go back to the queue. */
  async remove(id: string): Promise<void> {
    await this.load(id);
    const { lost, cancelled } = await this.d.runs.requeueExecutorRuns(id, this.d.now().toISOString());
    countRunsFinished('cancelled', cancelled);
    for (const l of lost) await this.d.outputs.removeAttempt(l.id, l.attempt);
    await this.d.executors.delete(id);
    this.d.queue.notify();
  }
}

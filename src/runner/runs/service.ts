import { setTimeout as sleep } from 'node:timers/promises';
import type { Readable } from 'node:stream';
import { ConcurrencyLimit } from '../../infra/concurrency-limit.js';
import { AppError, ConflictError, NotFoundError, PayloadTooLargeError, TooManyRequestsError, ValidationError } from '../../infra/errors.js';
import { nulFieldIn } from '../../infra/nul.js';
import { randomUUID } from '../../infra/secrets.js';
import type { Principal } from '../auth/authenticate.js';
import type { RunStatus } from '../db/schema.js';
import { loadRun, loadWorkflow, type ScopeRepositories } from '../projects/access.js';
import { type DeclaredParameter, parameterProblems, withDeclaredDefaults } from '../workflows/declared-parameters.js';
import type { WorkflowRow } from '../workflows/repository.js';
import { outputNameProblem, type RunOutputStorage } from './output-storage.js';
import { type ExcerptInput, type LogExcerpt, readExcerpt, readLogText } from './log-reading.js';
import { countRunsFinished } from '../metrics.js';
import type { ExecutorsRepository } from '../executors/repository.js';
import type { QueueSignal } from './queue-signal.js';
import type { LogPosition } from './logs-repository.js';
import { isTerminal, type NewRunRow, type RunLogRow, type RunOutputRow, type RunRow } from './run-rows.js';

export interface RunsDeps extends ScopeRepositories {
  now: () => Date;
  /** Wakes executors waiting for work: every queued run goes through `enqueue`. */
  queue: QueueSignal;
  outputs: RunOutputStorage;
  /** Names the executor that holds or held a run. */
  executors: Pick<ExecutorsRepository, 'findById'>;
}

/** `A.S` (attempt A, sequence S): where a log page or stream continues. */
export function formatLogPosition(p: LogPosition): string {
  return `${p.attempt}.${p.seq}`;
}

/** `S` (sequence S of attempt 1) or `A.S`; the route's schema has checked the shape. */
export function parseLogPosition(value: string | undefined): LogPosition {
  if (!value) return { attempt: 1, seq: 0 };
  const [a, b] = value.split('.');
  return b === undefined ? { attempt: 1, seq: Number(a) } : { attempt: Number(a), seq: Number(b) };
}

/** Poll interval of the live log stream; the database is the source of truth across instances. */
export const LOG_STREAM_POLL_MS = 500;
/**
 * The stream asks again whether its caller may still read the run every this many polls (2 s):
 * a revoked token, a removed membership or a deleted user ends it within seconds.
 */
export const LOG_STREAM_RECHECK_POLLS = 4;
/** A comment line this often keeps proxies from closing an idle stream (15 s). */
const KEEP_ALIVE_POLLS = 30;
/**
 * Chunks read per look at the log (each up to the ingest's 16,384 characters): what one stream
 * holds while its client does not read (about 256 KiB of ASCII), and the most it reads from the
 * database in one synchronous step on SQLite.
 */
const LOG_STREAM_PAGE = 16;
/**
 * Live log streams open at once, per user (the admin key counts as one) and in the process:
 * each polls the database twice a second for as long as it is open, so one token's thousands of
 * idle streams would take the process from everyone else.
 */
export const LOG_STREAMS = new ConcurrencyLimit(8, 512);

/** A live log stream; `close` gives its place back (call it once the client is gone). */
export interface LogFollow {
  events: AsyncGenerator<LogEvent>;
  close(): void;
}

export type LogEvent =
  | { type: 'log'; chunk: RunLogRow }
  | { type: 'end'; status: RunStatus | 'deleted' }
  | { type: 'denied'; status: number; code: string; detail: string }
  | { type: 'keep-alive' };

export interface StartInput {
  version?: number;
  parameters?: Record<string, unknown>;
  /** Labels an executor must have to claim the run. */
  requiredLabels?: string[];
}

export interface EnqueueInput {
  workflow: Pick<WorkflowRow, 'id' | 'project_id'>;
  version: number;
  parameters?: Record<string, unknown>;
  requiredLabels?: string[];
  createdBy: string | null;
  scheduleId: string | null;
  /** The parameters the version declares, when the caller has read them (else they are read here). */
  declared?: DeclaredParameter[];
}

export interface WaitOutcome {
  run: RunRow;
  finished: boolean;
}

/** How often a waiting caller looks at the run, and re-checks its access every this many looks. */
export const WAIT_POLL_MS = 1000;
const WAIT_RECHECK_POLLS = 5;

export interface RunFilterInput {
  project?: string;
  workflow?: string;
  status?: RunStatus;
  schedule?: string;
  /** A user id, or `me` for the caller. */
  startedBy?: string;
  since?: string;
  until?: string;
  limit: number;
  cursor?: string;
}


/** A query instant as stored (UTC ISO 8601 with milliseconds); 400 naming the field otherwise. */
function instant(value: string, field: string): string {
  const t = Date.parse(value);
  const [y, m, d] = value.slice(0, 10).split('-').map(Number) as [number, number, number];
  const realDay = new Date(Date.UTC(y, m - 1, d)).getUTCDate() === d && m >= 1 && m <= 12;
  if (!/^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2}))?$/.test(value) || Number.isNaN(t) || !realDay) {
    throw new ValidationError(`${field} must be a date or a date and time in ISO 8601 (2026-11-25 or 2026-11-25T08:00:00Z)`, [{ field, message: 'must be ISO 8601' }]);
  }
  return new Date(t).toISOString();
}

function encodeCursor(r: RunRow): string {
  return Buffer.from(JSON.stringify([r.created_at, r.id])).toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: string; id: string } {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && !nulFieldIn(v)) return { createdAt: v[0], id: v[1] };
  } catch {
    // fall through
  }
  throw new ValidationError('cursor is not valid; use nextCursor from a previous page', [{ field: 'cursor', message: 'is not valid' }]);
}

/** Runs as users see them: start, list, cancel, logs (paged and live), outputs. */
export class RunsService {
  constructor(private readonly d: RunsDeps) {}

  /** Queues a run of a workflow version (default: the latest). Needs the editor role. */
  async start(p: Principal, workflowId: string, input: StartInput): Promise<RunRow> {
    const wf = await loadWorkflow(this.d, p, workflowId, 'write');
    const version = input.version ?? wf.latest_version;
    const row = await this.d.workflows.version(wf.id, version);
    if (!row) {
      throw new ValidationError(`workflow has no version ${version}`, [{ field: 'version', message: 'does not exist' }]);
    }
    // Values for the parameters this version declares must fit them. A schedule's runs are not
    // checked when they fire: the version they take can change, and a fire must not be lost.
    const declared = JSON.parse(row.declared_parameters) as DeclaredParameter[];
    const problems = parameterProblems(declared, input.parameters ?? {});
    if (problems.length > 0) {
      throw new ValidationError(problems.map((p) => `${p.field} ${p.message}`).join('; '), problems);
    }
    return this.enqueue({ ...input, workflow: wf, version, createdBy: p.type === 'user' ? p.user.id : null, scheduleId: null, declared });
  }

  /**
   * Queues a run without checking the caller: `start` after its checks, and the scheduler,
   * which acts for a schedule its editors set up. The workflow version must exist.
   */
  async enqueue(input: EnqueueInput): Promise<RunRow> {
    const run = await this.d.runs.create(this.newRun(input, await this.declaredOf(input)));
    // An idle executor's long-poll claim is woken at once, here and on other instances.
    this.d.queue.notify();
    return run;
  }

  /**
   * Queues a run as part of the caller's own transaction: `store` writes the run (with
   * `insertRun` on that transaction) together with whatever else must commit with it, and says
   * whether it did. The scheduler takes a fire and inserts its run this way, so a fire is never
   * taken without its run. Executors are woken only after `store` has returned, i.e. after its
   * COMMIT: a claim woken earlier would look for the run before it is visible and go back to
   * sleep. Null when `store` wrote nothing.
   */
  async enqueueWith(input: EnqueueInput, store: (run: NewRunRow) => Promise<boolean>): Promise<NewRunRow | null> {
    const run = this.newRun(input, await this.declaredOf(input));
    if (!(await store(run))) return null;
    this.d.queue.notify();
    return run;
  }

  /** The parameters the run's version declares: their defaults fill the values not given. */
  private async declaredOf(input: EnqueueInput): Promise<DeclaredParameter[]> {
    if (input.declared) return input.declared;
    const row = await this.d.workflows.version(input.workflow.id, input.version);
    return row ? (JSON.parse(row.declared_parameters) as DeclaredParameter[]) : [];
  }

  private newRun(input: EnqueueInput, declared: DeclaredParameter[]): NewRunRow {
    return {
      id: randomUUID(),
      project_id: input.workflow.project_id,
      workflow_id: input.workflow.id,
      workflow_version: input.version,
      status: 'queued',
      parameters: JSON.stringify(withDeclaredDefaults(declared, input.parameters ?? {})),
      required_labels: JSON.stringify(input.requiredLabels ?? []),
      schedule_id: input.scheduleId,
      created_by: input.createdBy,
      created_at: this.d.now().toISOString(),
      started_at: null,
      finished_at: null,
      attempt: 0,
      executor_id: null,
      lease_hash: null,
      lease_expires_at: null,
      exit_code: null,
      error: null,
    };
  }

  /** Newest first with a keyset cursor; users see the runs of their projects. */
  async list(p: Principal, f: RunFilterInput): Promise<{ items: RunRow[]; nextCursor: string | null }> {
    // `startedBy=me` with the admin key: the key starts no runs, so the filter matches none
    // (answered here: an empty creator would read as no filter at all).
    if (f.startedBy === 'me' && p.type === 'api-key') return { items: [], nextCursor: null };
    const rows = await this.d.runs.list({
      memberUserId: p.type === 'api-key' || p.user.role === 'admin' ? null : p.user.id,
      projectId: f.project,
      workflowId: f.workflow,
      status: f.status,
      scheduleId: f.schedule,
      createdBy: f.startedBy === 'me' && p.type === 'user' ? p.user.id : f.startedBy,
      since: f.since === undefined ? undefined : instant(f.since, 'since'),
      until: f.until === undefined ? undefined : instant(f.until, 'until'),
      limit: f.limit + 1,
      after: f.cursor ? decodeCursor(f.cursor) : undefined,
    });
    const items = rows.slice(0, f.limit);
    const last = items[items.length - 1];
    return { items, nextCursor: rows.length > f.limit && last ? encodeCursor(last) : null };
  }

  get(p: Principal, id: string): Promise<RunRow> {
    return loadRun(this.d, p, id, 'read');
  }

  /** A run with the name of its executor (null: none yet, or one removed since), for its page. */
  async getWithExecutor(p: Principal, id: string): Promise<{ run: RunRow; executorName: string | null }> {
    const run = await loadRun(this.d, p, id, 'read');
    const executor = run.executor_id ? await this.d.executors.findById(run.executor_id) : undefined;
    return { run, executorName: executor?.name ?? null };
  }

  /**
   * A queued run is cancelled at once. A running one becomes `cancelling`: its executor learns it
   * at its next heartbeat, kills it and confirms, then it is `cancelled` (until then it still
   * uses the executor's capacity). Cancelling again is harmless; a finished run is 409.
   */
  async cancel(p: Principal, id: string): Promise<RunRow> {
    const run = await loadRun(this.d, p, id, 'write');
    const cancelled = await this.d.runs.cancel(run.id, this.d.now().toISOString());
    if (!cancelled) {
      // Its end committed first (maybe just now): say how it ended.
      const ended = await this.d.runs.findById(run.id);
      throw new ConflictError(`the run has already finished (${ended?.status ?? 'deleted'})`, 'run_finished');
    }
    // A queued run ends here; a running one ends when its executor confirms (ExecutorsService).
    countRunsFinished(cancelled.status);
    return cancelled;
  }

  /**
   * Queues the run again with its parameters (those given replacing theirs) and required labels,
   * of the version it ran or the latest; only a finished run (409 otherwise). Needs the editor
   * role, as starting does; the new run is checked against its version's declared parameters.
   */
  async rerun(p: Principal, id: string, input: { version: 'original' | 'latest'; parameters?: Record<string, unknown> }): Promise<RunRow> {
    // The role first (as starting needs it), then the state: a viewer learns no more than 403.
    const run = await loadRun(this.d, p, id, 'write');
    if (!isTerminal(run.status)) throw new ConflictError(`the run has not finished (${run.status}); cancel it or wait for it first`, 'run_not_finished');
    return this.start(p, run.workflow_id, {
      version: input.version === 'original' ? run.workflow_version : undefined,
      parameters: { ...(JSON.parse(run.parameters) as Record<string, unknown>), ...input.parameters },
      requiredLabels: JSON.parse(run.required_labels) as string[],
    });
  }

  /** The end of one attempt's log within a budget (log-reading.ts), with the project's read permission. */
  async logExcerpt(p: Principal, id: string, input: ExcerptInput): Promise<LogExcerpt> {
    return readExcerpt(this.d.runs, await loadRun(this.d, p, id, 'read'), input);
  }

  /** Every attempt's log as one text, its end when longer than `bytes` or `lines` (log-reading.ts). */
  async logText(p: Principal, id: string, bytes: number, lines: number): Promise<{ run: RunRow; text: string; truncated: boolean }> {
    return readLogText(this.d.runs, await loadRun(this.d, p, id, 'read'), bytes, lines);
  }

  /** One output file's bytes, when it is at most `maxBytes` (413 naming the download route otherwise). */
  async readOutput(p: Principal, id: string, name: string, maxBytes: number): Promise<{ output: RunOutputRow; bytes: Buffer }> {
    const run = await loadRun(this.d, p, id, 'read');
    const output = outputNameProblem(name) ? undefined : await this.d.runs.output(run.id, name);
    if (!output) throw new NotFoundError(`run ${run.id} has no output ${name}`);
    if (output.size > maxBytes) {
      throw new PayloadTooLargeError(`the output is ${output.size} bytes, more than ${maxBytes} can be read here; download it from GET /api/runs/${run.id}/outputs/${encodeURIComponent(name)}`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of await this.d.outputs.open(run.id, run.attempt, name)) {
      size += (chunk as Buffer).length;
      if (size > maxBytes) throw new PayloadTooLargeError(`the output grew past ${maxBytes} bytes while it was read`);
      chunks.push(chunk as Buffer);
    }
    return { output, bytes: Buffer.concat(chunks) };
  }

  /**
   * Waits until the run has ended or `timeoutMs` has passed, looking every WAIT_POLL_MS (the
   * database is the truth across instances) and telling `progress` each time. `principal()`
   * authenticates the caller again every few looks: a revoked token or a removed membership ends
   * the wait with its 401/403/404. Stops early when `signal` aborts (the client went away).
   */
  async waitForEnd(
    principal: () => Promise<Principal>,
    id: string,
    opts: { timeoutMs: number; signal: AbortSignal; progress: (run: RunRow, elapsedMs: number) => Promise<void> },
  ): Promise<WaitOutcome> {
    let run = await loadRun(this.d, await principal(), id, 'read');
    const started = Date.now();
    for (let poll = 1; !isTerminal(run.status); poll++) {
      const elapsed = Date.now() - started;
      if (elapsed >= opts.timeoutMs || opts.signal.aborted) return { run, finished: false };
      await opts.progress(run, elapsed);
      await sleep(Math.min(WAIT_POLL_MS, opts.timeoutMs - elapsed), undefined, { signal: opts.signal }).catch(() => undefined);
      const current = poll % WAIT_RECHECK_POLLS === 0 ? await loadRun(this.d, await principal(), id, 'read') : await this.d.runs.findById(run.id);
      if (!current) throw new NotFoundError('no such run');
      run = current;
    }
    return { run, finished: true };
  }

  /** Chunks after `after`, of one attempt or of all attempts in order (attempt, then sequence). */
  async logs(
    p: Principal,
    id: string,
    after: LogPosition,
    limit: number,
    attempt?: number,
  ): Promise<{ items: RunLogRow[]; nextAfter: string; finished: boolean }> {
    const run = await loadRun(this.d, p, id, 'read');
    const items = await this.d.runs.logs(run.id, after, limit, attempt);
    const last = items[items.length - 1];
    return { items, nextAfter: formatLogPosition(last ?? after), finished: isTerminal(run.status) };
  }

  /** A run and its outputs, with one access check (what an assistant asks for in one call). */
  async getWithOutputs(p: Principal, id: string): Promise<{ run: RunRow; outputs: RunOutputRow[] }> {
    const run = await loadRun(this.d, p, id, 'read');
    return { run, outputs: await this.d.runs.outputs(run.id) };
  }

  async outputs(p: Principal, id: string): Promise<RunOutputRow[]> {
    const run = await loadRun(this.d, p, id, 'read');
    return this.d.runs.outputs(run.id);
  }

  /** One output file of a run, with the project's read permission. */
  async openOutput(p: Principal, id: string, name: string): Promise<{ output: RunOutputRow; stream: Readable }> {
    const run = await loadRun(this.d, p, id, 'read');
    // A name no upload could have (NUL, separators…) is not looked up: PostgreSQL refuses NUL.
    const output = outputNameProblem(name) ? undefined : await this.d.runs.output(run.id, name);
    if (!output) throw new NotFoundError(`run ${run.id} has no output ${name}`);
    // The outputs listed are those of the run's latest attempt: a requeue drops the lost one's.
    return { output, stream: await this.d.outputs.open(run.id, run.attempt, name) };
  }

  /**
   * The live log tail: chunks after `after` as they are stored, then `end` once the run has
   * ended. `principal()` authenticates the caller again (the credential as sent); every few
   * seconds the stream re-checks it and the project membership, and ends with `denied` once the
   * caller may no longer read the run. Stops when `open()` turns false (client went away).
   */
  async follow(principal: () => Promise<Principal>, id: string, after: LogPosition, open: () => boolean): Promise<LogFollow> {
    const caller = await principal();
    const run = await loadRun(this.d, caller, id, 'read');
    const key = caller.type === 'user' ? caller.user.id : 'api-key';
    if (!LOG_STREAMS.enter(key)) {
      throw new TooManyRequestsError(`at most ${LOG_STREAMS.perCaller} live log streams per user and ${LOG_STREAMS.total} in all are open at once; close one or page with GET /api/runs/${run.id}/logs`, 5);
    }
    let held = true;
    const close = () => {
      if (held) LOG_STREAMS.leave(key);
      held = false;
    };
    return { events: this.tail(principal, run, after, open), close };
  }

  private async *tail(principal: () => Promise<Principal>, run: RunRow, after: LogPosition, open: () => boolean): AsyncGenerator<LogEvent> {
    const id = run.id;
    for (let poll = 1; open(); poll++) {
      const rows = await this.d.runs.logs(run.id, after, LOG_STREAM_PAGE);
      for (const chunk of rows) {
        yield { type: 'log', chunk };
        after = { attempt: chunk.attempt, seq: chunk.seq };
      }
      if (rows.length < LOG_STREAM_PAGE) {
        const current = await this.d.runs.findById(run.id);
        if (!current || isTerminal(current.status)) {
          // Read on to the end: chunks stored just before the run ended must not be lost (a page
          // at a time, so a stream never holds more than one page).
          for (let more = LOG_STREAM_PAGE; more === LOG_STREAM_PAGE && open(); ) {
            const rest = await this.d.runs.logs(run.id, after, LOG_STREAM_PAGE);
            more = rest.length;
            for (const chunk of rest) {
              yield { type: 'log', chunk };
              after = { attempt: chunk.attempt, seq: chunk.seq };
            }
          }
          yield { type: 'end', status: current?.status ?? 'deleted' };
          return;
        }
        await sleep(LOG_STREAM_POLL_MS);
        if (poll % KEEP_ALIVE_POLLS === 0) yield { type: 'keep-alive' };
      }
      if (poll % LOG_STREAM_RECHECK_POLLS === 0) {
        try {
          await loadRun(this.d, await principal(), id, 'read');
        } catch (e) {
          if (!(e instanceof AppError) || e.status >= 500) throw e;
          yield { type: 'denied', status: e.status, code: e.code, detail: e.message };
          return;
        }
      }
    }
  }
}

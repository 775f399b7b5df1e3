import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ConflictError, NotFoundError, ValidationError } from '../../infra/errors.js';
import type { HttpApp } from '../../infra/http.js';
import { randomUUID } from '../../infra/secrets.js';
import { RUN_READ, RUN_WRITE, USER_WRITE } from '../auth/access.js';
import { access, principalOf } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import type { RunStatus } from '../db/schema.js';
import { requireProjectAccess } from '../projects/access.js';
import type { RunLogRow, RunOutputRow, RunRow } from '../runs/repository.js';
import { CounterString, errors, Id, IdParams, MAX_COUNTER, items, Nullable, NullableTimestamp, page, PROTECTED, StringEnum, Timestamp } from './schemas.js';

export const RunStatusSchema = StringEnum(['queued', 'running', 'succeeded', 'failed', 'cancelled']);

// A type array, not anyOf (see schemas.ts); maxLength applies to strings only.
const ParameterValue = Type.Unsafe<string | number | boolean | null>({ type: ['string', 'number', 'boolean', 'null'], maxLength: 10_000 });
const Parameters = Type.Record(Type.String({ minLength: 1, maxLength: 200 }), ParameterValue, { maxProperties: 200 });

export const Run = Type.Object({
  id: Type.String(),
  projectId: Type.String(),
  workflowId: Type.String(),
  workflowVersion: Type.Integer(),
  status: RunStatusSchema,
  parameters: Type.Record(Type.String(), ParameterValue),
  attempt: Type.Integer({ description: 'how many times an executor has taken the run' }),
  executorId: Nullable(Type.String()),
  exitCode: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  createdAt: Timestamp,
  startedAt: NullableTimestamp,
  finishedAt: NullableTimestamp,
});

export const LogChunk = Type.Object({ seq: Type.Integer(), attempt: Type.Integer(), text: Type.String(), createdAt: Timestamp });

const Output = Type.Object({
  name: Type.String(),
  size: Type.Integer(),
  sha256: Nullable(Type.String()),
  contentType: Nullable(Type.String()),
  createdAt: Timestamp,
});

export function presentRun(r: RunRow) {
  return {
    id: r.id,
    projectId: r.project_id,
    workflowId: r.workflow_id,
    workflowVersion: r.workflow_version,
    status: r.status,
    parameters: JSON.parse(r.parameters) as Record<string, string | number | boolean | null>,
    attempt: r.attempt,
    executorId: r.executor_id,
    exitCode: r.exit_code,
    error: r.error,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
  };
}

export function presentLog(l: RunLogRow) {
  return { seq: l.seq, attempt: l.attempt, text: l.text, createdAt: l.created_at };
}

function presentOutput(o: RunOutputRow) {
  return { name: o.name, size: o.size, sha256: o.sha256, contentType: o.content_type, createdAt: o.created_at };
}

function encodeCursor(r: RunRow): string {
  return Buffer.from(JSON.stringify([r.created_at, r.id])).toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: string; id: string } {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string') return { createdAt: v[0], id: v[1] };
  } catch {
    // fall through
  }
  throw new ValidationError('cursor is not valid; use nextCursor from a previous page', [{ field: 'cursor', message: 'is not valid' }]);
}

const TERMINAL = new Set<RunStatus>(['succeeded', 'failed', 'cancelled']);
const Seq = CounterString('a log sequence number (0-999999999)');

/** Poll interval of the live log stream; the database is the source of truth across instances. */
export const LOG_STREAM_POLL_MS = 500;

export function registerRunRoutes(app: HttpApp, ctx: RunnerContext): void {
  const { runs, workflows, projects } = ctx;

  /** Loads a run the caller may see (membership of its project for users); 404 otherwise. */
  async function loadRun(req: FastifyRequest, id: string, need: 'read' | 'write'): Promise<RunRow> {
    const run = await runs.findById(id);
    if (!run) throw new NotFoundError('no such run');
    try {
      await requireProjectAccess(projects, principalOf(req), run.project_id, need);
    } catch (e) {
      if (e instanceof NotFoundError) throw new NotFoundError('no such run');
      throw e;
    }
    return run;
  }

  app.post(
    '/api/workflows/:id/runs',
    {
      config: access(USER_WRITE),
      schema: {
        tags: ['runs'],
        summary: 'Start a run',
        description: 'Queues a run of a workflow version (default: the latest) with parameters. Needs the editor role.',
        operationId: 'startRun',
        params: IdParams,
        body: Type.Object(
          { version: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_COUNTER })), parameters: Type.Optional(Parameters) },
          { additionalProperties: false },
        ),
        response: { 201: Run, ...errors(...PROTECTED, 404) },
      },
    },
    async (req, reply) => {
      const wf = await workflows.findById(req.params.id);
      if (!wf) throw new NotFoundError('no such workflow');
      const principal = principalOf(req);
      try {
        await requireProjectAccess(projects, principal, wf.project_id, 'write');
      } catch (e) {
        if (e instanceof NotFoundError) throw new NotFoundError('no such workflow');
        throw e;
      }
      const version = req.body.version ?? wf.latest_version;
      if (!(await workflows.version(wf.id, version))) {
        throw new ValidationError(`workflow has no version ${version}`, [{ field: 'version', message: 'does not exist' }]);
      }
      const row = await runs.create({
        id: randomUUID(),
        project_id: wf.project_id,
        workflow_id: wf.id,
        workflow_version: version,
        status: 'queued',
        parameters: JSON.stringify(req.body.parameters ?? {}),
        created_by: principal.type === 'user' ? principal.user.id : null,
        created_at: ctx.now().toISOString(),
        started_at: null,
        finished_at: null,
        attempt: 0,
        executor_id: null,
        lease_hash: null,
        lease_expires_at: null,
        exit_code: null,
        error: null,
      });
      return reply.code(201).send(presentRun(row));
    },
  );

  app.get(
    '/api/runs',
    {
      config: access(RUN_READ),
      schema: {
        tags: ['runs'],
        summary: 'List runs',
        description: 'Newest first, filtered, with cursor pagination. Users see the runs of their projects.',
        operationId: 'listRuns',
        querystring: Type.Object(
          {
            project: Type.Optional(Id),
            workflow: Type.Optional(Id),
            status: Type.Optional(RunStatusSchema),
            limit: Type.Optional(Type.String({ pattern: '^([1-9]|[1-9][0-9]|100)$', description: '1-100, default 50' })),
            cursor: Type.Optional(Type.String({ maxLength: 500 })),
          },
          { additionalProperties: false },
        ),
        response: { 200: page(Run), ...errors(...PROTECTED) },
      },
    },
    async (req) => {
      const p = principalOf(req);
      const limit = Number(req.query.limit ?? 50);
      const rows = await runs.list({
        memberUserId: p.type === 'api-key' || p.user.role === 'admin' ? null : p.user.id,
        projectId: req.query.project,
        workflowId: req.query.workflow,
        status: req.query.status,
        limit: limit + 1,
        after: req.query.cursor ? decodeCursor(req.query.cursor) : undefined,
      });
      const pageRows = rows.slice(0, limit);
      const last = pageRows[pageRows.length - 1];
      return { items: pageRows.map(presentRun), nextCursor: rows.length > limit && last ? encodeCursor(last) : null };
    },
  );

  app.get(
    '/api/runs/:id',
    {
      config: access(RUN_READ),
      schema: { tags: ['runs'], summary: 'Get a run', operationId: 'getRun', params: IdParams, response: { 200: Run, ...errors(...PROTECTED, 404) } },
    },
    async (req) => presentRun(await loadRun(req, req.params.id, 'read')),
  );

  app.post(
    '/api/runs/:id/cancel',
    {
      config: access(RUN_WRITE),
      schema: {
        tags: ['runs'],
        summary: 'Cancel a run',
        description: 'A queued or running run becomes cancelled; its executor is fenced off (409 on its next call). A finished run gives 409.',
        operationId: 'cancelRun',
        params: IdParams,
        response: { 200: Run, ...errors(...PROTECTED, 404, 409) },
      },
    },
    async (req) => {
      const run = await loadRun(req, req.params.id, 'write');
      const cancelled = await runs.cancel(run.id, ctx.now().toISOString());
      if (!cancelled) throw new ConflictError(`the run has already ended (${run.status})`, 'run_finished');
      return presentRun(cancelled);
    },
  );

  app.get(
    '/api/runs/:id/logs',
    {
      config: access(RUN_READ),
      schema: {
        tags: ['runs'],
        summary: 'Read run logs',
        description: 'Chunks with sequence numbers greater than `after`, in order; pass `nextAfter` to page on.',
        operationId: 'getRunLogs',
        params: IdParams,
        querystring: Type.Object(
          { after: Type.Optional(Seq), limit: Type.Optional(Type.String({ pattern: '^([1-9]|[1-9][0-9]{1,2}|1000)$', description: '1-1000, default 200' })) },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            items: Type.Array(LogChunk),
            nextAfter: Type.Integer({ description: 'sequence to pass as `after` for the next page' }),
            finished: Type.Boolean({ description: 'the run has ended (more chunks can still be on later pages)' }),
          }),
          ...errors(...PROTECTED, 404),
        },
      },
    },
    async (req) => {
      const run = await loadRun(req, req.params.id, 'read');
      const after = Number(req.query.after ?? 0);
      const rows = await runs.logs(run.id, after, Number(req.query.limit ?? 200));
      const last = rows[rows.length - 1];
      return { items: rows.map(presentLog), nextAfter: last ? last.seq : after, finished: TERMINAL.has(run.status) };
    },
  );

  app.get(
    '/api/runs/:id/logs/stream',
    {
      config: access(RUN_READ),
      schema: {
        tags: ['runs'],
        summary: 'Follow run logs live (Server-Sent Events)',
        description:
          'Each chunk is an SSE `log` event whose `id` is its sequence number (reconnect with `Last-Event-ID` or `after`); ' +
          'an `end` event with the final run status closes the stream.',
        operationId: 'streamRunLogs',
        params: IdParams,
        querystring: Type.Object({ after: Type.Optional(Seq) }, { additionalProperties: false }),
        headers: Type.Object({ 'last-event-id': Type.Optional(Seq) }),
        response: {
          200: { description: 'An event stream', content: { 'text/event-stream': { schema: Type.String() } } },
          ...errors(...PROTECTED, 404),
        },
      },
    },
    async (req, reply) => {
      const run = await loadRun(req, req.params.id, 'read');
      let after = Number(req.headers['last-event-id'] ?? req.query.after ?? 0);
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        ...(reply.getHeaders() as Record<string, string>),
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      let open = true;
      req.raw.on('close', () => {
        open = false;
      });
      let idle = 0;
      try {
        while (open) {
          const rows = await runs.logs(run.id, after, 500);
          for (const l of rows) {
            res.write(`id: ${l.seq}\nevent: log\ndata: ${JSON.stringify(presentLog(l))}\n\n`);
            after = l.seq;
          }
          if (rows.length === 500) continue;
          const current = await runs.findById(run.id);
          if (!current || TERMINAL.has(current.status)) {
            // Read once more: chunks stored just before the run ended must not be lost.
            const tail = await runs.logs(run.id, after, 10_000);
            for (const l of tail) res.write(`id: ${l.seq}\nevent: log\ndata: ${JSON.stringify(presentLog(l))}\n\n`);
            res.write(`event: end\ndata: ${JSON.stringify({ status: current?.status ?? 'deleted' })}\n\n`);
            break;
          }
          await new Promise((r) => setTimeout(r, LOG_STREAM_POLL_MS));
          if (++idle % 30 === 0) res.write(': keep-alive\n\n');
        }
      } catch (e) {
        req.log.error({ err: e }, 'log stream failed');
      } finally {
        res.end();
      }
    },
  );

  app.get(
    '/api/runs/:id/outputs',
    {
      config: access(RUN_READ),
      schema: {
        tags: ['runs'],
        summary: 'List the outputs of a run',
        operationId: 'listRunOutputs',
        params: IdParams,
        response: { 200: items(Output), ...errors(...PROTECTED, 404) },
      },
    },
    async (req) => {
      const run = await loadRun(req, req.params.id, 'read');
      return { items: (await runs.outputs(run.id)).map(presentOutput) };
    },
  );
}

import type { ServerResponse } from 'node:http';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { Type } from 'typebox';
import type { HttpApp } from '../../infra/http.js';
import { RUN_READ, RUN_WRITE, USER_WRITE } from '../auth/access.js';
import { access, principalOf } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import { type LogEvent, parseLogPosition } from '../runs/service.js';
import { LogChunk, Output, RunParameters as Parameters, presentLog, presentOutput, presentRun, Run, RunStatusSchema } from './presenters.js';
import { CounterString, errors, StringEnum, Id, IdParams, items, MAX_COUNTER, OutputParams, page, plainJson, PROTECTED, RequiredLabels } from './schemas.js';

/** Characters that may not appear in a quoted Content-Disposition filename as is (RFC 6266). */
const UNSAFE_FILENAME = /[^A-Za-z0-9._-]/g;

/** A log position: `S` (sequence S of attempt 1, or of `attempt` when given) or `A.S` (attempt A, sequence S). */
const LogCursor = (description: string) => Type.String({ pattern: '^(0|[1-9][0-9]{0,8})(\\.(0|[1-9][0-9]{0,8}))?$', maxLength: 19, description });
const Attempt = CounterString('only the chunks of this attempt (each attempt numbers its chunks from 1)');

/** One Server-Sent Event per log event (https://html.spec.whatwg.org/multipage/server-sent-events.html). */
function eventText(e: LogEvent): string {
  switch (e.type) {
    case 'log':
      return `id: ${e.chunk.attempt}.${e.chunk.seq}\nevent: log\ndata: ${JSON.stringify(presentLog(e.chunk))}\n\n`;
    case 'end':
      return `event: end\ndata: ${JSON.stringify({ status: e.status })}\n\n`;
    case 'denied':
      return `event: error\ndata: ${JSON.stringify({ status: e.status, code: e.code, detail: e.detail })}\n\n`;
    case 'keep-alive':
      return ': keep-alive\n\n';
  }
}

/**
 * Characters a stream writes before it lets the loop's other work go first. A client that reads
 * as fast as loopback goes never fills the socket's buffer (the kernel takes each write at
 * once), so without a turn a long log would be read, serialized and written page after page in
 * one task while every other request waited (eight such streams held the loop 400 ms).
 */
const STREAM_TURN_CHARS = 64 * 1024;

/**
 * Writes the events as the socket takes them: one event buffered at most, a turn every
 * STREAM_TURN_CHARS, and what was written charged to the caller's pace (`paced`: a stream read
 * as fast as it comes is served at the caller's rate, as its pages of the same log would be).
 */
async function writeEvents(res: ServerResponse, events: AsyncIterable<LogEvent>, open: () => boolean, paced: ((chars: number) => number) | null): Promise<void> {
  let sinceTurn = 0;
  for await (const e of events) {
    const text = eventText(e);
    sinceTurn += text.length;
    if (sinceTurn < STREAM_TURN_CHARS) {
      if (!res.write(text) && open()) await drained(res);
      continue;
    }
    res.write(text);
    const wait = paced?.(sinceTurn) ?? 0;
    sinceTurn = 0;
    if (wait > 0) await sleep(wait);
    else await nextTurn();
    if (res.writableNeedDrain && open()) await drained(res);
  }
}

/** Resolves once the socket has taken what was written, or is gone. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** Runs: each handler validates, calls one RunsService method, presents. */
export function registerRunRoutes(app: HttpApp, ctx: RunnerContext): void {
  const { runs, auth } = ctx;

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
          {
            version: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_COUNTER })),
            parameters: Type.Optional(Parameters),
            requiredLabels: Type.Optional(RequiredLabels),
          },
          { additionalProperties: false },
        ),
        response: { 201: Run, ...errors(...PROTECTED, 404) },
      },
    },
    async (req, reply) => reply.code(201).send(presentRun(await runs.start(principalOf(req), req.params.id, req.body))),
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
            schedule: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'runs a schedule started' })),
            startedBy: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'a user id, or `me` (empty is a 400, not "anyone": leave it out for that)' })),
            since: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'created at or after (ISO 8601 date or date-time)' })),
            until: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'created before (ISO 8601 date or date-time)' })),
            limit: Type.Optional(Type.String({ pattern: '^([1-9]|[1-9][0-9]|100)$', description: '1-100, default 50' })),
            cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
          },
          { additionalProperties: false },
        ),
        response: { 200: page(Run), ...errors(...PROTECTED) },
      },
      serializerCompiler: plainJson,
    },
    async (req) => {
      const { items, nextCursor } = await runs.list(principalOf(req), { ...req.query, limit: Number(req.query.limit ?? 50) });
      return { items: items.map(presentRun), nextCursor };
    },
  );

  app.get(
    '/api/runs/:id',
    {
      config: access(RUN_READ),
      schema: { tags: ['runs'], summary: 'Get a run', operationId: 'getRun', params: IdParams, response: { 200: Run, ...errors(...PROTECTED, 404) } },
    },
    async (req) => {
      const { run, executorName } = await runs.getWithExecutor(principalOf(req), req.params.id);
      return { ...presentRun(run), executorName };
    },
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
    async (req) => presentRun(await runs.cancel(principalOf(req), req.params.id)),
  );

  app.post(
    '/api/runs/:id/rerun',
    {
      config: access(USER_WRITE),
      schema: {
        tags: ['runs'],
        summary: 'Re-run a finished run',
        description:
          'Queues a new run of the same workflow with the same parameters (those in `parameters` replace theirs) and required labels, ' +
          'of the version the run used (`original`, the default) or the `latest`. Needs the editor role; a run still queued or running gives 409.',
        operationId: 'rerunRun',
        params: IdParams,
        body: Type.Object(
          { version: Type.Optional(StringEnum(['original', 'latest'])), parameters: Type.Optional(Parameters) },
          { additionalProperties: false },
        ),
        response: { 201: Run, ...errors(...PROTECTED, 404, 409) },
      },
    },
    async (req, reply) => {
      const run = await runs.rerun(principalOf(req), req.params.id, { version: req.body?.version ?? 'original', parameters: req.body?.parameters });
      return reply.code(201).send(presentRun(run));
    },
  );

  app.get(
    '/api/runs/:id/logs',
    {
      config: access(RUN_READ),
      schema: {
        tags: ['runs'],
        summary: 'Read run logs',
        description:
          'Chunks in order: of every attempt (attempt, then sequence; a retried run starts each attempt at sequence 1), or of one `attempt`. ' +
          'Pass `nextAfter` as `after` to page on.',
        operationId: 'getRunLogs',
        params: IdParams,
        querystring: Type.Object(
          { after: Type.Optional(LogCursor('chunks after this position: `A.S`, or `S` for attempt 1 (or for `attempt`)')), attempt: Type.Optional(Attempt), limit: Type.Optional(Type.String({ pattern: '^([1-9]|[1-9][0-9]{1,2}|1000)$', description: '1-1000, default 200' })) },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            items: Type.Array(LogChunk),
            nextAfter: Type.String({ description: 'position (`attempt.seq`) to pass as `after` for the next page' }),
            finished: Type.Boolean({ description: 'the run has ended (more chunks can still be on later pages)' }),
          }),
          ...errors(...PROTECTED, 404),
        },
      },
    },
    async (req) => {
      const attempt = req.query.attempt === undefined ? undefined : Number(req.query.attempt);
      const after = parseLogPosition(req.query.after);
      const page = await runs.logs(principalOf(req), req.params.id, after, Number(req.query.limit ?? 200), attempt);
      return { ...page, items: page.items.map(presentLog) };
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
          'Each chunk is an SSE `log` event whose `id` is its position `attempt.seq` (reconnect with `Last-Event-ID` or `after`); ' +
          'an `end` event with the final run status closes the stream. The caller\'s access is checked again every few seconds; ' +
          'once it is gone (token revoked, membership removed, user deleted) an `error` event closes the stream.',
        operationId: 'streamRunLogs',
        params: IdParams,
        querystring: Type.Object({ after: Type.Optional(LogCursor('chunks after this position (`A.S`, or `S` for attempt 1)')) }, { additionalProperties: false }),
        headers: Type.Object({ 'last-event-id': Type.Optional(LogCursor('the `id` of the last event received')) }),
        response: {
          200: { description: 'An event stream', content: { 'text/event-stream': { schema: Type.String() } } },
          ...errors(...PROTECTED, 404),
        },
      },
    },
    async (req, reply) => {
      let open = true;
      req.raw.on('close', () => {
        open = false;
      });
      // Access is checked before the stream starts, so a 404/403 is still a normal answer.
      const after = parseLogPosition(req.headers['last-event-id'] ?? req.query.after);
      const { events, close } = await runs.follow(() => auth.reauthenticate(req), req.params.id, after, () => open);
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        ...(reply.getHeaders() as Record<string, string>),
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      try {
        // A client that does not read holds one event in the socket's buffer, never the log.
        await writeEvents(res, events, () => open, req.paceSent);
      } catch (e) {
        req.log.error({ err: e }, 'log stream failed');
      } finally {
        close();
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
    async (req) => ({ items: (await runs.outputs(principalOf(req), req.params.id)).map(presentOutput) }),
  );

  app.get(
    '/api/runs/:id/outputs/:name',
    {
      config: access(RUN_READ),
      schema: {
        tags: ['runs'],
        summary: 'Download an output file of a run',
        description: 'The file as the executor uploaded it (its sha256 in `x-content-sha256`). Needs read access to the run\'s project.',
        operationId: 'downloadRunOutput',
        params: OutputParams,
        response: {
          200: { description: 'The output file', content: { 'application/octet-stream': { schema: Type.String({ format: 'binary' }) } } },
          ...errors(...PROTECTED, 404),
        },
      },
    },
    async (req, reply) => {
      const { output, stream } = await runs.openOutput(principalOf(req), req.params.id, req.params.name);
      const ascii = output.name.replace(UNSAFE_FILENAME, '_');
      return reply
        // Served as bytes, never rendered: an output is whatever the workflow wrote.
        .header('content-type', 'application/octet-stream')
        .header('x-content-type-options', 'nosniff')
        .header('content-length', String(output.size))
        .header('content-disposition', `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(output.name)}`)
        .header('x-content-sha256', output.sha256 ?? '')
        .send(stream as unknown as string);
    },
  );
}

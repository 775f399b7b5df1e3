import { Type } from 'typebox';
import type { HttpApp } from '../../infra/http.js';
import { EXECUTORS, EXECUTORS_READ } from '../auth/access.js';
import { access } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import { Executor, presentExecutor, presentRun, Run } from './presenters.js';
import { withMultipart } from './multipart.js';
import { multipartConfig } from './openapi.js';
import { errors, Id, IdParams, INT32_MAX, INT32_MIN, items, Label, MAX_COUNTER, Name, NoContent, Nullable, OutputParams, PROTECTED, StringEnum, Timestamp } from './schemas.js';

const ADMIN_READ = "Administrators: a web session, an administrator's token with the read scope, or the admin key.";

const LeaseBody = {
  leaseToken: Type.String({ minLength: 1, maxLength: 200, description: 'the lease token from the claim' }),
  attempt: Type.Integer({ minimum: 1, maximum: MAX_COUNTER, description: 'the attempt from the claim' }),
};

/** Most log chunks in one request, and most UTF-16 units of one chunk's text. */
const MAX_LOG_CHUNKS = 200;
const MAX_LOG_CHUNK_LENGTH = 16_384;
/**
 * Body limit of POST /api/runs/{id}/logs: the largest batch the schema allows must fit, also in
 * UTF-8 (up to 3 bytes per UTF-16 unit: 200 × 16,384 × 3 = 9.4 MiB) with the JSON around it; the
 * app-wide 1 MiB limit turned a 3 MB burst of output into a 413 and a lost log.
 * Text JSON-escapes longer (control characters as \uXXXX), so such a batch may still get 413:
 * send fewer chunks then.
 */
const LOG_BODY_LIMIT = 10 * 1024 * 1024;

/** Seconds a claim waits for a run when `wait` is not given (docs/runner.md#writing-your-own-executor). */
const DEFAULT_CLAIM_WAIT_SECONDS = 20;

const Heartbeat = Type.Object({
  ...Executor.properties,
  cancel: Type.Array(Type.String(), { description: 'runs to kill now; then complete each with status cancelled' }),
  drain: Type.Boolean({ description: 'claim nothing new; finish the runs held' }),
  heartbeatMs: Type.Integer({ description: 'send the next heartbeat within this many milliseconds' }),
});


const OUTPUT_DOC = multipartConfig({
  fields: {
    leaseToken: { type: 'string', maxLength: 200, description: 'the lease token from the claim' },
    attempt: { type: 'string', description: 'the attempt from the claim' },
    sha256: { type: 'string', description: 'sha256 of the file, 64 hex digits' },
    file: { type: 'string', format: 'binary', description: 'the output file' },
  },
  required: ['leaseToken', 'attempt', 'sha256', 'file'],
});

const Claim = Type.Object({
  run: Run,
  lease: Type.Object({ token: Type.String(), attempt: Type.Integer(), expiresAt: Timestamp }),
  nextLogSeq: Type.Integer({ description: 'number the first log chunk of this attempt with this sequence (sequences are per attempt: always 1)' }),
  download: Type.String({ description: 'path of the workflow archive to run (GET with the same credentials)' }),
});

const Registration = Type.Object(
  {
    name: Name,
    labels: Type.Optional(Type.Array(Label, { maxItems: 50 })),
    capacity: Type.Optional(Type.Integer({ minimum: 1, maximum: 256 })),
  },
  { additionalProperties: false },
);

/** The executor protocol and executor management: each handler calls one ExecutorsService method. */
export function registerExecutorRoutes(app: HttpApp, ctx: RunnerContext): void {
  const { executors } = ctx;

  app.post(
    '/api/executors/register',
    {
      config: access(EXECUTORS),
      schema: {
        tags: ['executors'],
        summary: 'Register an executor',
        operationId: 'registerExecutor',
        body: Registration,
        response: { 201: Executor, ...errors(...PROTECTED) },
      },
    },
    async (req, reply) => reply.code(201).send(presentExecutor(await executors.register(req.body, req.ip))),
  );

  app.post(
    '/api/executors/:id/register',
    {
      config: access(EXECUTORS),
      schema: {
        tags: ['executors'],
        summary: 'Register again as a known executor',
        description:
          'A restarted executor process keeps its identity (`pier runner executor --state-file`): the executor takes the name, labels and capacity sent, is online ' +
          'and not draining. The runs its previous process held are re-queued by the next sweep (their leases end now). 404 when the executor was removed: register anew.',
        operationId: 'reregisterExecutor',
        params: IdParams,
        body: Registration,
        response: { 200: Executor, ...errors(...PROTECTED, 404) },
      },
    },
    async (req) => presentExecutor(await executors.reregister(req.params.id, req.body, req.ip)),
  );

  app.post(
    '/api/executors/:id/heartbeat',
    {
      config: access(EXECUTORS),
      schema: {
        tags: ['executors'],
        summary: 'Executor heartbeat',
        description:
          'Marks the executor online, extends the leases of the held runs listed in `runs` and answers instructions: `cancel` lists runs to kill now ' +
          '(cancelled by a user, or — of the `runs` the executor reports holding — those that are no longer its own), `drain` says to claim nothing new, ' +
          '`heartbeatMs` when to send the next heartbeat. Only the runs listed in `runs` are kept: a held run the executor does not list (for example one whose claim answer it never got) ' +
          'is not extended, and like every run held without a heartbeat for `RUNNER_LEASE_SECONDS` it is re-queued by the sweeper. List every run being executed, also while killing it.',
        operationId: 'executorHeartbeat',
        params: IdParams,
        body: Type.Object(
          { runs: Type.Optional(Type.Array(Id, { maxItems: 256, description: 'ids of the runs the executor is running now: only their leases are extended' })) },
          { additionalProperties: false },
        ),
        response: { 200: Heartbeat, ...errors(...PROTECTED, 404) },
      },
      // The body is optional: an empty POST is a plain heartbeat.
      preValidation: async (req) => {
        if (req.body === undefined || req.body === null) req.body = {};
      },
    },
    async (req) => {
      const { view, instructions } = await executors.heartbeat(req.params.id, req.ip, req.body.runs ?? []);
      return { ...presentExecutor(view), ...instructions };
    },
  );

  app.post(
    '/api/executors/:id/claim',
    {
      config: access(EXECUTORS),
      schema: {
        tags: ['executors'],
        summary: 'Claim the next queued run',
        description:
          'Atomically takes the oldest queued run whose `requiredLabels` are all among the executor\'s labels, within its capacity ' +
          '(runs being cancelled still count until the executor confirms the kill), and returns it with a lease (token + attempt) that every later call about the run must carry. ' +
          'Waits up to `wait` seconds (0-30, default 20) for such a run to be queued and answers as soon as one is; ' +
          '204 when the time is up or the executor is at capacity. A draining executor gets 409 `executor_draining` (with `Retry-After`) at once, also while its claim waits: ' +
          'it must stop claiming, finish the runs it holds and stop (registering again ends the draining).',
        operationId: 'claimRun',
        params: IdParams,
        querystring: Type.Object(
          { wait: Type.Optional(Type.String({ pattern: '^([0-9]|[12][0-9]|30)$', description: 'seconds to wait for a run, 0-30 (default 20)' })) },
          { additionalProperties: false },
        ),
        response: { 200: Claim, 204: Type.Null({ description: 'Nothing to run' }), ...errors(...PROTECTED, 404, 409) },
      },
    },
    async (req, reply) => {
      // The held request ends when its client goes away: the response's socket closes.
      const gone = new AbortController();
      const onClose = () => gone.abort();
      reply.raw.once('close', onClose);
      if (reply.raw.destroyed || req.raw.socket?.destroyed) gone.abort();
      try {
        const waitMs = Number(req.query.wait ?? DEFAULT_CLAIM_WAIT_SECONDS) * 1000;
        const claim = await executors.claim(req.params.id, req.ip, waitMs, gone.signal);
        if (!claim) return reply.code(204).send(null);
        // The client left while the run was being taken: put it back (no attempt used up). If it
        // leaves later, the run is not in its heartbeats' `runs`, so its lease runs out.
        if (gone.signal.aborted || reply.raw.destroyed) {
          await executors.unclaim(claim);
          return reply.code(204).send(null);
        }
        return {
          run: presentRun(claim.run),
          lease: claim.lease,
          nextLogSeq: claim.nextLogSeq,
          download: `/api/workflows/${claim.run.workflow_id}/versions/${claim.run.workflow_version}/download`,
        };
      } finally {
        reply.raw.off('close', onClose);
      }
    },
  );

  app.post(
    '/api/runs/:id/logs',
    {
      config: { ...access(EXECUTORS), nulReplacedIn: ['chunks.*.text'] },
      bodyLimit: LOG_BODY_LIMIT,
      schema: {
        tags: ['executors'],
        summary: 'Append log chunks to a run (executor)',
        description:
          'Numbered chunks of the lease\'s attempt (each attempt counts from 1); a sequence already stored is ignored, so retries are safe. ' +
          'Answers the highest sequence of this attempt stored without a gap (`ack`); a chunk more than 10000 ahead of it gets 400 `log_seq_out_of_window`. ' +
          'A lease that no longer holds the run (re-queued, finished) gets 409; a run being cancelled still takes its last lines. ' +
          'An attempt stores at most `RUNNER_MAX_LOG_BYTES` of log text: the chunk crossing it is cut and ends with a line saying so, and from then on `full` is true and chunks are acknowledged and dropped (stop sending them). ' +
          `The body may be up to ${LOG_BODY_LIMIT / 1024 / 1024} MiB (enough for ${MAX_LOG_CHUNKS} chunks of ${MAX_LOG_CHUNK_LENGTH} characters in UTF-8); a larger one gets 413: send it in smaller batches.`,
        operationId: 'appendRunLogs',
        params: IdParams,
        body: Type.Object(
          {
            ...LeaseBody,
            chunks: Type.Array(
              Type.Object(
                {
                  seq: Type.Integer({ minimum: 1, maximum: MAX_COUNTER }),
                  text: Type.String({ maxLength: MAX_LOG_CHUNK_LENGTH, description: 'log text (UTF-16 units); NUL (U+0000) is stored as U+FFFD' }),
                },
                { additionalProperties: false },
              ),
              { minItems: 1, maxItems: MAX_LOG_CHUNKS },
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            ack: Type.Integer(),
            full: Type.Boolean({ description: "the attempt's log reached RUNNER_MAX_LOG_BYTES: later chunks are dropped" }),
          }),
          ...errors(...PROTECTED, 404, 409),
        },
      },
    },
    async (req) => executors.appendLogs(req.params.id, req.body, req.body.chunks),
  );

  app.put(
    '/api/runs/:id/outputs/:name',
    {
      config: { ...access(EXECUTORS), ...OUTPUT_DOC },
      schema: {
        tags: ['executors'],
        summary: 'Upload an output file of a run (executor)',
        description:
          'Multipart: the fields `leaseToken`, `attempt` and `sha256` (hex, of the file), then the `file` part. The file is stored only if its sha256 matches ' +
          '(else 400 `checksum_mismatch`), up to `RUNNER_MAX_OUTPUT_BYTES` (else 413). Uploading the same name again replaces it. Upload outputs before completing the run; a stale lease gets 409.',
        operationId: 'uploadRunOutput',
        params: OutputParams,
        response: { 200: Type.Object({ name: Type.String(), size: Type.Integer(), sha256: Type.String() }), ...errors(...PROTECTED, 404, 409, 413, 415) },
      },
    },
    async (req) =>
      withMultipart(req, 'leaseToken, attempt, sha256, then "file"', (parts) => executors.uploadOutputParts(req.params.id, req.params.name, parts)),
  );

  app.post(
    '/api/runs/:id/complete',
    {
      config: { ...access(EXECUTORS), nulReplacedIn: ['error'] },
      schema: {
        tags: ['executors'],
        summary: 'Finish a run (executor)',
        description:
          'Records the result of a leased run (upload its outputs first). `cancelled` confirms the kill of a run being cancelled; a run being cancelled ends as cancelled whatever is reported. ' +
          'A stale lease gets 409.',
        operationId: 'completeRun',
        params: IdParams,
        body: Type.Object(
          {
            ...LeaseBody,
            status: StringEnum(['succeeded', 'failed', 'cancelled']),
            exitCode: Type.Optional(Nullable(Type.Integer({ minimum: INT32_MIN, maximum: INT32_MAX }))),
            error: Type.Optional(Nullable(Type.String({ maxLength: 10_000, description: 'why the run failed; NUL (U+0000) is stored as U+FFFD' }))),
          },
          { additionalProperties: false },
        ),
        response: { 200: Run, ...errors(...PROTECTED, 404, 409) },
      },
    },
    async (req) => {
      const b = req.body;
      return presentRun(await executors.complete(req.params.id, b, { status: b.status, exitCode: b.exitCode ?? null, error: b.error ?? null }));
    },
  );

  app.post(
    '/api/runs/:id/release',
    {
      config: access(EXECUTORS),
      schema: {
        tags: ['executors'],
        summary: 'Hand a run back (executor)',
        description: 'The executor stops without finishing the run (it is shutting down): the run is queued again for another executor (a run being cancelled ends as cancelled). ' +
          'A hand-back does not count toward `RUNNER_MAX_ATTEMPTS`; the outputs uploaded under this attempt are dropped. A stale lease gets 409.',
        operationId: 'releaseRun',
        params: IdParams,
        body: Type.Object(LeaseBody, { additionalProperties: false }),
        response: { 200: Run, ...errors(...PROTECTED, 404, 409) },
      },
    },
    async (req) => presentRun(await executors.release(req.params.id, req.body)),
  );

  app.get(
    '/api/executors',
    {
      config: access(EXECUTORS_READ),
      schema: { tags: ['executors'], summary: 'List executors', description: ADMIN_READ, operationId: 'listExecutors', response: { 200: items(Executor), ...errors(...PROTECTED) } },
    },
    async () => ({ items: (await executors.list()).map(presentExecutor) }),
  );

  app.get(
    '/api/executors/:id',
    {
      config: access(EXECUTORS_READ),
      schema: { tags: ['executors'], summary: 'Get an executor', description: ADMIN_READ, operationId: 'getExecutor', params: IdParams, response: { 200: Executor, ...errors(...PROTECTED, 404) } },
    },
    async (req) => presentExecutor(await executors.get(req.params.id)),
  );

  app.post(
    '/api/executors/:id/drain',
    {
      config: access(EXECUTORS),
      schema: {
        tags: ['executors'],
        summary: 'Drain an executor',
        description: 'The executor finishes its running runs and claims no new ones.',
        operationId: 'drainExecutor',
        params: IdParams,
        response: { 200: Executor, ...errors(...PROTECTED, 404) },
      },
    },
    async (req) => presentExecutor(await executors.drain(req.params.id)),
  );

  app.delete(
    '/api/executors/:id',
    {
      config: access(EXECUTORS),
      schema: {
        tags: ['executors'],
        summary: 'Remove an executor',
        description: 'Its running runs go back to the queue (not counted toward `RUNNER_MAX_ATTEMPTS`; outputs of the attempts lost are dropped).',
        operationId: 'deleteExecutor',
        params: IdParams,
        response: { 204: NoContent, ...errors(...PROTECTED, 404) },
      },
    },
    async (req, reply) => {
      await executors.remove(req.params.id);
      return reply.code(204).send(null);
    },
  );
}

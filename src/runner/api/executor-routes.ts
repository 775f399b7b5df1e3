import { Type } from 'typebox';
import type { HttpApp } from '../../infra/http.js';
import { EXECUTORS } from '../auth/access.js';
import { access } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import { Executor, presentExecutor, presentRun, Run } from './presenters.js';
import { errors, IdParams, INT32_MAX, INT32_MIN, items, MAX_COUNTER, MAX_SIZE, Name, NoContent, Nullable, PROTECTED, StringEnum, Timestamp } from './schemas.js';

const LeaseBody = {
  leaseToken: Type.String({ minLength: 1, maxLength: 200, description: 'the lease token from the claim' }),
  attempt: Type.Integer({ minimum: 1, maximum: MAX_COUNTER, description: 'the attempt from the claim' }),
};

const Claim = Type.Object({
  run: Run,
  lease: Type.Object({ token: Type.String(), attempt: Type.Integer(), expiresAt: Timestamp }),
  nextLogSeq: Type.Integer({ description: 'number the first log chunk of this attempt with this sequence' }),
  download: Type.String({ description: 'path of the workflow archive to run (GET with the same credentials)' }),
});

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
        body: Type.Object(
          {
            name: Name,
            labels: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 50 })),
            capacity: Type.Optional(Type.Integer({ minimum: 1, maximum: 256 })),
          },
          { additionalProperties: false },
        ),
        response: { 201: Executor, ...errors(...PROTECTED) },
      },
    },
    async (req, reply) => reply.code(201).send(presentExecutor(await executors.register(req.body, req.ip))),
  );

  app.post(
    '/api/executors/:id/heartbeat',
    {
      config: access(EXECUTORS),
      schema: {
        tags: ['executors'],
        summary: 'Executor heartbeat',
        description: 'Marks the executor online and extends the leases of its running runs.',
        operationId: 'executorHeartbeat',
        params: IdParams,
        response: { 200: Executor, ...errors(...PROTECTED, 404) },
      },
    },
    async (req) => presentExecutor(await executors.heartbeat(req.params.id, req.ip)),
  );

  app.post(
    '/api/executors/:id/claim',
    {
      config: access(EXECUTORS),
      schema: {
        tags: ['executors'],
        summary: 'Claim the next queued run',
        description:
          'Atomically takes the oldest queued run and returns it with a lease (token + attempt) that every later call about the run must carry. ' +
          '204 when nothing is queued, the executor is draining or at capacity.',
        operationId: 'claimRun',
        params: IdParams,
        response: { 200: Claim, 204: Type.Null({ description: 'Nothing to run' }), ...errors(...PROTECTED, 404) },
      },
    },
    async (req, reply) => {
      const claim = await executors.claim(req.params.id, req.ip);
      if (!claim) return reply.code(204).send(null);
      return {
        run: presentRun(claim.run),
        lease: claim.lease,
        nextLogSeq: claim.nextLogSeq,
        download: `/api/workflows/${claim.run.workflow_id}/versions/${claim.run.workflow_version}/download`,
      };
    },
  );

  app.post(
    '/api/runs/:id/logs',
    {
      config: access(EXECUTORS),
      schema: {
        tags: ['executors'],
        summary: 'Append log chunks to a run (executor)',
        description:
          'Numbered chunks; a sequence already stored is ignored, so retries are safe. Answers the highest sequence stored without a gap (`ack`). ' +
          'A lease that no longer holds the run (cancelled, re-queued, finished) gets 409.',
        operationId: 'appendRunLogs',
        params: IdParams,
        body: Type.Object(
          {
            ...LeaseBody,
            chunks: Type.Array(
              Type.Object({ seq: Type.Integer({ minimum: 1, maximum: MAX_COUNTER }), text: Type.String({ maxLength: 65_536 }) }, { additionalProperties: false }),
              { minItems: 1, maxItems: 500 },
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ ack: Type.Integer() }), ...errors(...PROTECTED, 404, 409) },
      },
    },
    async (req) => ({ ack: await executors.appendLogs(req.params.id, req.body, req.body.chunks) }),
  );

  app.post(
    '/api/runs/:id/complete',
    {
      config: access(EXECUTORS),
      schema: {
        tags: ['executors'],
        summary: 'Finish a run (executor)',
        description: 'Records the result and outputs of a leased run. A stale lease gets 409.',
        operationId: 'completeRun',
        params: IdParams,
        body: Type.Object(
          {
            ...LeaseBody,
            status: StringEnum(['succeeded', 'failed']),
            exitCode: Type.Optional(Nullable(Type.Integer({ minimum: INT32_MIN, maximum: INT32_MAX }))),
            error: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
            outputs: Type.Optional(
              Type.Array(
                Type.Object(
                  {
                    name: Type.String({ minLength: 1, maxLength: 500 }),
                    size: Type.Integer({ minimum: 0, maximum: MAX_SIZE }),
                    sha256: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' })),
                    contentType: Type.Optional(Type.String({ maxLength: 200 })),
                  },
                  { additionalProperties: false },
                ),
                { maxItems: 1000 },
              ),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: Run, ...errors(...PROTECTED, 404, 409) },
      },
    },
    async (req) => {
      const b = req.body;
      const outputs = (b.outputs ?? []).map((o) => ({ name: o.name, size: o.size, sha256: o.sha256 ?? null, content_type: o.contentType ?? null }));
      const result = { status: b.status, exitCode: b.exitCode ?? null, error: b.error ?? null };
      return presentRun(await executors.complete(req.params.id, b, result, outputs));
    },
  );

  app.get(
    '/api/executors',
    {
      config: access(EXECUTORS),
      schema: { tags: ['executors'], summary: 'List executors', operationId: 'listExecutors', response: { 200: items(Executor), ...errors(...PROTECTED) } },
    },
    async () => ({ items: (await executors.list()).map(presentExecutor) }),
  );

  app.get(
    '/api/executors/:id',
    {
      config: access(EXECUTORS),
      schema: { tags: ['executors'], summary: 'Get an executor', operationId: 'getExecutor', params: IdParams, response: { 200: Executor, ...errors(...PROTECTED, 404) } },
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
        description: 'Its running runs go back to the queue.',
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

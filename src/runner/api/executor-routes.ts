import { Type } from 'typebox';
import { ConflictError, NotFoundError } from '../../infra/errors.js';
import type { HttpApp } from '../../infra/http.js';
import { generateToken, randomUUID, sha256 } from '../../infra/secrets.js';
import { EXECUTORS } from '../auth/access.js';
import { access } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import type { ExecutorRow } from '../executors/repository.js';
import { presentRun, Run } from './run-routes.js';
import { errors, IdParams, INT32_MAX, INT32_MIN, MAX_COUNTER, MAX_SIZE, items, Name, NoContent, Nullable, PROTECTED, StringEnum, Timestamp } from './schemas.js';

/** A claimed run stays with its executor this long after the claim or its last heartbeat. */
export const LEASE_MS = 2 * 60_000;
/** An executor without a heartbeat for this long is shown offline. */
export const OFFLINE_AFTER_MS = 90_000;
const LEASE_PREFIX = 'rnr_lease_';

const Executor = Type.Object({
  id: Type.String(),
  name: Type.String(),
  labels: Type.Array(Type.String()),
  capacity: Type.Integer(),
  status: StringEnum(['online', 'draining', 'offline']),
  runningRuns: Type.Integer(),
  createdAt: Timestamp,
  lastHeartbeatAt: Timestamp,
  lastIp: Nullable(Type.String()),
});

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

export function registerExecutorRoutes(app: HttpApp, ctx: RunnerContext): void {
  const { executors, runs } = ctx;

  async function present(e: ExecutorRow) {
    const stale = ctx.now().getTime() - Date.parse(e.last_heartbeat_at) > OFFLINE_AFTER_MS;
    return {
      id: e.id,
      name: e.name,
      labels: JSON.parse(e.labels) as string[],
      capacity: e.capacity,
      status: stale ? ('offline' as const) : e.draining ? ('draining' as const) : ('online' as const),
      runningRuns: await runs.runningCount(e.id),
      createdAt: e.created_at,
      lastHeartbeatAt: e.last_heartbeat_at,
      lastIp: e.last_ip,
    };
  }

  async function load(id: string): Promise<ExecutorRow> {
    const e = await executors.findById(id);
    if (!e) throw new NotFoundError('no such executor');
    return e;
  }

  function leaseOf(body: { leaseToken: string; attempt: number }) {
    return { hash: sha256(body.leaseToken), attempt: body.attempt };
  }

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
    async (req, reply) => {
      const now = ctx.now().toISOString();
      const row = await executors.insert({
        id: randomUUID(),
        name: req.body.name.trim(),
        labels: JSON.stringify(req.body.labels ?? []),
        capacity: req.body.capacity ?? 1,
        draining: 0,
        created_at: now,
        last_heartbeat_at: now,
        last_ip: req.ip,
      });
      return reply.code(201).send(await present(row));
    },
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
    async (req) => {
      await load(req.params.id);
      const now = ctx.now();
      const row = await executors.heartbeat(req.params.id, now.toISOString(), req.ip);
      if (!row) throw new NotFoundError('no such executor');
      await runs.extendLeases(row.id, new Date(now.getTime() + LEASE_MS).toISOString());
      return present(row);
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
          'Atomically takes the oldest queued run and returns it with a lease (token + attempt) that every later call about the run must carry. ' +
          '204 when nothing is queued, the executor is draining or at capacity.',
        operationId: 'claimRun',
        params: IdParams,
        response: { 200: Claim, 204: Type.Null({ description: 'Nothing to run' }), ...errors(...PROTECTED, 404) },
      },
    },
    async (req, reply) => {
      const executor = await load(req.params.id);
      const now = ctx.now();
      const nowIso = now.toISOString();
      await executors.heartbeat(executor.id, nowIso, req.ip);
      await runs.expireLeases(nowIso);
      if (executor.draining || (await runs.runningCount(executor.id)) >= executor.capacity) return reply.code(204).send(null);
      const token = generateToken(LEASE_PREFIX);
      const expiresAt = new Date(now.getTime() + LEASE_MS).toISOString();
      const run = await runs.claim(executor.id, sha256(token), expiresAt, nowIso);
      if (!run) return reply.code(204).send(null);
      return {
        run: presentRun(run),
        lease: { token, attempt: run.attempt, expiresAt },
        nextLogSeq: await runs.nextLogSeq(run.id),
        download: `/api/workflows/${run.workflow_id}/versions/${run.workflow_version}/download`,
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
    async (req) => {
      const run = await runs.findById(req.params.id);
      if (!run) throw new NotFoundError('no such run');
      if (!(await runs.leased(run.id, leaseOf(req.body)))) throw new ConflictError('the lease no longer holds this run', 'stale_lease');
      const ack = await runs.appendLogs(run.id, req.body.attempt, req.body.chunks, ctx.now().toISOString());
      return { ack };
    },
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
      const run = await runs.findById(req.params.id);
      if (!run) throw new NotFoundError('no such run');
      const b = req.body;
      const done = await runs.complete(
        run.id,
        leaseOf(b),
        { status: b.status, exitCode: b.exitCode ?? null, error: b.error ?? null },
        (b.outputs ?? []).map((o) => ({ name: o.name, size: o.size, sha256: o.sha256 ?? null, content_type: o.contentType ?? null })),
        ctx.now().toISOString(),
      );
      if (!done) throw new ConflictError('the lease no longer holds this run', 'stale_lease');
      return presentRun(done);
    },
  );

  app.get(
    '/api/executors',
    {
      config: access(EXECUTORS),
      schema: { tags: ['executors'], summary: 'List executors', operationId: 'listExecutors', response: { 200: items(Executor), ...errors(...PROTECTED) } },
    },
    async () => ({ items: await Promise.all((await executors.list()).map(present)) }),
  );

  app.get(
    '/api/executors/:id',
    {
      config: access(EXECUTORS),
      schema: { tags: ['executors'], summary: 'Get an executor', operationId: 'getExecutor', params: IdParams, response: { 200: Executor, ...errors(...PROTECTED, 404) } },
    },
    async (req) => present(await load(req.params.id)),
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
    async (req) => {
      await load(req.params.id);
      const row = await executors.setDraining(req.params.id, true);
      if (!row) throw new NotFoundError('no such executor');
      return present(row);
    },
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
      await load(req.params.id);
      await runs.requeueExecutorRuns(req.params.id);
      await executors.delete(req.params.id);
      return reply.code(204).send(null);
    },
  );
}

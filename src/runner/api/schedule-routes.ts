import { Type } from 'typebox';
import type { HttpApp } from '../../infra/http.js';
import { USER_READ, USER_WRITE } from '../auth/access.js';
import { access, principalOf } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import { MAX_CRON_LENGTH, MAX_TIME_ZONE_LENGTH } from '../schedules/cron.js';
import { ListedSchedule, RunParameters as Parameters, presentListedSchedule, presentSchedule, Schedule } from './presenters.js';
import { DEFAULT_SCHEDULE_PAGE, MAX_SCHEDULE_PAGE } from '../schedules/service.js';
import { errors, Id, IdParams, items, MAX_COUNTER, NoContent, page, plainJson, PROTECTED, RequiredLabels, StringEnum, Timestamp, UNSHOWN } from './schemas.js';

// The same parameter bounds as a run started by hand (run-routes.ts).

const fields = {
  name: Type.String({ maxLength: 200, pattern: `^[^${UNSHOWN}]*$`, description: 'a label for people, one line (default empty)' }),
  cron: Type.String({
    minLength: 1,
    maxLength: MAX_CRON_LENGTH,
    description:
      'croner syntax: 5 fields `minute hour day-of-month month day-of-week` (e.g. `30 2 * * *`, `*/15 9-17 * * MON-FRI`, `0 0 L * *`), ' +
      'or 6 with a leading seconds field that is one number 0-59, or `@hourly`/`@daily`/`@weekly`/`@monthly`/`@yearly`. At most once a minute.',
  }),
  timeZone: Type.String({ minLength: 1, maxLength: MAX_TIME_ZONE_LENGTH, description: 'IANA time zone, e.g. `Europe/Berlin` (default `UTC`)' }),
  enabled: Type.Boolean({ description: 'default true' }),
  parameters: Parameters,
  requiredLabels: RequiredLabels,
  workflowVersion: Type.Unsafe<number | null>({
    type: ['integer', 'null'],
    minimum: 1,
    maximum: MAX_COUNTER,
    description: 'pin a version; null or absent = the latest version at each fire',
  }),
  overlap: StringEnum(['skip', 'queue'], { description: 'if the previous run of this schedule is still queued or running: `skip` (default) or `queue`' }),
};

const CreateBody = Type.Object(
  {
    cron: fields.cron,
    name: Type.Optional(fields.name),
    timeZone: Type.Optional(fields.timeZone),
    enabled: Type.Optional(fields.enabled),
    parameters: Type.Optional(fields.parameters),
    requiredLabels: Type.Optional(fields.requiredLabels),
    workflowVersion: Type.Optional(fields.workflowVersion),
    overlap: Type.Optional(fields.overlap),
  },
  { additionalProperties: false },
);
const PatchBody = Type.Partial(Type.Object(fields), { additionalProperties: false, minProperties: 1 });

const ABOUT =
  'A schedule queues a run of its workflow each time its cron expression matches in its time zone, exactly once per ' +
  'fire across all runner instances; after downtime it fires once, not once per missed time. A schedule\'s own answers list its next five fire times; lists give each schedule\'s next fire time only (read one schedule for more).';

/** Schedules: each handler validates, calls one SchedulesService method, presents. */
export function registerScheduleRoutes(app: HttpApp, ctx: RunnerContext): void {
  const { schedules } = ctx;

  app.get(
    '/api/schedules',
    {
      config: access(USER_READ),
      schema: {
        tags: ['schedules'],
        summary: 'List all schedules the caller can read',
        description:
          `Schedules of the projects the caller is a member of (administrators: all), oldest first (by creation), each with its workflow's name and its next fire time; ` +
          `with cursor pagination: ${DEFAULT_SCHEDULE_PAGE} a page unless \`limit\` says otherwise (at most ${MAX_SCHEDULE_PAGE}), then pass \`nextCursor\` as \`cursor\` for the next page. ` +
          'A malformed `limit` or `cursor` is a 400 naming it.',
        operationId: 'listAllSchedules',
        querystring: Type.Object(
          {
            project: Type.Optional(Id),
            workflow: Type.Optional(Id),
            limit: Type.Optional(Type.String({ pattern: '^([1-9]|[1-9][0-9]|1[0-9][0-9]|200)$', description: `1-${MAX_SCHEDULE_PAGE}, default ${DEFAULT_SCHEDULE_PAGE}` })),
            cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'the `nextCursor` of the previous page' })),
          },
          { additionalProperties: false },
        ),
        response: { 200: page(ListedSchedule), ...errors(...PROTECTED) },
      },
      serializerCompiler: plainJson,
    },
    async (req) => {
      const { items, nextCursor } = await schedules.listVisible(principalOf(req), {
        ...req.query,
        limit: req.query.limit === undefined ? undefined : Number(req.query.limit),
      });
      return { items: items.map(presentListedSchedule), nextCursor };
    },
  );

  app.get(
    '/api/schedules/preview',
    {
      config: access(USER_READ),
      schema: {
        tags: ['schedules'],
        summary: 'Read a cron expression before saving it',
        description: 'The expression in words and its next five fire instants in the time zone, as a schedule with it would fire; a 400 naming `cron` or `timeZone` as creating one would.',
        operationId: 'previewSchedule',
        querystring: Type.Object({ cron: fields.cron, timeZone: Type.Optional(fields.timeZone) }, { additionalProperties: false }),
        response: {
          200: Type.Object({
            cron: Type.String(),
            timeZone: Type.String({ description: 'the zone as it will be stored' }),
            description: Type.String({ description: 'the expression in words, e.g. "At 06:30, on Monday through Friday"' }),
            nextFireTimes: Type.Array(Timestamp),
          }),
          ...errors(...PROTECTED),
        },
      },
    },
    async (req) => schedules.preview(req.query),
  );

  app.get(
    '/api/workflows/:id/schedules',
    {
      config: access(USER_READ),
      schema: {
        tags: ['schedules'],
        summary: 'List the schedules of a workflow',
        operationId: 'listSchedules',
        params: IdParams,
        response: { 200: items(Schedule), ...errors(...PROTECTED, 404) },
      },
    },
    async (req) => ({ items: (await schedules.list(principalOf(req), req.params.id)).map(presentSchedule) }),
  );

  app.post(
    '/api/workflows/:id/schedules',
    {
      config: access(USER_WRITE),
      schema: {
        tags: ['schedules'],
        summary: 'Create a schedule',
        description: `${ABOUT} Needs the editor role. An invalid expression or time zone is a 400 naming \`cron\` or \`timeZone\`.`,
        operationId: 'createSchedule',
        params: IdParams,
        body: CreateBody,
        response: { 201: Schedule, ...errors(...PROTECTED, 404) },
      },
    },
    async (req, reply) => reply.code(201).send(presentSchedule(await schedules.create(principalOf(req), req.params.id, req.body))),
  );

  app.get(
    '/api/schedules/:id',
    {
      config: access(USER_READ),
      schema: {
        tags: ['schedules'],
        summary: 'Get a schedule',
        operationId: 'getSchedule',
        params: IdParams,
        response: { 200: Schedule, ...errors(...PROTECTED, 404) },
      },
    },
    async (req) => presentSchedule(await schedules.get(principalOf(req), req.params.id)),
  );

  app.patch(
    '/api/schedules/:id',
    {
      config: access(USER_WRITE),
      schema: {
        tags: ['schedules'],
        summary: 'Change a schedule',
        description:
          'Changes only the fields sent. A new expression or time zone, or enabling, computes the next fire from now. Needs the editor role.',
        operationId: 'updateSchedule',
        params: IdParams,
        body: PatchBody,
        response: { 200: Schedule, ...errors(...PROTECTED, 404) },
      },
    },
    async (req) => presentSchedule(await schedules.update(principalOf(req), req.params.id, req.body)),
  );

  app.delete(
    '/api/schedules/:id',
    {
      config: access(USER_WRITE),
      schema: {
        tags: ['schedules'],
        summary: 'Delete a schedule',
        description: 'Runs it queued stay, with their `scheduleId`. Needs the editor role.',
        operationId: 'deleteSchedule',
        params: IdParams,
        response: { 204: NoContent, ...errors(...PROTECTED, 404) },
      },
    },
    async (req, reply) => {
      await schedules.delete(principalOf(req), req.params.id);
      return reply.code(204).send(null);
    },
  );
}

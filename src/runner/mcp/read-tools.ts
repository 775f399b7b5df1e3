import { Type } from 'typebox';
import { EXECUTORS_READ, RUN_READ, USER_READ } from '../auth/access.js';
import {
  Executor,
  Output,
  presentExecutor,
  presentOutput,
  presentProjectSummary,
  presentRun,
  presentSchedule,
  presentWorkflow,
  ProjectSummary,
  Run,
  RunStatusSchema,
  Schedule,
  Workflow,
  WorkflowVersion,
} from '../api/presenters.js';
import { IdOf, Nullable } from '../api/schemas.js';
import { isTerminal, type RunRow } from '../runs/run-rows.js';
import { describeCron } from '../schedules/describe.js';
import type { DeclaredParameter } from '../workflows/declared-parameters.js';
import { defineTool, READ_ONLY, type ResourceLink } from './tool.js';
import { logUri, outputUri } from './uris.js';

/** Workflows listed at most (narrow by project for more). */
export const MAX_LISTED_WORKFLOWS = 200;
/** Default and largest budget of a log excerpt, in bytes: enough to explain a failure, not a flood. */
export const LOG_DEFAULT_BYTES = 16 * 1024;
export const LOG_MAX_BYTES = 256 * 1024;

const RunId = IdOf('the run id (from list_runs or start_run)');

/** One line of a run for the text rendering. */
export function runLine(r: RunRow): string {
  const ended = r.finished_at ? `, ended ${r.finished_at}` : '';
  const why = r.error ? ` — ${r.error}` : r.exit_code !== null && r.exit_code !== 0 ? ` — exit code ${r.exit_code}` : '';
  return `${r.id}: ${r.status} (workflow ${r.workflow_id} v${r.workflow_version}, attempt ${r.attempt}, created ${r.created_at}${ended})${why}`;
}

export const listProjects = defineTool({
  name: 'list_projects',
  title: 'List projects',
  description: 'The projects you can see, with your role in each (owner, editor, viewer) and how many workflows, members and runs each has. Start here to find a project id.',
  access: USER_READ,
  hints: READ_ONLY,
  input: Type.Object({}, { additionalProperties: false }),
  output: Type.Object({ projects: Type.Array(ProjectSummary) }),
  async run({ ctx, principal }) {
    const projects = (await ctx.projects.list(principal)).map(presentProjectSummary);
    const text = projects.length
      ? projects.map((p) => `${p.id}: ${p.name} (${p.role ?? 'administrator'}; ${p.counts.workflows} workflows, ${p.counts.runs} runs)`).join('\n')
      : 'You are not a member of any project.';
    return { structured: { projects }, text };
  },
});

const ListedWorkflow = Type.Object({ ...Workflow.properties, declaredParameters: WorkflowVersion.properties.declaredParameters });

export const listWorkflows = defineTool({
  name: 'list_workflows',
  title: 'List workflows',
  description:
    'Workflows of one project (or of every project you can see), each with the run parameters its latest version declares: ' +
    'name, type (string, integer, number, boolean), default, allowed choices, and for numbers the range (minimum, maximum). ' +
    'Use these names, types and ranges for start_run: numbers in decimal digits (no 0x, Infinity or NaN).',
  access: USER_READ,
  hints: READ_ONLY,
  input: Type.Object({ projectId: Type.Optional(IdOf('only this project')) }, { additionalProperties: false }),
  output: Type.Object({ workflows: Type.Array(ListedWorkflow), truncated: Type.Boolean({ description: `more than ${MAX_LISTED_WORKFLOWS}: narrow by projectId` }) }),
  async run({ ctx, principal }, args) {
    const rows = await ctx.workflows.listWithParameters(principal, args.projectId, MAX_LISTED_WORKFLOWS + 1);
    const workflows = rows.slice(0, MAX_LISTED_WORKFLOWS).map((w) => ({ ...presentWorkflow(w), declaredParameters: JSON.parse(w.declared_parameters) as DeclaredParameter[] }));
    const text = workflows.length
      ? workflows
          .map((w) => {
            const params = w.declaredParameters.map((d) => `${d.name}: ${d.type}${d.maximum === undefined ? '' : ` ${d.minimum}..${d.maximum}`}${d.default === null ? '' : ` = ${JSON.stringify(d.default)}`}`).join(', ');
            return `${w.id}: ${w.name} (project ${w.projectId}, version ${w.latestVersion})${params ? ` — parameters ${params}` : ''}`;
          })
          .join('\n')
      : 'No workflows.';
    return { structured: { workflows, truncated: rows.length > MAX_LISTED_WORKFLOWS }, text };
  },
});

export const listRuns = defineTool({
  name: 'list_runs',
  title: 'List runs',
  description: 'Runs you can see, newest first, optionally filtered. Pass nextCursor as cursor for the next page.',
  access: RUN_READ,
  hints: READ_ONLY,
  input: Type.Object(
    {
      projectId: Type.Optional(IdOf('only runs of this project')),
      workflowId: Type.Optional(IdOf('only runs of this workflow')),
      status: Type.Optional(RunStatusSchema),
      scheduleId: Type.Optional(IdOf('only runs this schedule started')),
      since: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'created at or after (ISO 8601 date or date-time, e.g. 2026-11-25 or 2026-11-25T08:00:00Z)' })),
      startedByMe: Type.Optional(Type.Boolean({ description: 'only runs you started' })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'default 20' })),
      cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    },
    { additionalProperties: false },
  ),
  output: Type.Object({ runs: Type.Array(Run), nextCursor: Nullable(Type.String()) }),
  async run({ ctx, principal }, a) {
    const { items, nextCursor } = await ctx.runs.list(principal, {
      project: a.projectId,
      workflow: a.workflowId,
      status: a.status,
      schedule: a.scheduleId,
      since: a.since,
      startedBy: a.startedByMe ? 'me' : undefined,
      limit: a.limit ?? 20,
      cursor: a.cursor,
    });
    const text = items.length ? items.map(runLine).join('\n') + (nextCursor ? '\n(more: pass nextCursor as cursor)' : '') : 'No runs match.';
    return { structured: { runs: items.map(presentRun), nextCursor }, text };
  },
});

export const getRun = defineTool({
  name: 'get_run',
  title: 'Get a run',
  description:
    'One run: status, parameters, how many attempts it took (of the runner\'s maximum), why it failed (error and exit code), and its output files. ' +
    'Its log is the resource logUri; each output is a resource too. Use read_run_log to see the end of the log or its error lines.',
  access: RUN_READ,
  hints: READ_ONLY,
  input: Type.Object({ runId: RunId }, { additionalProperties: false }),
  output: Type.Object({
    run: Run,
    finished: Type.Boolean(),
    maxAttempts: Type.Integer({ description: 'attempts the runner makes before a run fails for good' }),
    outputs: Type.Array(Type.Object({ ...Output.properties, uri: Type.String({ description: 'the MCP resource of the file' }) })),
    logUri: Type.String({ description: 'the MCP resource of the whole log' }),
  }),
  async run({ ctx, principal }, { runId }) {
    const { run: row, outputs: stored } = await ctx.runs.getWithOutputs(principal, runId);
    const outputs = stored.map((o) => ({ ...presentOutput(o), uri: outputUri(row.id, o.name) }));
    const links: ResourceLink[] = [
      { uri: logUri(row.id), name: `log of run ${row.id}`, mimeType: 'text/plain' },
      ...outputs.map((o) => ({ uri: o.uri, name: o.name, size: o.size, ...(o.contentType ? { mimeType: o.contentType } : {}) })),
    ];
    const files = outputs.length ? `\nOutputs: ${outputs.map((o) => `${o.name} (${o.size} bytes)`).join(', ')}` : '';
    const structured = { run: presentRun(row), finished: isTerminal(row.status), maxAttempts: ctx.config.runner.maxAttempts, outputs, logUri: logUri(row.id) };
    return { structured, text: runLine(row) + files, links };
  },
});

export const readRunLog = defineTool({
  name: 'read_run_log',
  title: "Read a run's log",
  description:
    'The end of one attempt\'s log (default: the latest attempt), within a line and byte budget so a huge log never floods you. ' +
    'errorsOnly keeps only lines that name an error, exception or failure: the quickest way to explain a failed run. ' +
    'truncated says that earlier lines were left out; the whole log is the resource logUri of get_run.',
  access: RUN_READ,
  hints: READ_ONLY,
  input: Type.Object(
    {
      runId: RunId,
      tailLines: Type.Optional(Type.Integer({ minimum: 1, maximum: 5000, description: 'the last this many lines (default 200)' })),
      errorsOnly: Type.Optional(Type.Boolean({ description: 'only lines naming an error, exception or failure' })),
      attempt: Type.Optional(Type.Integer({ minimum: 1, maximum: 999_999_999, description: 'which attempt (default: the latest)' })),
      maxBytes: Type.Optional(Type.Integer({ minimum: 256, maximum: LOG_MAX_BYTES, description: `at most this many bytes of text (default ${LOG_DEFAULT_BYTES})` })),
    },
    { additionalProperties: false },
  ),
  output: Type.Object({
    runId: Type.String(),
    status: RunStatusSchema,
    finished: Type.Boolean(),
    attempt: Type.Integer({ description: 'the attempt shown' }),
    attempts: Type.Integer({ description: 'attempts the run has had' }),
    lines: Type.Array(Type.String()),
    bytes: Type.Integer(),
    truncated: Type.Boolean({ description: 'lines of the attempt were left out (earlier ones, or by errorsOnly)' }),
    scanLimited: Type.Boolean({ description: 'errorsOnly stopped reading back before the start of a very long log' }),
  }),
  async run({ ctx, principal }, a) {
    const x = await ctx.runs.logExcerpt(principal, a.runId, { attempt: a.attempt, lines: a.tailLines ?? 200, bytes: a.maxBytes ?? LOG_DEFAULT_BYTES, errorsOnly: a.errorsOnly ?? false });
    const structured = {
      runId: x.run.id,
      status: x.run.status,
      finished: isTerminal(x.run.status),
      attempt: x.attempt,
      attempts: x.run.attempt,
      lines: x.lines,
      bytes: x.bytes,
      truncated: x.truncated,
      scanLimited: x.scanLimited,
    };
    const which = x.run.attempt === 0 ? 'no executor has taken it yet' : `attempt ${x.attempt} of ${x.run.attempt}`;
    const head = `Run ${x.run.id} (${x.run.status}), ${which}: ${x.lines.length} ${a.errorsOnly ? 'error ' : ''}lines${x.truncated ? ' (earlier lines left out)' : ''}`;
    return { structured, text: x.lines.length ? `${head}\n${x.lines.join('\n')}` : `${head}.` };
  },
});

const ListedSchedule = Type.Object({ ...Schedule.properties, workflowName: Type.String(), description: Type.String({ description: 'the cron expression in words' }) });

export const listSchedules = defineTool({
  name: 'list_schedules',
  title: 'List schedules',
  description:
    'Cron schedules you can see, oldest first, with the expression in words and the next time each fires (UTC; none while disabled). ' +
    'Pass nextCursor as cursor for the next page.',
  access: USER_READ,
  hints: READ_ONLY,
  input: Type.Object(
    {
      projectId: Type.Optional(IdOf('only this project')),
      workflowId: Type.Optional(IdOf('only this workflow')),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'default 20' })),
      cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    },
    { additionalProperties: false },
  ),
  output: Type.Object({ schedules: Type.Array(ListedSchedule), nextCursor: Nullable(Type.String()) }),
  async run({ ctx, principal }, a) {
    const { items, nextCursor } = await ctx.schedules.listVisible(principal, { project: a.projectId, workflow: a.workflowId, limit: a.limit ?? 20, cursor: a.cursor });
    // The words for this page's expressions only.
    const schedules = items.map((v) => ({ ...presentSchedule(v), workflowName: v.workflowName, description: describeCron(v.row.cron) }));
    const text = schedules.length
      ? schedules
          .map((s) => `${s.id}: ${s.name || '(unnamed)'} for ${s.workflowName} — ${s.description} (${s.timeZone}), ${s.enabled ? `next ${s.nextFireTimes[0] ?? 'never'}` : 'disabled'}`)
          .join('\n') + (nextCursor ? '\n(more: pass nextCursor as cursor)' : '')
      : 'No schedules.';
    return { structured: { schedules, nextCursor }, text };
  },
});

export const listExecutors = defineTool({
  name: 'list_executors',
  title: 'List executors',
  description: 'The machines that run workflows (administrators only): online, draining or offline, their labels, capacity and how many runs each holds.',
  access: EXECUTORS_READ,
  hints: READ_ONLY,
  input: Type.Object({}, { additionalProperties: false }),
  output: Type.Object({ executors: Type.Array(Executor) }),
  async run({ ctx }) {
    const executors = (await ctx.executors.list()).map(presentExecutor);
    const text = executors.length
      ? executors.map((e) => `${e.id}: ${e.name} ${e.status}, ${e.runningRuns}/${e.capacity} runs, labels ${e.labels.join(', ') || '(none)'}`).join('\n')
      : 'No executors have registered.';
    return { structured: { executors }, text };
  },
});

export const READ_TOOLS = [listProjects, listWorkflows, listRuns, getRun, readRunLog, listSchedules, listExecutors];

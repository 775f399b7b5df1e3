import { Type } from 'typebox';
import { RUN_WRITE, USER_WRITE } from '../auth/access.js';
import { presentRun, presentSchedule, Run, RunParameters, Schedule } from '../api/presenters.js';
import { IdOf, MAX_COUNTER, RequiredLabels, StringEnum } from '../api/schemas.js';
import { isTerminal } from '../runs/run-rows.js';
import { describeCron } from '../schedules/describe.js';
import { runLine } from './read-tools.js';
import { WAITS } from './limits.js';
import { defineTool } from './tool.js';
import { logUri } from './uris.js';

/** The longest wait_for_run, in seconds (a client may give less; proxies may cut idle streams sooner). */
export const MAX_WAIT_SECONDS = 600;
const DEFAULT_WAIT_SECONDS = 120;

const RunId = IdOf('the run id');
const RunResult = Type.Object({ run: Run, logUri: Type.String({ description: 'the MCP resource of its log' }) });

const PARAMETERS_HELP =
  'values for the parameters the workflow declares (list_workflows shows their names, types and defaults; one left out or null runs with its default); strings, numbers, booleans or null';

export const startRun = defineTool({
  name: 'start_run',
  title: 'Start a run',
  description:
    'Queues a run of a workflow (default: its latest version) with parameters; an executor picks it up. Needs the editor role in its project. ' +
    'Parameters are checked against those the version declares: a wrong type or choice is refused with the parameter named. ' +
    'Then use wait_for_run to follow it.',
  access: USER_WRITE,
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
  input: Type.Object(
    {
      workflowId: IdOf('the workflow (from list_workflows)'),
      version: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_COUNTER, description: 'a version number (default: the latest)' })),
      parameters: Type.Optional({ ...RunParameters, description: PARAMETERS_HELP }),
      requiredLabels: Type.Optional({ ...RequiredLabels, description: 'labels an executor must have to take the run' }),
    },
    { additionalProperties: false },
  ),
  output: RunResult,
  async run({ ctx, principal }, a) {
    const run = await ctx.runs.start(principal, a.workflowId, { version: a.version, parameters: a.parameters, requiredLabels: a.requiredLabels });
    return { structured: { run: presentRun(run), logUri: logUri(run.id) }, text: `Queued ${runLine(run)}` };
  },
});

export const cancelRun = defineTool({
  name: 'cancel_run',
  title: 'Cancel a run',
  description:
    'Cancels a queued or running run: a queued one ends at once, a running one is stopped by its executor (status cancelling, then cancelled). ' +
    'A finished run cannot be cancelled. Needs the editor role.',
  access: RUN_WRITE,
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
  input: Type.Object({ runId: RunId }, { additionalProperties: false }),
  output: RunResult,
  async run({ ctx, principal }, { runId }) {
    const run = await ctx.runs.cancel(principal, runId);
    return { structured: { run: presentRun(run), logUri: logUri(run.id) }, text: `Cancelling ${runLine(run)}` };
  },
});

export const rerunRun = defineTool({
  name: 'rerun_run',
  title: 'Re-run a run',
  description:
    'Queues a new run of a finished (typically failed) run\'s workflow with the same parameters and labels; parameters given replace theirs. ' +
    'version "original" (default) runs the version it ran, "latest" the newest upload. Needs the editor role.',
  access: USER_WRITE,
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
  input: Type.Object(
    {
      runId: RunId,
      version: Type.Optional(StringEnum(['original', 'latest'], { description: 'which version to run (default original)' })),
      parameters: Type.Optional({ ...RunParameters, description: `replacements: ${PARAMETERS_HELP}` }),
    },
    { additionalProperties: false },
  ),
  output: RunResult,
  async run({ ctx, principal }, a) {
    const run = await ctx.runs.rerun(principal, a.runId, { version: a.version ?? 'original', parameters: a.parameters });
    return { structured: { run: presentRun(run), logUri: logUri(run.id) }, text: `Queued ${runLine(run)}` };
  },
});

export const waitForRun = defineTool({
  name: 'wait_for_run',
  title: 'Wait for a run to finish',
  description:
    `Waits until the run has ended (succeeded, failed or cancelled) or timeoutSeconds (default ${DEFAULT_WAIT_SECONDS}, at most ${MAX_WAIT_SECONDS}) have passed, ` +
    'sending progress notifications while it runs. finished=false means it is still going: call again to keep waiting. ' +
    'After a failure, read_run_log with errorsOnly tells why.',
  access: USER_WRITE,
  hints: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
  concurrency: WAITS,
  input: Type.Object(
    {
      runId: RunId,
      timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_WAIT_SECONDS, description: `stop waiting after this long (default ${DEFAULT_WAIT_SECONDS})` })),
    },
    { additionalProperties: false },
  ),
  output: Type.Object({ run: Run, finished: Type.Boolean({ description: 'the run has ended; false: the wait timed out first' }), logUri: Type.String() }),
  async run({ ctx, recheck, signal, progress }, a) {
    const timeoutMs = (a.timeoutSeconds ?? DEFAULT_WAIT_SECONDS) * 1000;
    const { run, finished } = await ctx.runs.waitForEnd(recheck, a.runId, {
      timeoutMs,
      signal,
      progress: (r, elapsedMs) => progress(Math.floor(elapsedMs / 1000), `${r.status}, attempt ${r.attempt}, ${Math.floor(elapsedMs / 1000)} s`, timeoutMs / 1000),
    });
    const text = finished ? `Finished: ${runLine(run)}` : `Still ${run.status} after ${timeoutMs / 1000} s: ${runLine(run)}`;
    return { structured: { run: presentRun(run), finished: finished && isTerminal(run.status), logUri: logUri(run.id) }, text };
  },
});

export const setScheduleEnabled = defineTool({
  name: 'set_schedule_enabled',
  title: 'Enable or disable a schedule',
  description: 'Turns a schedule on (it fires at its next matching time after now) or off (it queues nothing until enabled). Needs the editor role.',
  access: USER_WRITE,
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
  input: Type.Object(
    { scheduleId: IdOf('the schedule (from list_schedules)'), enabled: Type.Boolean() },
    { additionalProperties: false },
  ),
  output: Type.Object({ schedule: Schedule, description: Type.String({ description: 'the cron expression in words' }) }),
  async run({ ctx, principal }, a) {
    const view = await ctx.schedules.update(principal, a.scheduleId, { enabled: a.enabled });
    const schedule = presentSchedule(view);
    const state = schedule.enabled ? `enabled; next ${schedule.nextFireTimes[0] ?? 'never'}` : 'disabled';
    return { structured: { schedule, description: describeCron(view.row.cron) }, text: `Schedule ${schedule.id} ${state}` };
  },
});

export const WRITE_TOOLS = [startRun, cancelRun, rerunRun, waitForRun, setScheduleEnabled];

import { StatusBadge, Time } from './components.js';
import { formatParameters } from './run-names.js';
import type { Run, Workflow } from './types.js';

/** One run in the runs list: what ran, how it ended and why it failed, at a glance. */
export function RunRow(props: { run: Run; workflow: Workflow | undefined; selected: boolean; onSelect(on: boolean): void }) {
  const { run, workflow } = props;
  const name = workflow?.name ?? `Workflow ${run.workflowId}`;
  const params = formatParameters(run.parameters);
  const checkId = `sel-${run.id}`;
  return (
    <li class={`run-row${props.selected ? ' selected' : ''}`}>
      <input
        id={checkId}
        type="checkbox"
        class="run-select"
        checked={props.selected}
        onChange={(e) => props.onSelect((e.currentTarget as HTMLInputElement).checked)}
        aria-label={`Select the run ${run.id} of ${name}`}
      />
      <div class="run-main">
        <div class="run-title">
          <StatusBadge status={run.status} />
          <a class="run-link" href={`/runs/${run.id}`} aria-label={`Run ${run.id} of ${name}`}>
            {name}
          </a>
          <span class="muted">v{run.workflowVersion}</span>
          {run.scheduleId && <span class="tag">scheduled</span>}
        </div>
        {params && (
          <p class="run-params mono" title={params}>
            {params}
          </p>
        )}
        {run.error && (
          <p class="run-error" title={run.error}>
            {run.error}
          </p>
        )}
      </div>
      <p class="run-times meta">
        <span>
          Queued <Time iso={run.createdAt} />
        </span>
        {run.startedAt && (
          <span>
            Started <Time iso={run.startedAt} />
          </span>
        )}
        {run.finishedAt && (
          <span>
            Finished <Time iso={run.finishedAt} />
          </span>
        )}
      </p>
    </li>
  );
}

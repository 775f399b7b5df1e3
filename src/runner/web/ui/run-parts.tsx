/** Parts of the run page: its timeline, its facts and its output files. */
import { Fragment } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { download } from './api.js';
import { useAuth } from './auth.js';
import { Empty, ErrorNote, Loading, Time } from './components.js';
import { formatBytes, formatDuration } from './format.js';
import { useAction, useApi } from './hooks.js';
import type { Output, Run } from './types.js';

export function Timeline(props: { run: Run }) {
  const { run } = props;
  const took = (from: string | null, to: string | null) => (from && to ? formatDuration(Date.parse(to) - Date.parse(from)) : '');
  const waited = took(run.createdAt, run.startedAt);
  const ran = took(run.startedAt ?? run.createdAt, run.finishedAt);
  return (
    <ol class="timeline" aria-label="Timeline">
      <li class="done">
        <strong>Queued</strong> <Time iso={run.createdAt} />
      </li>
      <li class={run.startedAt ? 'done' : 'pending'}>
        <strong>Started</strong> {run.startedAt ? <Time iso={run.startedAt} /> : <span class="muted">not yet</span>}
        {waited && <span class="meta"> after waiting {waited}</span>}
      </li>
      <li class={run.finishedAt ? `done end ${run.status}` : 'pending'}>
        <strong>Finished</strong> {run.finishedAt ? <Time iso={run.finishedAt} /> : <span class="muted">not yet</span>}
        {run.finishedAt && (
          <span class="meta">
            {' '}
            ({run.status}
            {ran ? `, after ${ran}` : ''})
          </span>
        )}
      </li>
    </ol>
  );
}

export function Facts(props: { run: Run; workflowName: string | undefined }) {
  const { run } = props;
  const { me } = useAuth();
  const params = Object.entries(run.parameters);
  return (
    <div class="card">
      <h2>Details</h2>
      <dl class="facts">
        <dt>Workflow</dt>
        <dd>
          <a href={`/workflows/${run.workflowId}`}>{props.workflowName ?? run.workflowId}</a> <span class="muted">version {run.workflowVersion}</span>
        </dd>
        <dt>Attempt</dt>
        <dd>{run.attempt}</dd>
        <dt>Executor</dt>
        <dd>
          {run.executorName ? (
            <span title={run.executorId ?? undefined}>{run.executorName}</span>
          ) : run.executorId ? (
            <span class="muted">a removed executor</span>
          ) : (
            <span class="muted">none yet</span>
          )}
        </dd>
        <dt>Exit code</dt>
        <dd>{run.exitCode ?? <span class="muted">—</span>}</dd>
        <dt>Started by</dt>
        <dd>
          {run.scheduleId ? (
            <a href={`/runs?schedule=${encodeURIComponent(run.scheduleId)}`}>a schedule (its runs)</a>
          ) : run.createdBy === me.id ? (
            'you'
          ) : run.createdBy ? (
            'another member'
          ) : (
            'the admin key or a deleted account'
          )}
        </dd>
        <dt>Required labels</dt>
        <dd>{run.requiredLabels.length ? run.requiredLabels.map((l) => <span class="tag" key={l}>{l}</span>) : <span class="muted">none</span>}</dd>
      </dl>
      {run.error && (
        <div class="run-failure">
          <h3>Error</h3>
          <pre class="error-text">{run.error}</pre>
        </div>
      )}
      <h3>Parameters</h3>
      {params.length === 0 ? (
        <p class="muted">None.</p>
      ) : (
        <dl class="facts params">
          {params.map(([k, v]) => (
            <Fragment key={k}>
              <dt class="mono">{k}</dt>
              <dd class="mono">{typeof v === 'string' ? v : JSON.stringify(v)}</dd>
            </Fragment>
          ))}
        </dl>
      )}
    </div>
  );
}

/** The output files; read again when `version` changes (the run ended). */
export function Outputs(props: { runId: string; version: string }) {
  const outputs = useApi<{ items: Output[] }>(`/api/runs/${encodeURIComponent(props.runId)}/outputs`);
  const { reload } = outputs;
  const seen = useRef(props.version);
  useEffect(() => {
    if (seen.current === props.version) return;
    seen.current = props.version;
    reload();
  }, [props.version, reload]);
  const fetchOne = useAction((o: Output) => download(`/api/runs/${encodeURIComponent(props.runId)}/outputs/${encodeURIComponent(o.name)}`, o.name));
  return (
    <section class="card" aria-labelledby="outputs-h">
      <h2 id="outputs-h">Outputs</h2>
      <ErrorNote error={outputs.error ?? fetchOne.error} />
      {outputs.loading && !outputs.data ? <Loading what="outputs" /> : null}
      {outputs.data && outputs.data.items.length === 0 ? <Empty>No output files.</Empty> : null}
      {outputs.data && outputs.data.items.length > 0 && (
        <ul class="outputs">
          {outputs.data.items.map((o) => (
            <li key={o.name}>
              <span class="out-name">{o.name}</span>
              <span class="meta">
                {formatBytes(o.size)} · <Time iso={o.createdAt} />
              </span>
              <button type="button" class="secondary small" disabled={fetchOne.busy} onClick={() => void fetchOne.run(o)}>
                Download<span class="visually-hidden"> {o.name}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

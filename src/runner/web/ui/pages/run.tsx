import { useRoute } from 'preact-iso';
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { ErrorNote, Loading, PageHeader, StatusBadge } from '../components.js';
import { useAction, useApi, useInterval, useTitle } from '../hooks.js';
import { LogView } from '../log-view.js';
import { useGo } from '../navigation.js';
import { RerunForm } from '../rerun.js';
import { Facts, Outputs, Timeline } from '../run-parts.js';
import type { Run, Workflow } from '../types.js';

const FINISHED = new Set(['succeeded', 'failed', 'cancelled']);

export function RunPage() {
  const { params } = useRoute();
  const id = params.id ?? '';
  const go = useGo();
  const run = useApi<Run>(`/api/runs/${encodeURIComponent(id)}`);
  const r = run.data?.id === id ? run.data : null;
  const workflow = useApi<Workflow>(r ? `/api/workflows/${encodeURIComponent(r.workflowId)}` : null);
  const [rerunning, setRerunning] = useState(false);
  // Another run's page (the one a re-run started) opens without the re-run form.
  useEffect(() => setRerunning(false), [id]);
  const finished = r ? FINISHED.has(r.status) : false;
  // The log stream says when the run ends; until then its status is read again now and then.
  useInterval(run.reload, r && !finished ? 5000 : null);
  const cancel = useAction(async () => {
    await api<Run>('POST', `/api/runs/${encodeURIComponent(id)}/cancel`);
    run.reload();
  });
  const name = workflow.data?.name;
  useTitle(r ? `Run of ${name ?? 'a workflow'}` : 'Run');
  if (!r) return run.error ? <ErrorNote error={run.error} /> : <Loading what="the run" />;
  const cancellable = r.status === 'queued' || r.status === 'running';
  return (
    <>
      <PageHeader
        title={`Run of ${name ?? 'a workflow'}`}
        sub={
          <>
            <StatusBadge status={r.status} /> <code>{r.id}</code> · <a href="/runs">All runs</a>
          </>
        }
        actions={
          <>
            {cancellable && (
              <button type="button" class="danger" disabled={cancel.busy} onClick={() => void cancel.run()}>
                Cancel run
              </button>
            )}
            {!rerunning && (
              <button type="button" class="secondary" onClick={() => setRerunning(true)}>
                Re-run
              </button>
            )}
          </>
        }
      />
      <ErrorNote error={cancel.error ?? (run.error?.status === 0 ? run.error : null)} />
      {rerunning && <RerunForm runs={[r]} onCancel={() => setRerunning(false)} onDone={(started) => {
            setRerunning(false);
            go(`/runs/${started[0]!.id}`);
          }} />}
      <div class="grid-2 run-top">
        <div class="card">
          <h2>Status</h2>
          <p>
            <StatusBadge status={r.status} />
          </p>
          <Timeline run={r} />
        </div>
        <Facts run={r} workflowName={name} />
      </div>
      <Outputs runId={r.id} version={`${r.status}:${r.attempt}`} />
      <LogView key={r.id} runId={r.id} attempts={r.attempt} onEnd={run.reload} />
    </>
  );
}

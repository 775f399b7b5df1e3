import { api } from '../api.js';
import { useAuth } from '../auth.js';
import { Empty, ErrorNote, Loading, PageHeader, Table, Time } from '../components.js';
import { useAction, useApi, useInterval, useTitle } from '../hooks.js';
import type { Executor } from '../types.js';

const STATUS: Record<Executor['status'], string> = { online: 'Online', draining: 'Draining', offline: 'Offline' };

export function ExecutorsPage() {
  useTitle('Executors');
  const { me } = useAuth();
  const executors = useApi<{ items: Executor[] }>(me.role === 'admin' ? '/api/executors' : null);
  // Live status: heartbeats arrive every few seconds.
  useInterval(executors.reload, 5000);
  const drain = useAction(async (e: Executor) => {
    if (!confirm(`Drain ${e.name}? It finishes its ${e.runningRuns} running run(s) and takes no new ones.`)) return;
    await api('POST', `/api/executors/${encodeURIComponent(e.id)}/drain`);
    executors.reload();
  });
  const remove = useAction(async (e: Executor) => {
    const held = e.runningRuns > 0 ? ` Its ${e.runningRuns} running run(s) go back to the queue.` : '';
    if (!confirm(`Remove ${e.name}?${held}`)) return;
    await api('DELETE', `/api/executors/${encodeURIComponent(e.id)}`);
    executors.reload();
  });
  const items = executors.data?.items ?? [];
  if (me.role !== 'admin') return <PageHeader title="Executors" sub="Only administrators manage executors." />;
  return (
    <>
      <PageHeader title="Executors" sub="Machines that run workflows: started with pier runner executor and the admin key." />
      <ErrorNote error={executors.error ?? drain.error ?? remove.error} />
      {executors.loading && !executors.data ? <Loading what="executors" /> : null}
      {executors.data && items.length === 0 ? (
        <Empty>
          No executor has registered. Start one with <code>pier runner executor --url {location.origin}</code> and the admin key.
        </Empty>
      ) : null}
      {items.length > 0 && (
        <section class="card" aria-label="All executors">
          <Table caption="Executors" columns={['Executor', 'Status', 'Runs', 'Labels', 'Last heartbeat', { hidden: 'Actions' }]}>
            {items.map((e) => (
              <tr key={e.id}>
                <td>
                  {e.name}
                  {e.lastIp ? <p class="meta">{e.lastIp}</p> : null}
                </td>
                <td>
                  <span class={`badge executor-${e.status}`}>{STATUS[e.status] ?? e.status}</span>
                </td>
                <td>
                  {e.runningRuns} of {e.capacity}
                </td>
                <td>{e.labels.length > 0 ? e.labels.join(', ') : <span class="muted">none</span>}</td>
                <td>
                  <Time iso={e.lastHeartbeatAt} />
                </td>
                <td>
                  <div class="buttons">
                    {e.status === 'online' && (
                      <button type="button" class="secondary small" disabled={drain.busy} onClick={() => void drain.run(e)}>
                        Drain<span class="visually-hidden"> {e.name}</span>
                      </button>
                    )}
                    <button type="button" class="danger small" disabled={remove.busy} onClick={() => void remove.run(e)}>
                      Remove<span class="visually-hidden"> {e.name}</span>
                    </button>
                  </div>
                </td>
              </tr>
            ))}
          </Table>
        </section>
      )}
    </>
  );
}

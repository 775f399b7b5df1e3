import { useState } from 'preact/hooks';
import { api } from './api.js';
import { Empty, ErrorNote, Table, Time } from './components.js';
import { useAction } from './hooks.js';
import { ScheduleForm } from './schedule-form.js';
import { inZone } from './schedule-preview.js';
import type { ListedSchedule, Schedule, WorkflowVersion } from './types.js';

const OUTCOME = { queued: 'queued a run', skipped: 'skipped (previous run still going)', failed: 'failed to queue' } as const;

/** Schedules as a table: enable or disable, change, delete, and the runs each one started. */
export function ScheduleTable(props: { schedules: (Schedule | ListedSchedule)[]; canWrite: (s: Schedule) => boolean; versions?: WorkflowVersion[]; reload(): void; showWorkflow?: boolean }) {
  const [editing, setEditing] = useState<string | null>(null);
  const toggle = useAction(async (s: Schedule) => {
    await api<Schedule>('PATCH', `/api/schedules/${encodeURIComponent(s.id)}`, { enabled: !s.enabled });
    props.reload();
  });
  const remove = useAction(async (s: Schedule) => {
    if (!confirm(`Delete the schedule ${s.name || s.cron}? Its runs stay.`)) return;
    await api('DELETE', `/api/schedules/${encodeURIComponent(s.id)}`);
    props.reload();
  });
  if (props.schedules.length === 0) return <Empty>No schedules.</Empty>;
  const editedSchedule = props.schedules.find((s) => s.id === editing);
  return (
    <>
      <ErrorNote error={toggle.error ?? remove.error} />
      {editedSchedule && (
        <ScheduleForm
          workflowId={editedSchedule.workflowId}
          versions={props.versions ?? null}
          schedule={editedSchedule}
          onSaved={() => {
            setEditing(null);
            props.reload();
          }}
          onCancel={() => setEditing(null)}
        />
      )}
      <Table caption="Schedules" columns={['Schedule', 'When', 'Next', 'Last', { hidden: 'Actions' }]}>
        {props.schedules.map((s) => {
          const label = s.name || s.cron;
          return (
            <tr key={s.id}>
              <td>
                {props.showWorkflow && 'workflowName' in s ? <a href={`/workflows/${s.workflowId}`}>{s.workflowName}</a> : null}
                <p>{s.name || <span class="muted">unnamed</span>}</p>
                <a href={`/runs?schedule=${encodeURIComponent(s.id)}`}>Its runs</a>
              </td>
              <td>
                <code>{s.cron}</code>
                <p class="meta">{s.timeZone}</p>
              </td>
              <td>{s.enabled ? s.nextFireTimes[0] ? <time dateTime={s.nextFireTimes[0]}>{inZone(s.nextFireTimes[0], s.timeZone)}</time> : '—' : <span class="muted">disabled</span>}</td>
              <td>
                {s.lastFireAt ? (
                  <>
                    <Time iso={s.lastFireAt} />
                    {s.lastOutcome && <p class="meta">{OUTCOME[s.lastOutcome]}</p>}
                  </>
                ) : (
                  <span class="muted">never fired</span>
                )}
              </td>
              <td>
                {props.canWrite(s) && (
                  <div class="buttons">
                    <button type="button" class="secondary small" disabled={toggle.busy} onClick={() => void toggle.run(s)}>
                      {s.enabled ? 'Disable' : 'Enable'}
                      <span class="visually-hidden"> {label}</span>
                    </button>
                    <button type="button" class="secondary small" onClick={() => setEditing(s.id)}>
                      Change<span class="visually-hidden"> {label}</span>
                    </button>
                    <button type="button" class="danger small" disabled={remove.busy} onClick={() => void remove.run(s)}>
                      Delete<span class="visually-hidden"> {label}</span>
                    </button>
                  </div>
                )}
              </td>
            </tr>
          );
        })}
      </Table>
    </>
  );
}

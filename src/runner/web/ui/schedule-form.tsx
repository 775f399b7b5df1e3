import { useState } from 'preact/hooks';
import { api } from './api.js';
import { ErrorNote, Field, TextField } from './components.js';
import { userTimeZone } from './format.js';
import { useAction } from './hooks.js';
import { type ParamRow, ParamsEditor, parametersOf, rowsOf } from './params-editor.js';
import { PreviewNote } from './schedule-preview.js';
import type { Schedule, WorkflowVersion } from './types.js';

const ZONES: string[] = (() => {
  try {
    return (Intl as unknown as { supportedValuesOf(k: string): string[] }).supportedValuesOf('timeZone');
  } catch {
    return [];
  }
})();

/** Creates a schedule of a workflow, or changes one: the expression is read back in words as it is typed. */
export function ScheduleForm(props: { workflowId: string; versions: WorkflowVersion[] | null; schedule?: Schedule; onSaved(s: Schedule): void; onCancel(): void }) {
  const s = props.schedule;
  const [name, setName] = useState(s?.name ?? '');
  const [cron, setCron] = useState(s?.cron ?? '0 6 * * MON-FRI');
  const [timeZone, setTimeZone] = useState(s?.timeZone ?? userTimeZone);
  const [overlap, setOverlap] = useState<'skip' | 'queue'>(s?.overlap ?? 'skip');
  const [enabled, setEnabled] = useState(s?.enabled ?? true);
  const [version, setVersion] = useState(s?.workflowVersion ? String(s.workflowVersion) : '');
  const [labels, setLabels] = useState((s?.requiredLabels ?? []).join(', '));
  const [rows, setRows] = useState<ParamRow[]>(() => rowsOf(s?.parameters ?? {}));
  const [typed, setTyped] = useState(true);
  const save = useAction(async () => {
    const body = {
      name: name.trim(),
      cron,
      timeZone,
      overlap,
      enabled,
      workflowVersion: version ? Number(version) : null,
      requiredLabels: labels.split(',').map((l) => l.trim()).filter(Boolean),
      parameters: parametersOf(rows, typed),
    };
    const saved = s
      ? await api<Schedule>('PATCH', `/api/schedules/${encodeURIComponent(s.id)}`, body)
      : await api<Schedule>('POST', `/api/workflows/${encodeURIComponent(props.workflowId)}/schedules`, body);
    props.onSaved(saved);
  });
  const title = s ? `Change the schedule ${s.name || s.cron}` : 'New schedule';
  return (
    <form
      class="card"
      aria-label={title}
      onSubmit={(e) => {
        e.preventDefault();
        void save.run();
      }}
    >
      <h2>{title}</h2>
      <ErrorNote error={save.error} placed={['name', 'cron', 'timeZone', 'workflowVersion', 'requiredLabels']} />
      <TextField label="Name" name="name" maxLength={200} hint="Optional; shown in lists." value={name} onInput={setName} error={save.error?.forField('name')} />
      <TextField
        label="Cron expression"
        name="cron"
        required
        class="mono"
        hint={
          <>
            minute hour day month weekday, e.g. <code>30 6 * * MON-FRI</code>, <code>*/15 9-17 * * *</code>, <code>0 0 L * *</code>, <code>@daily</code>
          </>
        }
        value={cron}
        onInput={setCron}
        error={save.error?.forField('cron')}
      />
      <PreviewNote cron={cron} timeZone={timeZone} id="cron-preview" />
      <Field label="Time zone" error={save.error?.forField('timeZone')} hint="The expression is read in this zone, daylight saving time included.">
        {(id, describedBy) => (
          <>
            <input id={id} list="zones" value={timeZone} aria-describedby={describedBy} onInput={(e) => setTimeZone((e.currentTarget as HTMLInputElement).value)} />
            <datalist id="zones">
              {ZONES.map((z) => (
                <option key={z} value={z} />
              ))}
            </datalist>
          </>
        )}
      </Field>
      <Field label="If the previous run is still queued or running">
        {(id) => (
          <select id={id} value={overlap} onChange={(e) => setOverlap((e.currentTarget as HTMLSelectElement).value as 'skip' | 'queue')}>
            <option value="skip">Skip this time</option>
            <option value="queue">Queue another run</option>
          </select>
        )}
      </Field>
      <Field label="Version" error={save.error?.forField('workflowVersion')}>
        {(id) => (
          <select id={id} value={version} onChange={(e) => setVersion((e.currentTarget as HTMLSelectElement).value)}>
            <option value="">The latest when it fires</option>
            {(props.versions ?? []).map((v) => (
              <option key={v.version} value={String(v.version)}>
                Always v{v.version}
              </option>
            ))}
          </select>
        )}
      </Field>
      <ParamsEditor rows={rows} setRows={setRows} typed={typed} setTyped={setTyped} errorFor={(n) => save.error?.forField(`parameters/${n}`)} empty="No parameters." />
      <TextField
        label="Required executor labels"
        name="requiredLabels"
        hint="Comma-separated."
        value={labels}
        onInput={setLabels}
        error={save.error?.forField('requiredLabels')}
      />
      <label class="check">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled((e.currentTarget as HTMLInputElement).checked)} /> Enabled
      </label>
      <div class="buttons">
        <button type="submit" disabled={save.busy}>
          {s ? 'Save schedule' : 'Create schedule'}
        </button>
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

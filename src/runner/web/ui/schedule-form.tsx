import { useState } from 'preact/hooks';
import { api, ApiError } from './api.js';
import { ErrorNote, Field, Loading, TextField } from './components.js';
import { DeclaredFields, type DeclaredValues, initialValues, typedValues } from './declared-fields.js';
import { userTimeZone } from './format.js';
import { useAction, useApi } from './hooks.js';
import { type ParamRow, ParamsEditor, parametersOf, rowsOf } from './params-editor.js';
import { PreviewNote } from './schedule-preview.js';
import type { DeclaredParameter, ParameterValue, Schedule, WorkflowVersion } from './types.js';

const ZONES: string[] = (() => {
  try {
    return (Intl as unknown as { supportedValuesOf(k: string): string[] }).supportedValuesOf('timeZone');
  } catch {
    return [];
  }
})();

/** The parameters the schedule runs with: the version it is pinned to, else the latest (versions come newest first). */
function declaredOf(versions: WorkflowVersion[], version: string): DeclaredParameter[] {
  return (versions.find((v) => String(v.version) === version) ?? versions[0])?.declaredParameters ?? [];
}

/** The declared fields from stored values (the declared default where none is stored). */
function storedValues(declared: DeclaredParameter[], stored: Record<string, ParameterValue>): DeclaredValues {
  const values = initialValues(declared);
  for (const d of declared) {
    const v = Object.hasOwn(stored, d.name) ? stored[d.name] : undefined;
    if (v === undefined || v === null) continue;
    values[d.name] = d.type === 'boolean' ? v === true || v === 'true' : String(v);
  }
  return values;
}

/**
 * Creates a schedule of a workflow, or changes one: the expression is read back in words as it
 * is typed, and the parameters the version declares are typed fields, as in the run form. The
 * versions are those given, or read here (the Schedules page lists schedules without them).
 */
export function ScheduleForm(props: { workflowId: string; versions: WorkflowVersion[] | null; schedule?: Schedule; onSaved(s: Schedule): void; onCancel(): void }) {
  const read = useApi<{ items: WorkflowVersion[] }>(props.versions ? null : `/api/workflows/${encodeURIComponent(props.workflowId)}/versions`);
  const versions = props.versions ?? read.data?.items ?? null;
  if (!versions) return read.error ? <ErrorNote error={read.error} /> : <Loading what="the workflow's versions" />;
  return <Loaded {...props} versions={versions} />;
}

function Loaded(props: { workflowId: string; versions: WorkflowVersion[]; schedule?: Schedule; onSaved(s: Schedule): void; onCancel(): void }) {
  const s = props.schedule;
  const [name, setName] = useState(s?.name ?? '');
  const [cron, setCron] = useState(s?.cron ?? '0 6 * * MON-FRI');
  const [timeZone, setTimeZone] = useState(s?.timeZone ?? userTimeZone);
  const [overlap, setOverlap] = useState<'skip' | 'queue'>(s?.overlap ?? 'skip');
  const [enabled, setEnabled] = useState(s?.enabled ?? true);
  const [version, setVersion] = useState(s?.workflowVersion ? String(s.workflowVersion) : '');
  const declared = declaredOf(props.versions, version);
  const [values, setValues] = useState<DeclaredValues>(() => storedValues(declared, s?.parameters ?? {}));
  const [invalid, setInvalid] = useState<Record<string, string>>({});
  const [labels, setLabels] = useState((s?.requiredLabels ?? []).join(', '));
  // Free rows hold what no declared field does.
  const [rows, setRows] = useState<ParamRow[]>(() => rowsOf(Object.fromEntries(Object.entries(s?.parameters ?? {}).filter(([k]) => !declared.some((d) => d.name === k)))));
  const [typed, setTyped] = useState(true);
  const chooseVersion = (v: string) => {
    setVersion(v);
    setValues(storedValues(declaredOf(props.versions, v), s?.parameters ?? {}));
    setInvalid({});
  };
  const save = useAction(async () => {
    const checked = typedValues(declared, values);
    setInvalid(checked.problems);
    if (Object.keys(checked.problems).length > 0) throw new ApiError({ status: 0, detail: 'some parameters are not valid; see the fields marked' });
    const body = {
      name: name.trim(),
      cron,
      timeZone,
      overlap,
      enabled,
      workflowVersion: version ? Number(version) : null,
      requiredLabels: labels.split(',').map((l) => l.trim()).filter(Boolean),
      parameters: { ...parametersOf(rows, typed), ...checked.parameters },
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
          <select id={id} value={version} onChange={(e) => chooseVersion((e.currentTarget as HTMLSelectElement).value)}>
            <option value="">The latest when it fires</option>
            {props.versions.map((v) => (
              <option key={v.version} value={String(v.version)}>
                Always v{v.version}
              </option>
            ))}
          </select>
        )}
      </Field>
      <DeclaredFields
        declared={declared}
        values={values}
        set={(name, v) => setValues((vs) => ({ ...vs, [name]: v }))}
        errorFor={(name) => invalid[name] ?? save.error?.forField(`parameters/${name}`)}
      />
      <ParamsEditor
        rows={rows}
        setRows={setRows}
        typed={typed}
        setTyped={setTyped}
        errorFor={(n) => save.error?.forField(`parameters/${n}`)}
        empty={declared.length > 0 ? 'No other parameters.' : 'No parameters.'}
      />
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

import { useState } from 'preact/hooks';
import { ApiError, api } from './api.js';
import { DeclaredFields, type DeclaredValues, initialValues, typedValues } from './declared-fields.js';
import { ErrorNote, Field, TextField } from './components.js';
import { useAction } from './hooks.js';
import { useGo } from './navigation.js';
import { type ParamRow, ParamsEditor, parametersOf } from './params-editor.js';
import type { Run, WorkflowDetails } from './types.js';

/** Starts a run of a workflow: version, parameters (free name/value pairs) and required labels. */
export function StartRun(props: { workflow: WorkflowDetails }) {
  const go = useGo();
  const [version, setVersion] = useState('');
  const [rows, setRows] = useState<ParamRow[]>([]);
  const [typed, setTyped] = useState(true);
  const [labels, setLabels] = useState('');
  const chosen = props.workflow.versions.find((v) => String(v.version) === version) ?? props.workflow.versions[0];
  const declared = chosen?.declaredParameters ?? [];
  const [values, setValues] = useState<DeclaredValues>(() => initialValues(declared));
  const [invalid, setInvalid] = useState<Record<string, string>>({});
  const chooseVersion = (v: string) => {
    setVersion(v);
    const next = props.workflow.versions.find((x) => String(x.version) === v) ?? props.workflow.versions[0];
    setValues(initialValues(next?.declaredParameters ?? []));
    setInvalid({});
  };
  const start = useAction(async () => {
    const checked = typedValues(declared, values);
    setInvalid(checked.problems);
    if (Object.keys(checked.problems).length > 0) throw new ApiError({ status: 0, detail: 'some parameters are not valid; see the fields marked' });
    const parameters = { ...parametersOf(rows, typed), ...checked.parameters };
    const requiredLabels = labels.split(',').map((l) => l.trim()).filter(Boolean);
    const run = await api<Run>('POST', `/api/workflows/${encodeURIComponent(props.workflow.id)}/runs`, {
      ...(version ? { version: Number(version) } : {}),
      parameters,
      ...(requiredLabels.length > 0 ? { requiredLabels } : {}),
    });
    go(`/runs/${run.id}`);
  });
  return (
    <form
      class="card"
      aria-labelledby="start-h"
      onSubmit={(e) => {
        e.preventDefault();
        void start.run();
      }}
    >
      <h2 id="start-h">Start a run</h2>
      <ErrorNote error={start.error} placed={['version', 'requiredLabels']} />
      <Field label="Version" error={start.error?.forField('version')}>
        {(id) => (
          <select id={id} value={version} onChange={(e) => chooseVersion((e.currentTarget as HTMLSelectElement).value)}>
            <option value="">Latest (v{props.workflow.latestVersion})</option>
            {props.workflow.versions.map((v) => (
              <option key={v.version} value={String(v.version)}>
                v{v.version} · {v.fileName}
              </option>
            ))}
          </select>
        )}
      </Field>
      <DeclaredFields
        declared={declared}
        values={values}
        set={(name, v) => setValues((vs) => ({ ...vs, [name]: v }))}
        errorFor={(name) => invalid[name] ?? start.error?.forField(`parameters/${name}`)}
      />
      <ParamsEditor
        rows={rows}
        setRows={setRows}
        typed={typed}
        setTyped={setTyped}
        errorFor={(name) => start.error?.forField(`parameters/${name}`)}
        empty={declared.length > 0 ? 'No other parameters.' : 'No parameters: the workflow runs with its own defaults.'}
      />
      <TextField
        label="Required executor labels"
        name="requiredLabels"
        hint="Comma-separated; only an executor with all of them takes the run."
        value={labels}
        onInput={setLabels}
        error={start.error?.forField('requiredLabels')}
      />
      <div class="buttons">
        <button type="submit" disabled={start.busy || props.workflow.versions.length === 0}>
          Start run
        </button>
      </div>
    </form>
  );
}

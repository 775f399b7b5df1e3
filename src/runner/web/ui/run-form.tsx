import { useState } from 'preact/hooks';
import { api } from './api.js';
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
  const start = useAction(async () => {
    const parameters = parametersOf(rows, typed);
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
          <select id={id} value={version} onChange={(e) => setVersion((e.currentTarget as HTMLSelectElement).value)}>
            <option value="">Latest (v{props.workflow.latestVersion})</option>
            {props.workflow.versions.map((v) => (
              <option key={v.version} value={String(v.version)}>
                v{v.version} · {v.fileName}
              </option>
            ))}
          </select>
        )}
      </Field>
      <ParamsEditor
        rows={rows}
        setRows={setRows}
        typed={typed}
        setTyped={setTyped}
        errorFor={(name) => start.error?.forField(`parameters/${name}`)}
        empty="No parameters: the workflow runs with its own defaults."
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

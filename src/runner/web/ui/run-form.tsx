import { useState } from 'preact/hooks';
import { api } from './api.js';
import { ErrorNote, Field, TextField } from './components.js';
import { useAction } from './hooks.js';
import { useGo } from './navigation.js';
import type { ParameterValue, Run, WorkflowDetails } from './types.js';

interface Row {
  key: number;
  name: string;
  value: string;
}

let rowKeys = 0;

/** A typed value from what was typed: numbers and true/false as such, the rest as text. */
function parseValue(text: string, typed: boolean): ParameterValue {
  if (!typed) return text;
  if (/^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?$/.test(text.trim())) return Number(text);
  if (text === 'true' || text === 'false') return text === 'true';
  return text;
}

/** Starts a run of a workflow: version, parameters (free name/value pairs) and required labels. */
export function StartRun(props: { workflow: WorkflowDetails }) {
  const go = useGo();
  const [version, setVersion] = useState('');
  const [rows, setRows] = useState<Row[]>([]);
  const [typed, setTyped] = useState(true);
  const [labels, setLabels] = useState('');
  const start = useAction(async () => {
    const parameters: Record<string, ParameterValue> = {};
    for (const r of rows) if (r.name !== '') parameters[r.name] = parseValue(r.value, typed);
    const requiredLabels = labels.split(',').map((l) => l.trim()).filter(Boolean);
    const run = await api<Run>('POST', `/api/workflows/${encodeURIComponent(props.workflow.id)}/runs`, {
      ...(version ? { version: Number(version) } : {}),
      parameters,
      ...(requiredLabels.length > 0 ? { requiredLabels } : {}),
    });
    go(`/runs/${run.id}`);
  });
  const setRow = (key: number, change: Partial<Row>) => setRows((rs) => rs.map((r) => (r.key === key ? { ...r, ...change } : r)));
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
      <fieldset class="params">
        <legend>Parameters</legend>
        {rows.length === 0 && <p class="meta">No parameters: the workflow runs with its own defaults.</p>}
        {rows.map((r, i) => (
          <div class="param-row" key={r.key}>
            <TextField label={`Name ${i + 1}`} value={r.name} maxLength={200} onInput={(name) => setRow(r.key, { name })} error={start.error?.forField(`parameters/${r.name}`)} />
            <TextField label={`Value ${i + 1}`} value={r.value} onInput={(value) => setRow(r.key, { value })} />
            <button type="button" class="secondary small" onClick={() => setRows((rs) => rs.filter((x) => x.key !== r.key))}>
              Remove<span class="visually-hidden"> parameter {i + 1}</span>
            </button>
          </div>
        ))}
        <div class="buttons">
          <button type="button" class="secondary small" onClick={() => setRows((rs) => [...rs, { key: ++rowKeys, name: '', value: '' }])}>
            Add a parameter
          </button>
          <label class="check">
            <input type="checkbox" checked={typed} onChange={(e) => setTyped((e.currentTarget as HTMLInputElement).checked)} /> Send numbers and true/false as such
          </label>
        </div>
      </fieldset>
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

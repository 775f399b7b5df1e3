/**
 * Re-running runs: each again with its own parameters (optionally with some replaced, as JSON)
 * and required labels, on its original workflow version or the latest one. Through
 * POST /api/workflows/{id}/runs, as a script would.
 */
import { useState } from 'preact/hooks';
import { api, ApiError } from './api.js';
import { ErrorNote, Field } from './components.js';
import { useAction } from './hooks.js';
import type { ParameterValue, Run } from './types.js';

export function parseOverride(text: string): Record<string, ParameterValue> {
  if (!text.trim()) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error('not valid JSON');
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error('a JSON object is needed, such as {"rows": 10}');
  for (const [k, v] of Object.entries(value)) {
    if (v !== null && typeof v === 'object') throw new Error(`"${k}": a parameter is a string, number, true/false or null`);
  }
  return value as Record<string, ParameterValue>;
}

export function rerun(run: Run, version: 'original' | 'latest', override: Record<string, ParameterValue>): Promise<Run> {
  return api<Run>('POST', `/api/workflows/${encodeURIComponent(run.workflowId)}/runs`, {
    ...(version === 'original' ? { version: run.workflowVersion } : {}),
    parameters: { ...run.parameters, ...override },
    ...(run.requiredLabels.length ? { requiredLabels: run.requiredLabels } : {}),
  });
}

/** The re-run form for one run or several; `done` gets the runs it started. */
export function RerunForm(props: { runs: Run[]; onDone(started: Run[]): void; onCancel(): void }) {
  const [version, setVersion] = useState<'original' | 'latest'>('original');
  const [override, setOverride] = useState('');
  const [overrideError, setOverrideError] = useState<string | undefined>();
  const n = props.runs.length;
  const go = useAction(async () => {
    let values: Record<string, ParameterValue>;
    try {
      values = parseOverride(override);
      setOverrideError(undefined);
    } catch (e) {
      setOverrideError((e as Error).message);
      return;
    }
    const started: Run[] = [];
    const failed: string[] = [];
    let first: ApiError | null = null;
    for (const run of props.runs) {
      try {
        started.push(await rerun(run, version, values));
      } catch (e) {
        failed.push(run.id);
        first ??= e instanceof ApiError ? e : new ApiError({ status: 0, detail: String(e) });
      }
    }
    if (started.length) props.onDone(started);
    // One run: the API's own answer; several: how many failed, then the first answer.
    if (first && n === 1) throw first;
    if (first) throw new ApiError({ ...first.problem, detail: `${failed.length} of ${n} could not be started: ${first.message}` });
  });
  return (
    <form
      class="card rerun"
      aria-label={n === 1 ? 'Re-run' : `Re-run ${n} runs`}
      onSubmit={(e) => {
        e.preventDefault();
        void go.run();
      }}
    >
      <h2>{n === 1 ? 'Re-run' : `Re-run ${n} runs`}</h2>
      <ErrorNote error={go.error} />
      <fieldset class="choices">
        <legend>Workflow version</legend>
        <label class="check">
          <input type="radio" name="rerun-version" checked={version === 'original'} onChange={() => setVersion('original')} /> The version{n === 1 ? '' : 's'} it ran
          {n === 1 ? ` (v${props.runs[0]!.workflowVersion})` : ''}
        </label>
        <label class="check">
          <input type="radio" name="rerun-version" checked={version === 'latest'} onChange={() => setVersion('latest')} /> The latest version
        </label>
      </fieldset>
      <Field label="Replace parameters (optional)" error={overrideError} hint='JSON, such as {"rows": 10}: these values replace those of the original run; the rest stay the same.'>
        {(id, describedBy) => (
          <textarea id={id} class="mono rerun-params" rows={3} value={override} aria-describedby={describedBy} aria-invalid={overrideError ? 'true' : undefined} onInput={(e) => setOverride((e.currentTarget as HTMLTextAreaElement).value)} />
        )}
      </Field>
      <div class="buttons">
        <button type="submit" disabled={go.busy}>
          {n === 1 ? 'Start the run again' : `Start ${n} runs again`}
        </button>
        <button type="button" class="secondary" onClick={props.onCancel}>
          Close
        </button>
      </div>
    </form>
  );
}

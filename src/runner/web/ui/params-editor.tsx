import { TextField } from './components.js';
import type { ParameterValue } from './types.js';

export interface ParamRow {
  key: number;
  name: string;
  value: string;
}

let rowKeys = 0;

/** Rows from stored parameters (values as typed text). */
export function rowsOf(parameters: Record<string, ParameterValue>): ParamRow[] {
  return Object.entries(parameters).map(([name, v]) => ({ key: ++rowKeys, name, value: v === null ? '' : String(v) }));
}

/** A typed value from what was typed: numbers and true/false as such, the rest as text. */
function parseValue(text: string, typed: boolean): ParameterValue {
  if (!typed) return text;
  if (/^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?$/.test(text.trim())) return Number(text);
  if (text === 'true' || text === 'false') return text === 'true';
  return text;
}

/** The parameters the rows stand for (rows without a name are left out). */
export function parametersOf(rows: ParamRow[], typed: boolean): Record<string, ParameterValue> {
  const out: Record<string, ParameterValue> = {};
  for (const r of rows) if (r.name !== '') out[r.name] = parseValue(r.value, typed);
  return out;
}

/** Free name/value pairs, with a choice to send numbers and true/false typed. */
export function ParamsEditor(props: {
  rows: ParamRow[];
  setRows(update: (rows: ParamRow[]) => ParamRow[]): void;
  typed: boolean;
  setTyped(typed: boolean): void;
  errorFor(name: string): string | undefined;
  empty: string;
}) {
  const setRow = (key: number, change: Partial<ParamRow>) => props.setRows((rs) => rs.map((r) => (r.key === key ? { ...r, ...change } : r)));
  return (
    <fieldset class="params">
      <legend>Parameters</legend>
      {props.rows.length === 0 && <p class="meta">{props.empty}</p>}
      {props.rows.map((r, i) => (
        <div class="param-row" key={r.key}>
          <TextField label={`Name ${i + 1}`} value={r.name} maxLength={200} onInput={(name) => setRow(r.key, { name })} error={props.errorFor(r.name)} />
          <TextField label={`Value ${i + 1}`} value={r.value} onInput={(value) => setRow(r.key, { value })} />
          <button type="button" class="secondary small" onClick={() => props.setRows((rs) => rs.filter((x) => x.key !== r.key))}>
            Remove<span class="visually-hidden"> parameter {i + 1}</span>
          </button>
        </div>
      ))}
      <div class="buttons">
        <button type="button" class="secondary small" onClick={() => props.setRows((rs) => [...rs, { key: ++rowKeys, name: '', value: '' }])}>
          Add a parameter
        </button>
        <label class="check">
          <input type="checkbox" checked={props.typed} onChange={(e) => props.setTyped((e.currentTarget as HTMLInputElement).checked)} /> Send numbers and true/false as such
        </label>
      </div>
    </fieldset>
  );
}

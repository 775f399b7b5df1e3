import { Field } from './components.js';
import type { DeclaredParameter, ParameterValue } from './types.js';

/** What a person typed for each declared parameter: text for inputs, a boolean for check boxes. */
export type DeclaredValues = Record<string, string | boolean>;

/** Decimal notation, as the server takes it (no hex, Infinity or NaN). */
const DECIMAL = /^[+-]?(?:\d{1,400}(?:\.\d{0,400})?|\.\d{1,400})(?:[eE][+-]?\d{1,5})?$/;
const inRange = (d: DeclaredParameter, n: number) => (d.minimum === undefined || n >= d.minimum) && (d.maximum === undefined || n <= d.maximum);

export function initialValues(declared: DeclaredParameter[]): DeclaredValues {
  return Object.fromEntries(declared.map((d) => [d.name, d.type === 'boolean' ? d.default === true : d.default === null ? '' : String(d.default)]));
}

/** The typed value of each field (empty fields are left to the workflow's default), or why one is not valid. */
export function typedValues(declared: DeclaredParameter[], values: DeclaredValues): { parameters: Record<string, ParameterValue>; problems: Record<string, string> } {
  const parameters: Record<string, ParameterValue> = {};
  const problems: Record<string, string> = {};
  for (const d of declared) {
    const v = values[d.name];
    if (d.type === 'boolean') {
      parameters[d.name] = v === true;
      continue;
    }
    const text = typeof v === 'string' ? v.trim() : '';
    if (text === '') continue;
    if (d.type === 'integer') {
      // Decimal digits only (the server refuses 0x…, Infinity, NaN); within the node's Java type.
      const n = /^[+-]?\d{1,40}$/.test(text) ? Number(text) : Number.NaN;
      if (!Number.isSafeInteger(n)) problems[d.name] = 'enter a whole number';
      else if (!inRange(d, n)) problems[d.name] = `enter a whole number from ${d.minimum ?? -Number.MAX_SAFE_INTEGER} to ${d.maximum ?? Number.MAX_SAFE_INTEGER}`;
      else parameters[d.name] = n;
    } else if (d.type === 'number') {
      const n = DECIMAL.test(text) ? Number(text) : Number.NaN;
      if (!Number.isFinite(n)) problems[d.name] = 'enter a number';
      else if (!inRange(d, n)) problems[d.name] = `enter a number from ${d.minimum} to ${d.maximum}`;
      else parameters[d.name] = n;
    } else parameters[d.name] = typeof v === 'string' ? v : '';
  }
  return { parameters, problems };
}

/** A form field per declared parameter, typed as the configuration node says, with its description. */
export function DeclaredFields(props: { declared: DeclaredParameter[]; values: DeclaredValues; set(name: string, v: string | boolean): void; errorFor(name: string): string | undefined }) {
  if (props.declared.length === 0) return null;
  return (
    <fieldset class="params">
      <legend>Workflow parameters</legend>
      {props.declared.map((d) => {
        const label = d.label || d.name;
        const hint = (
          <>
            {d.description ? `${d.description} · ` : ''}
            <code>{d.name}</code>, {d.type}
            {d.type !== 'string' && d.maximum !== undefined ? ` from ${d.minimum} to ${d.maximum}` : ''}
            {d.default !== null && d.type !== 'boolean' ? `, default ${String(d.default)}` : ''}
          </>
        );
        if (d.type === 'boolean') {
          return (
            <div class="field" key={d.name}>
              <label class="check">
                <input type="checkbox" checked={props.values[d.name] === true} onChange={(e) => props.set(d.name, (e.currentTarget as HTMLInputElement).checked)} /> {label}
              </label>
              <p class="hint">{hint}</p>
            </div>
          );
        }
        return (
          <Field key={d.name} label={label} hint={hint} error={props.errorFor(d.name)}>
            {(id, describedBy) =>
              d.choices ? (
                <select id={id} aria-describedby={describedBy} value={String(props.values[d.name] ?? '')} onChange={(e) => props.set(d.name, (e.currentTarget as HTMLSelectElement).value)}>
                  {d.choices.map((c) => (
                    <option key={c} value={c}>
                      {c}
                    </option>
                  ))}
                </select>
              ) : (
                <input
                  id={id}
                  aria-describedby={describedBy}
                  aria-invalid={props.errorFor(d.name) ? 'true' : undefined}
                  inputMode={d.type === 'string' ? undefined : d.type === 'integer' ? 'numeric' : 'decimal'}
                  value={String(props.values[d.name] ?? '')}
                  onInput={(e) => props.set(d.name, (e.currentTarget as HTMLInputElement).value)}
                />
              )
            }
          </Field>
        );
      })}
    </fieldset>
  );
}

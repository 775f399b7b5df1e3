/**
 * The run parameters a platform workflow declares: its configuration nodes (String, Integer,
 * Double, Boolean and selection "Configuration" nodes, their older "Quickform"/"Dialog" forms,
 * Container Input (Variable)). Each keeps, in its node folder's `settings.xml`, a `parameterName`
 * the batch executor takes values for, a default value whose entry type says the type, and a
 * label and description written for people. The archive is the uploader's: the files are picked
 * and bounded by settings-entries.ts and parsed here in the worker of isolated-declared.ts; DTDs
 * are refused before parsing, and a file that cannot be read declares nothing.
 */
import { XMLParser } from 'fast-xml-parser';
import { hasUnshown, withoutUnshown } from '../../infra/unshown.js';
import { DEFAULT_INTEGER_RANGE, FLOAT_MAXIMUM, INTEGER_RANGES, integerValue, numberValue } from './declared-values.js';

export type DeclaredType = 'string' | 'integer' | 'number' | 'boolean';

export interface DeclaredParameter {
  name: string;
  type: DeclaredType;
  default: string | number | boolean | null;
  label: string;
  description: string;
  /** The values a selection node offers, when it lists them. */
  choices?: string[];
  /**
   * The range of an integer (its Java type's: int, short, or a long within what JSON holds
   * exactly) or of a float (±Float.MAX_VALUE); absent for a double, which is any finite number.
   * Versions stored before ranges were kept have none: an integer is then held to a long's.
   */
  minimum?: number;
  maximum?: number;
}

/** Names a run's parameters may not have (the API refuses them as object keys). */
const FORBIDDEN_NAMES = new Set(['__proto__', 'constructor', 'prototype']);
/** Parameters kept of one version (the first node wins a repeated name). */
export const MAX_PARAMETERS = 100;
const MAX_TEXT = 2000;
/** Factories of nodes that take a value from the batch executor by parameter name. */
const CONFIGURATION = /\.(?:configuration|quickform|dialog)\.|ContainerVariableInput|VariableInput/i;

const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', parseTagValue: false, parseAttributeValue: false, processEntities: true, htmlEntities: false, isArray: (name) => name === 'entry' || name === 'config' });

interface Config {
  key?: string;
  entry?: { key?: string; type?: string; value?: string; isnull?: string }[];
  config?: Config[];
}

/** XML character references (`&#x202e;`), which the parser leaves as they are. */
function decode(value: string | undefined): string | undefined {
  return value?.replace(/&#(x[0-9a-fA-F]{1,6}|[0-9]{1,7});/g, (ref, n: string) => {
    const code = n.startsWith('x') ? Number.parseInt(n.slice(1), 16) : Number(n);
    return code <= 0x10ffff ? String.fromCodePoint(code) : ref;
  });
}

const entry = (c: Config | undefined, key: string) => {
  const e = c?.entry?.find((x) => x.key === key);
  return e && { ...e, value: decode(e.value) };
};
const child = (c: Config | undefined, key: string) => c?.config?.find((x) => x.key === key);
/** Text for people: bounded, without controls or bidirectional overrides (tabs and line breaks kept). */
const text = (s: string | undefined) => withoutUnshown(s ?? '', true).slice(0, MAX_TEXT);

type Typed = { type: DeclaredType; value: string | number | boolean | null; range?: { minimum: number; maximum: number } };

function typed(type: string | undefined, value: string | undefined, isNull: boolean): Typed | null {
  if (type === 'xint' || type === 'xlong' || type === 'xshort') {
    const range = INTEGER_RANGES[type];
    return { type: 'integer', value: isNull ? null : integerValue(value, range), range };
  }
  if (type === 'xfloat') return { type: 'number', value: isNull ? null : numberValue(value, FLOAT_MAXIMUM), range: { minimum: -FLOAT_MAXIMUM, maximum: FLOAT_MAXIMUM } };
  if (type === 'xdouble') return { type: 'number', value: isNull ? null : numberValue(value) };
  if (type === 'xboolean') return { type: 'boolean', value: isNull || value === undefined ? null : value === 'true' };
  if (type === 'xstring' || type === 'xchar') return { type: 'string', value: isNull ? null : (value ?? '') };
  return null;
}

/** The declared parameter in one node's `settings.xml`, or null. */
export function parameterOfSettings(xml: string): DeclaredParameter | null {
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) return null;
  let root: Config | undefined;
  try {
    root = (parser.parse(xml) as { config?: Config[] }).config?.[0];
  } catch {
    return null;
  }
  const factory = entry(root, 'factory')?.value ?? '';
  if (!CONFIGURATION.test(factory)) return null;
  const model = child(root, 'model');
  const name = entry(model, 'parameterName')?.value ?? entry(model, 'flowVariableName')?.value ?? '';
  if (name === '' || name.length > 200 || hasUnshown(name) || FORBIDDEN_NAMES.has(name)) return null;
  const defaults = child(model, 'defaultValue') ?? child(model, 'currentValue');
  const first = defaults?.entry?.find((e) => typed(e.type, e.value, false) !== null);
  const raw = first ? typed(first.type, decode(first.value), first.isnull === 'true') : null;
  const value = raw && typeof raw.value === 'string' ? { ...raw, value: text(raw.value) } : raw;
  const choices = child(model, 'possibleChoices') ?? child(model, 'possibleValues');
  const listed = (choices?.entry ?? []).filter((e) => /^\d+$/.test(e.key ?? '') && e.value !== undefined).map((e) => text(decode(e.value)));
  return {
    name,
    type: value?.type ?? 'string',
    default: value?.value ?? null,
    label: text(entry(model, 'label')?.value),
    description: text(entry(model, 'description')?.value),
    ...(listed.length > 0 ? { choices: listed.slice(0, 500) } : {}),
    ...(raw?.range ?? {}),
  };
}

/**
 * The values a run takes: those given, and the declared default of each declared parameter given
 * no value (left out, or null). So `-workflow.variable=rows,{param.rows},int` gets the default
 * the workflow declares, whether the run came from the web form, the API, MCP, a schedule or a
 * re-run. A parameter declared without a default stays as given.
 */
export function withDeclaredDefaults(declared: DeclaredParameter[], given: Record<string, unknown>): Record<string, unknown> {
  const values: Record<string, unknown> = { ...given };
  for (const d of declared) {
    // Own values only: a name such as `toString` is no value given.
    if (d.default !== null && (!Object.hasOwn(values, d.name) || values[d.name] === null || values[d.name] === undefined)) values[d.name] = d.default;
  }
  return values;
}

/** What a value of `d` must be, for a message naming the range. */
function expected(d: DeclaredParameter): string {
  if (d.type === 'integer') {
    const r = { ...DEFAULT_INTEGER_RANGE, ...pick(d) };
    return `an integer from ${r.minimum} to ${r.maximum} (decimal digits)`;
  }
  if (d.type === 'number') return d.maximum === undefined ? 'a finite decimal number' : `a finite decimal number from ${d.minimum ?? -d.maximum} to ${d.maximum}`;
  return d.type === 'boolean' ? 'true or false' : 'text';
}

/** The recorded bounds of `d`, when they are numbers (stored rows are JSON: trust only what fits). */
function pick(d: DeclaredParameter): Partial<{ minimum: number; maximum: number }> {
  return {
    ...(typeof d.minimum === 'number' ? { minimum: d.minimum } : {}),
    ...(typeof d.maximum === 'number' ? { maximum: d.maximum } : {}),
  };
}

/** Whether `v` is a value of the declared parameter's type, within its range. */
export function fitsDeclared(d: DeclaredParameter, v: unknown): boolean {
  if (d.type === 'integer') return integerValue(v, { ...DEFAULT_INTEGER_RANGE, ...pick(d) }) !== null;
  if (d.type === 'number') return numberValue(v, pick(d).maximum) !== null;
  if (d.type === 'boolean') return typeof v === 'boolean' || v === 'true' || v === 'false';
  return true;
}

/** Why a run's value for a declared parameter does not fit its type, range or choices, one problem per parameter. */
export function parameterProblems(declared: DeclaredParameter[], values: Record<string, unknown>): { field: string; message: string }[] {
  const problems: { field: string; message: string }[] = [];
  for (const d of declared) {
    if (!Object.hasOwn(values, d.name)) continue;
    const v = values[d.name];
    if (v === null) continue;
    const s = String(v);
    if (!fitsDeclared(d, v)) problems.push({ field: `parameters/${d.name}`, message: `must be ${expected(d)}, as the workflow's configuration node declares` });
    else if (d.choices && !d.choices.includes(s)) problems.push({ field: `parameters/${d.name}`, message: `must be one of the workflow's choices: ${d.choices.slice(0, 10).join(', ')}${d.choices.length > 10 ? ', …' : ''}` });
  }
  return problems;
}

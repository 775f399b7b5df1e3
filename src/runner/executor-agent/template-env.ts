/**
 * What a command template's placeholders stand for, and how their values travel: each in an
 * environment variable of the command (never in the shell text), referred to by a reference that
 * expands to exactly the value (template.ts compiles templates with these).
 */

/** What a command template may refer to. */
export interface TemplateValues {
  archive: string;
  workDir: string;
  workflowDir: string;
  outDir: string;
  runId: string;
  attempt: string;
  parameters: Record<string, unknown>;
}

/** A template the executor refuses to start with; the message names the placeholder and why. */
export class TemplateError extends Error {}

/** The environment variable each simple placeholder's value travels in. */
export const SIMPLE: Record<string, { env: string; value: (v: TemplateValues) => string }> = {
  archive: { env: 'PIER_ARCHIVE', value: (v) => v.archive },
  workdir: { env: 'PIER_WORK_DIR', value: (v) => v.workDir },
  workflow: { env: 'PIER_WORKFLOW_DIR', value: (v) => v.workflowDir },
  out: { env: 'PIER_OUT_DIR', value: (v) => v.outDir },
  runId: { env: 'PIER_RUN_ID', value: (v) => v.runId },
  attempt: { env: 'PIER_ATTEMPT', value: (v) => v.attempt },
};

/**
 * The environment variable of a run parameter: `PIER_PARAM_<name>` when the name is a valid part
 * of a variable name, else `PIER_PARAMX_<hex of its UTF-8>` (names may hold any character).
 */
export function parameterEnvName(name: string): string {
  return /^[A-Za-z0-9_]+$/.test(name) ? `PIER_PARAM_${name}` : `PIER_PARAMX_${Buffer.from(name, 'utf8').toString('hex')}`;
}

/** Every placeholder's value, and every run parameter, as the command's environment. */
export function templateEnv(v: TemplateValues): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(v.parameters)) env[parameterEnvName(name)] = value === undefined || value === null ? '' : String(value);
  for (const s of Object.values(SIMPLE)) env[s.env] = s.value(v);
  return env;
}

export const PLACEHOLDER = /^\{([A-Za-z][A-Za-z0-9]*)(?:\.([^{}]+))?\}/;

/** The run parameters a template names (`{param.NAME}`): the executor sets the missing ones to ''. */
export function parameterNames(template: string): string[] {
  return [...new Set([...template.matchAll(/\{param\.([^{}]+)\}/g)].map((m) => m[1]!))];
}

/**
 * A shell reference to `env` that expands to exactly its value as (part of) one word, never
 * re-read as syntax, split or globbed, written the same wherever it stands: `${V+"$V"}` is one
 * quoted expansion unquoted (XCU 2.6.2: the word of `+` is expanded with its own quotes), inside
 * "…" (the inner quotes nest within `${…}`) and in a here-document body. So a misreading of the
 * surrounding quotes by these rules cannot split a value. The variable is always set (the
 * executor sets missing parameters to the empty string), so `+` always takes the word.
 */
export function reference(env: string): string {
  return `\${${env}+"$${env}"}`;
}

/** The environment variable of a placeholder, or a TemplateError for an unknown one. */
export function envOf(whole: string, key: string, param: string | undefined): string {
  if (key === 'param' && param !== undefined) return parameterEnvName(param);
  if (param === undefined && Object.hasOwn(SIMPLE, key)) return SIMPLE[key]!.env;
  throw new TemplateError(`unknown placeholder ${whole}; known: {archive} {workdir} {workflow} {out} {runId} {attempt} {param.NAME}`);
}


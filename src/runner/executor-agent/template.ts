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

/** Quotes a value for /bin/sh: it stays one word whatever it contains. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * Expands `{archive}`, `{workdir}`, `{workflow}`, `{out}`, `{runId}`, `{attempt}` and
 * `{param.NAME}` in a command template. Every value is shell-quoted: parameters come from users
 * and must never become shell syntax. An unknown placeholder is an error, a missing parameter is
 * the empty string.
 */
export function expandTemplate(template: string, v: TemplateValues): string {
  return template.replace(/\{([A-Za-z][A-Za-z0-9]*)(?:\.([^{}]+))?\}/g, (whole, key: string, param: string | undefined) => {
    if (key === 'param' && param !== undefined) {
      const value = v.parameters[param];
      return shellQuote(value === undefined || value === null ? '' : String(value));
    }
    const simple: Record<string, string> = {
      archive: v.archive,
      workdir: v.workDir,
      workflow: v.workflowDir,
      out: v.outDir,
      runId: v.runId,
      attempt: v.attempt,
    };
    const value = simple[key];
    if (value === undefined || param !== undefined) throw new Error(`unknown placeholder ${whole} in the command template`);
    return shellQuote(value);
  });
}

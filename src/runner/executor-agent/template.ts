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
const SIMPLE: Record<string, { env: string; value: (v: TemplateValues) => string }> = {
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

const PLACEHOLDER = /^\{([A-Za-z][A-Za-z0-9]*)(?:\.([^{}]+))?\}/;

/** Where a placeholder stands, as /bin/sh reads the template. */
type Context = 'code' | 'dq' | 'sq' | 'arith' | 'heredoc' | 'quoted-heredoc';

/** A shell reference to `env` that expands to exactly its value in `ctx`, never re-read as syntax. */
function reference(env: string, ctx: Context, where: string): string {
  switch (ctx) {
    case 'code':
      return `"\${${env}}"`;
    case 'dq':
    case 'heredoc':
      return `\${${env}}`;
    case 'sq':
      // Closes the single quotes, expands in double quotes, reopens: still one word.
      return `'"\${${env}}"'`;
    case 'arith':
      throw new TemplateError(`${where} stands inside $((…)): its value would be evaluated as arithmetic; compute with the variable instead`);
    case 'quoted-heredoc':
      throw new TemplateError(`${where} stands inside a here-document with a quoted delimiter, where nothing expands; leave the delimiter unquoted`);
  }
}

interface Frame {
  ctx: Context | 'paren' | 'backtick' | 'brace';
  depth: number;
}

/**
 * Compiles a command template for `/bin/sh -c`. Placeholders (`{archive}`, `{workdir}`,
 * `{workflow}`, `{out}`, `{runId}`, `{attempt}`, `{param.NAME}`) never put their values into the
 * shell text: each becomes a reference to an environment variable (`templateEnv`), written for
 * the quoting context it stands in (bare: `"${V}"`, inside "…" or an unquoted here-document:
 * `${V}`, inside '…': `'"${V}"'`), so the value arrives byte for byte as one word and is never
 * read as shell syntax. Refused: unknown placeholders, a placeholder right after a backslash,
 * inside `$((…))` or inside a here-document whose delimiter is quoted. `${…}` is the shell's own
 * parameter expansion, never a placeholder.
 */
export function compileTemplate(template: string): string {
  let out = '';
  const stack: Frame[] = [{ ctx: 'code', depth: 0 }];
  const heredocs: { delimiter: string; quoted: boolean; stripTabs: boolean }[] = [];
  const top = () => stack[stack.length - 1]!;
  /** The quoting that applies at the top of the stack (substitutions and braces inherit it). */
  const quoting = (): Context => {
    for (let k = stack.length - 1; k >= 0; k--) {
      const c = stack[k]!.ctx;
      if (c === 'paren' || c === 'backtick') return 'code';
      if (c !== 'brace') return c;
    }
    return 'code';
  };
  const placeholder = (at: number, ctx: Context): { text: string; length: number } | null => {
    const m = PLACEHOLDER.exec(template.slice(at));
    if (!m) return null;
    const [whole, key, param] = m as unknown as [string, string, string | undefined];
    const where = `the placeholder ${whole}`;
    let env: string;
    if (key === 'param' && param !== undefined) env = parameterEnvName(param);
    else if (param === undefined && Object.hasOwn(SIMPLE, key)) env = SIMPLE[key]!.env;
    else throw new TemplateError(`unknown placeholder ${whole}; known: {archive} {workdir} {workflow} {out} {runId} {attempt} {param.NAME}`);
    if ((ctx === 'heredoc' || ctx === 'quoted-heredoc') && at > 0 && template[at - 1] === '\\' && !escapedBackslash(template, at - 1)) {
      throw new TemplateError(`${where} follows a backslash; remove the backslash`);
    }
    return { text: reference(env, ctx, where), length: whole.length };
  };

  let i = 0;
  while (i < template.length) {
    const ch = template[i]!;
    const frame = top();
    const ctx = frame.ctx;

    if (ch === '{' && !(i > 0 && template[i - 1] === '$' && ctx !== 'sq')) {
      const p = placeholder(i, ctx === 'sq' ? 'sq' : ctx === 'arith' ? 'arith' : quoting());
      if (p) {
        out += p.text;
        i += p.length;
        continue;
      }
    }

    if (ctx === 'sq') {
      if (ch === "'") stack.pop();
      out += ch;
      i++;
      continue;
    }

    if (ch === '\\') {
      if (PLACEHOLDER.test(template.slice(i + 1))) throw new TemplateError(`the placeholder ${PLACEHOLDER.exec(template.slice(i + 1))![0]} follows a backslash; remove the backslash`);
      // An escaped character (or a line continuation) is literal: copied as it is.
      out += template.slice(i, i + 2);
      i += 2;
      continue;
    }

    if (ctx === 'arith') {
      if (ch === '(') frame.depth++;
      if (ch === ')' && frame.depth > 0) frame.depth--;
      else if (template.startsWith('))', i)) {
        stack.pop();
        out += '))';
        i += 2;
        continue;
      }
      out += ch;
      i++;
      continue;
    }

    if (ch === '$' && template.startsWith('$((', i)) {
      stack.push({ ctx: 'arith', depth: 0 });
      out += '$((';
      i += 3;
      continue;
    }
    if (ch === '$' && template[i + 1] === '(') {
      stack.push({ ctx: 'paren', depth: 0 });
      out += '$(';
      i += 2;
      continue;
    }
    if (ch === '$' && template[i + 1] === '{') {
      stack.push({ ctx: 'brace', depth: 0 });
      out += '${';
      i += 2;
      continue;
    }
    if (ch === '`') {
      if (ctx === 'backtick') stack.pop();
      else stack.push({ ctx: 'backtick', depth: 0 });
      out += ch;
      i++;
      continue;
    }
    if (ch === '"') {
      if (ctx === 'dq') stack.pop();
      else stack.push({ ctx: 'dq', depth: 0 });
      out += ch;
      i++;
      continue;
    }
    if (ctx === 'dq') {
      out += ch;
      i++;
      continue;
    }
    if (ctx === 'brace' && ch === '}') {
      stack.pop();
      out += ch;
      i++;
      continue;
    }
    if (ch === "'" && quoting() === 'code') {
      stack.push({ ctx: 'sq', depth: 0 });
      out += ch;
      i++;
      continue;
    }
    if (ctx === 'paren' && ch === '(') frame.depth++;
    if (ctx === 'paren' && ch === ')') {
      if (frame.depth === 0) stack.pop();
      else frame.depth--;
      out += ch;
      i++;
      continue;
    }
    if (ch === '#' && (i === 0 || /[\s;&|()<>]/.test(template[i - 1]!))) {
      // A comment runs to the end of the line: copied, placeholders included (never expanded).
      const end = template.indexOf('\n', i);
      const stop = end < 0 ? template.length : end;
      out += template.slice(i, stop);
      i = stop;
      continue;
    }
    if (ch === '<' && template.startsWith('<<', i) && template[i + 2] !== '<') {
      const m = /^<<(-?)([ \t]*)((?:[^\s;&|()<>'"\\]|\\.|'[^']*'|"[^"]*")+)/.exec(template.slice(i));
      if (m) {
        const word = m[3]!;
        heredocs.push({ delimiter: word.replace(/\\(.)|['"]/g, '$1'), quoted: /['"\\]/.test(word), stripTabs: m[1] === '-' });
        out += m[0];
        i += m[0].length;
        continue;
      }
    }
    if (ch === '\n' && heredocs.length) {
      out += ch;
      i++;
      // The bodies follow the line that announced them, one after another.
      for (const doc of heredocs.splice(0)) {
        while (i < template.length) {
          const end = template.indexOf('\n', i);
          const stop = end < 0 ? template.length : end + 1;
          const bare = template.slice(i, end < 0 ? template.length : end);
          if ((doc.stripTabs ? bare.replace(/^\t+/, '') : bare) === doc.delimiter) {
            out += template.slice(i, stop);
            i = stop;
            break;
          }
          // One line of the body; a placeholder (its name may hold a line break) is one unit.
          while (i < template.length) {
            const p = template[i] === '{' && template[i - 1] !== '$' ? placeholder(i, doc.quoted ? 'quoted-heredoc' : 'heredoc') : null;
            if (p) {
              out += p.text;
              i += p.length;
              continue;
            }
            out += template[i];
            if (template[i++] === '\n') break;
          }
        }
      }
      continue;
    }
    out += ch;
    i++;
  }
  return out;
}

/** Whether the backslash at `at` is itself escaped by an odd run of backslashes before it. */
function escapedBackslash(text: string, at: number): boolean {
  let n = 0;
  for (let k = at - 1; k >= 0 && text[k] === '\\'; k--) n++;
  return n % 2 === 1;
}

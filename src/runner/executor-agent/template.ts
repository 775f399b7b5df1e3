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

/** Stands for a placeholder inside a word being read (never a character of shell text). */
const MARK = '\u0000';

/** Programs that run their arguments as shell code: a value there would be read a second time. */
const RUNS_ARGUMENTS = new Set(['eval', 'trap', 'ssh', 'su']);
/** Interpreters whose `-c`/`-e` argument (or standard input, without a script) is code. */
const INTERPRETER = /^(?:sh|bash|dash|ash|ksh|mksh|zsh|busybox|python[0-9.]*|perl|ruby|node|php|Rscript)$/;
const CODE_OPTION = /^(?:-[A-Za-z]*[ce]|--eval|--command)$/;
/** awk's program and `-v` assignments both interpret text (code, escape sequences). */
const AWK = /^[gmn]?awk$/;
/** Where /bin/sh is bash, these evaluate their operands as arithmetic (`a[$(cmd)]` runs). */
const BASH_ARITHMETIC = new Set(['let', 'declare', 'typeset']);

type Ctx = 'code' | 'paren' | 'backtick' | 'dq' | 'sq' | 'brace' | 'arith';

interface Frame {
  ctx: Ctx;
  depth: number;
  /** Code frames (`code`, `paren`, `backtick`): the words of the simple command being read. */
  words: string[];
  word: string;
  /** Why this frame's text is read again as code by a program of an enclosing command. */
  reread: string | null;
}

const isCodeFrame = (f: Frame) => f.ctx === 'code' || f.ctx === 'paren' || f.ctx === 'backtick';
const baseName = (word: string) => word.slice(word.lastIndexOf('/') + 1);

/**
 * Why a placeholder in the current word of this simple command would be read as code again by
 * the program the command runs (or as arithmetic where /bin/sh is bash), or null.
 */
function secondReading(words: readonly string[], word: string): string | null {
  const names = words.map(baseName);
  const first = names.find((n) => !n.includes('=') && n !== '!' && n !== '{' && n !== 'then' && n !== 'do' && n !== 'else' && n !== 'time');
  if (first !== undefined && BASH_ARITHMETIC.has(first)) return `is an argument of ${first}, which evaluates it as arithmetic where /bin/sh is bash (a[$(cmd)] runs cmd)`;
  if (names.includes('[[') && !names.includes(']]')) return 'stands inside [[ … ]], which evaluates it as arithmetic where /bin/sh is bash (a[$(cmd)] runs cmd)';
  if (/^[A-Za-z_][A-Za-z0-9_]*\[[^\]]*$/.test(word)) return 'stands in an array subscript, which bash evaluates as arithmetic (a[$(cmd)] runs cmd)';
  const runner = names.find((n) => RUNS_ARGUMENTS.has(n) || (n === 'runuser' && names.some((w) => w === '-c' || w === '--command')));
  if (runner !== undefined) return `is an argument of ${runner}, which runs its arguments as shell code again`;
  const awk = names.find((n) => AWK.test(n));
  if (awk !== undefined) return `is an argument of ${awk}, which reads its program and -v values as code; use ENVIRON["…"] in the program instead`;
  const interpreter = names.findIndex((n) => INTERPRETER.test(n));
  const last = names.length - 1;
  if (interpreter >= 0 && last > interpreter && CODE_OPTION.test(names[last]!)) {
    return `is the code argument of ${names[interpreter]} ${names[last]}, which runs it as code; pass values as arguments after it ("$1") or read them from the environment`;
  }
  return null;
}

/** Why a here-document given to this command is read as code (an interpreter reading its standard input), or null. */
function readsInputAsCode(words: readonly string[]): string | null {
  const names = words.map(baseName);
  const runner = names.find((n) => RUNS_ARGUMENTS.has(n));
  if (runner !== undefined) return `is in a here-document given to ${runner}, which runs it as code`;
  const interpreter = names.findIndex((n) => INTERPRETER.test(n));
  if (interpreter >= 0 && names.slice(interpreter + 1).every((n) => n.startsWith('-'))) return `is in a here-document that ${names[interpreter]} reads as code`;
  return null;
}

/** A shell reference to `env` that expands to exactly its value, never re-read as syntax. */
function reference(env: string, quoted: boolean): string {
  return quoted ? `\${${env}}` : `"\${${env}}"`;
}

const ADVICE = 'write "$PIER_PARAM_<name>" (or $PIER_OUT_DIR …) there yourself, so that the program reading the text again takes the value from the environment';

/**
 * Compiles a command template for `/bin/sh -c`. Placeholders (`{archive}`, `{workdir}`,
 * `{workflow}`, `{out}`, `{runId}`, `{attempt}`, `{param.NAME}`) never put their values into the
 * shell text: each becomes a reference to an environment variable (`templateEnv`), written for
 * the quoting it stands in (bare: `"${V}"`, inside "…" or an unquoted here-document: `${V}`), so
 * the value arrives byte for byte as (part of) one word and is never read as shell syntax.
 *
 * A value must not reach any second reading either, so the template is refused (naming the
 * placeholder and why) where text is passed on to be read again or evaluated: inside '…' (the
 * text is handed on as it is, typically to `sh -c`, `trap`, `awk` or `ssh`), in the code argument
 * of `sh -c`, `bash -c`, `python -c`, `perl -e`, …, in the arguments of `eval`, `trap`, `ssh`,
 * `su`, `runuser -c` and `awk`, in a here-document an interpreter reads as code, in arithmetic
 * (`$((…))`, `((…))`, `[[ … ]]`, `let`, `declare`, array subscripts: bash evaluates `a[$(cmd)]`
 * there), inside `${…}` (patterns and offsets), in a substitution inside a here-document, after a
 * backslash, and in a here-document whose delimiter is quoted (nothing expands there). Unknown
 * placeholders are refused too. `${…}` is the shell's own parameter expansion, never a placeholder.
 */
export function compileTemplate(template: string): string {
  let out = '';
  const frame = (ctx: Ctx, reread: string | null): Frame => ({ ctx, depth: 0, words: [], word: '', reread });
  const stack: Frame[] = [frame('code', null)];
  const heredocs: { delimiter: string; quoted: boolean; stripTabs: boolean; reread: string | null }[] = [];
  const top = () => stack[stack.length - 1]!;
  /** The innermost simple command being read. */
  const command = (): Frame => {
    for (let k = stack.length - 1; k > 0; k--) if (isCodeFrame(stack[k]!)) return stack[k]!;
    return stack[0]!;
  };
  /** Why text in the current word would be read a second time (here, or by an enclosing command). */
  const rereadHere = (): string | null => {
    const c = command();
    return c.reread ?? secondReading(c.words, c.word);
  };
  const endWord = () => {
    const c = command();
    if (c.word !== '') c.words.push(c.word);
    c.word = '';
  };
  const endCommand = () => {
    const c = command();
    c.words = [];
    c.word = '';
  };
  const refuse = (whole: string, why: string): never => {
    throw new TemplateError(`the placeholder ${whole} ${why}`);
  };
  const placeholder = (at: number): { text: string; length: number } | null => {
    const m = PLACEHOLDER.exec(template.slice(at));
    if (!m) return null;
    const [whole, key, param] = m as unknown as [string, string, string | undefined];
    let env: string;
    if (key === 'param' && param !== undefined) env = parameterEnvName(param);
    else if (param === undefined && Object.hasOwn(SIMPLE, key)) env = SIMPLE[key]!.env;
    else throw new TemplateError(`unknown placeholder ${whole}; known: {archive} {workdir} {workflow} {out} {runId} {attempt} {param.NAME}`);
    for (let k = stack.length - 1; k >= 0 && !isCodeFrame(stack[k]!); k--) {
      const ctx = stack[k]!.ctx;
      if (ctx === 'sq') refuse(whole, `stands inside '…': that text is handed on as it is, usually to a program that reads it as code (sh -c, trap, awk, ssh); ${ADVICE}, or put the placeholder outside the quotes`);
      if (ctx === 'arith') refuse(whole, 'stands inside $((…)) or ((…)): its value would be evaluated as arithmetic; compute with the variable instead');
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, not a JavaScript template
      if (ctx === 'brace') refuse(whole, 'stands inside ${…}, where it would be a pattern or an arithmetic offset; assign it to a variable first');
    }
    const why = rereadHere();
    if (why !== null) refuse(whole, `${why}; ${ADVICE}`);
    command().word += MARK;
    return { text: reference(env, top().ctx === 'dq'), length: whole.length };
  };

  let i = 0;
  while (i < template.length) {
    const ch = template[i]!;
    const f = top();
    const ctx = f.ctx;
    const code = isCodeFrame(f);

    if (ch === '{' && !(i > 0 && template[i - 1] === '$' && ctx !== 'sq')) {
      const p = placeholder(i);
      if (p) {
        out += p.text;
        i += p.length;
        continue;
      }
    }

    if (ctx === 'sq') {
      if (ch === "'") stack.pop();
      else command().word += ch;
      out += ch;
      i++;
      continue;
    }

    if (ch === '\\') {
      if (PLACEHOLDER.test(template.slice(i + 1))) throw new TemplateError(`the placeholder ${PLACEHOLDER.exec(template.slice(i + 1))![0]} follows a backslash; remove the backslash`);
      // An escaped character (or a line continuation) is literal: copied as it is.
      if (template[i + 1] !== '\n') command().word += template[i + 1] ?? '';
      out += template.slice(i, i + 2);
      i += 2;
      continue;
    }

    if (ctx === 'arith') {
      if (ch === '(') f.depth++;
      if (ch === ')' && f.depth > 0) f.depth--;
      else if (template.startsWith('))', i)) {
        stack.pop();
        command().word += '))';
        out += '))';
        i += 2;
        continue;
      }
      out += ch;
      i++;
      continue;
    }

    if (ch === '$' && template.startsWith('$((', i)) {
      stack.push(frame('arith', null));
      command().word += '$((';
      out += '$((';
      i += 3;
      continue;
    }
    if (ch === '$' && template[i + 1] === '(') {
      command().word += '$(';
      stack.push(frame('paren', rereadHere()));
      out += '$(';
      i += 2;
      continue;
    }
    if (ch === '$' && template[i + 1] === '{') {
      command().word += '${';
      stack.push(frame('brace', null));
      out += '${';
      i += 2;
      continue;
    }
    if (ch === '`') {
      if (ctx === 'backtick') stack.pop();
      else {
        command().word += '`';
        stack.push(frame('backtick', rereadHere()));
      }
      out += ch;
      i++;
      continue;
    }
    if (ch === '"') {
      if (ctx === 'dq') stack.pop();
      else stack.push(frame('dq', null));
      out += ch;
      i++;
      continue;
    }
    if (ctx === 'dq') {
      command().word += ch;
      out += ch;
      i++;
      continue;
    }
    if (ctx === 'brace') {
      if (ch === '}') stack.pop();
      if (ch === "'" && !stack.some((s) => s.ctx === 'dq')) stack.push(frame('sq', null));
      command().word += ch;
      out += ch;
      i++;
      continue;
    }
    // From here on: unquoted shell text of a command (`code`, `$(…)` or `` `…` ``).
    if (ch === "'") {
      stack.push(frame('sq', null));
      out += ch;
      i++;
      continue;
    }
    if (ch === '(' && command().word === '' && template[i + 1] === '(') {
      // `((…))`: bash's arithmetic command.
      stack.push(frame('arith', null));
      out += '((';
      i += 2;
      continue;
    }
    if (ch === ')' && ctx === 'paren') {
      if (f.depth === 0) {
        stack.pop();
        command().word += ')';
      } else {
        f.depth--;
        endCommand();
      }
      out += ch;
      i++;
      continue;
    }
    if (ch === '(' || ch === ')') {
      if (ctx === 'paren' && ch === '(') f.depth++;
      endCommand();
      out += ch;
      i++;
      continue;
    }
    if (ch === '#' && code && command().word === '') {
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
        const c = command();
        const reread = c.reread ?? readsInputAsCode([...c.words, ...(c.word === '' ? [] : [c.word])]);
        heredocs.push({ delimiter: word.replace(/\\(.)|['"]/g, '$1'), quoted: /['"\\]/.test(word), stripTabs: m[1] === '-', reread });
        endWord();
        out += m[0];
        i += m[0].length;
        continue;
      }
    }
    if (ch === ' ' || ch === '\t') {
      endWord();
      out += ch;
      i++;
      continue;
    }
    if (ch === ';' || ch === '&' || ch === '|' || ch === '\n') {
      endCommand();
      out += ch;
      i++;
      if (ch === '\n' && heredocs.length) {
        // The bodies follow the line that announced them, one after another.
        const bodies = heredocBodies(template, i, heredocs.splice(0));
        out += bodies.text;
        i = bodies.end;
      }
      continue;
    }
    command().word += ch;
    out += ch;
    i++;
  }
  return out;
}

/**
 * Copies here-document bodies from `start`, each placeholder replaced by its reference. The body
 * of an unquoted here-document expands like "…", but a substitution inside it (`$(…)`, `` `…` ``,
 * `$((…))`, `${…}`) is shell code of its own: a placeholder there is refused rather than guessed.
 */
function heredocBodies(template: string, start: number, docs: { delimiter: string; quoted: boolean; stripTabs: boolean; reread: string | null }[]): { text: string; end: number } {
  let out = '';
  let i = start;
  for (const doc of docs) {
    let nesting = 0;
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
        const ch = template[i]!;
        const m = ch === '{' && template[i - 1] !== '$' ? PLACEHOLDER.exec(template.slice(i)) : null;
        if (m) {
          const whole = m[0];
          const [, key, param] = m as unknown as [string, string, string | undefined];
          let env: string;
          if (key === 'param' && param !== undefined) env = parameterEnvName(param);
          else if (param === undefined && Object.hasOwn(SIMPLE, key)) env = SIMPLE[key]!.env;
          else throw new TemplateError(`unknown placeholder ${whole}; known: {archive} {workdir} {workflow} {out} {runId} {attempt} {param.NAME}`);
          if (doc.quoted) throw new TemplateError(`the placeholder ${whole} stands inside a here-document with a quoted delimiter, where nothing expands; leave the delimiter unquoted`);
          if (template[i - 1] === '\\' && !escapedBackslash(template, i - 1)) throw new TemplateError(`the placeholder ${whole} follows a backslash; remove the backslash`);
          if (doc.reread !== null) throw new TemplateError(`the placeholder ${whole} ${doc.reread}; ${ADVICE}`);
          if (nesting > 0) throw new TemplateError(`the placeholder ${whole} stands inside $(…), \`…\`, $((…)) or \${…} in a here-document; ${ADVICE}`);
          out += `\${${env}}`;
          i += whole.length;
          continue;
        }
        if (!doc.quoted) {
          if (ch === '\\') {
            out += template.slice(i, i + 2);
            i += 2;
            continue;
          }
          if (ch === '$' && (template[i + 1] === '(' || template[i + 1] === '{')) nesting++;
          else if (ch === '`') nesting = nesting > 0 ? nesting - 1 : 1;
          else if ((ch === ')' || ch === '}') && nesting > 0) nesting--;
        }
        out += ch;
        i++;
        if (ch === '\n') break;
      }
    }
  }
  return { text: out, end: i };
}

/** Whether the backslash at `at` is itself escaped by an odd run of backslashes before it. */
function escapedBackslash(text: string, at: number): boolean {
  let n = 0;
  for (let k = at - 1; k >= 0 && text[k] === '\\'; k--) n++;
  return n % 2 === 1;
}

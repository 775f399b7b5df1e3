import { baseName, MARK, OP, readsInputAsCode, runsCode, secondReading } from './code-arguments.js';
import { envOf, PLACEHOLDER, reference, SIMPLE, TemplateError } from './template-env.js';
import { operandReading } from './template-operands.js';
import { unmodelled } from './template-unmodelled.js';

export { parameterEnvName, parameterNames, TemplateError, type TemplateValues, templateEnv } from './template-env.js';

type Ctx = 'code' | 'paren' | 'backtick' | 'dq' | 'sq' | 'brace' | 'arith';

/** A placeholder in a word of a simple command, checked once the command's words are all known. */
interface Pending {
  whole: string;
  at: number;
  offset: number;
  param: boolean;
}

interface Heredoc {
  delimiter: string;
  quoted: boolean;
  stripTabs: boolean;
  /** Why the body is read as code; undefined until the command it belongs to is complete. */
  reread: string | null | undefined;
}

interface Frame {
  ctx: Ctx;
  depth: number;
  /** `arith` frames: what ends them (`))` or bash's `]` of `$[…]`). */
  close: string;
  /** Code frames (`code`, `paren`, `backtick`): the words of the simple command being read (redirection operators as OP tokens). */
  words: string[];
  word: string;
  pending: Pending[];
  docs: Heredoc[];
  /** Compound commands open in this frame (XCU 2.9.4): whether any command in them runs code. */
  compounds: { kind: string; code: boolean }[];
  /** A `( … )` just closed whose commands run code: a here-document given to it is code. */
  closedCode: boolean;
}

const isCodeFrame = (f: Frame) => f.ctx === 'code' || f.ctx === 'paren' || f.ctx === 'backtick';
const OPENERS = new Set(['{', 'if', 'while', 'until', 'for', 'case', 'select']);
const CLOSERS: Record<string, string[]> = { '}': ['{'], fi: ['if'], done: ['while', 'until', 'for', 'select'], esac: ['case'] };

/** Why a run parameter after a substitution in a here-document body is refused. */
const BODY_SUBSTITUTION =
  'follows a command substitution ($(…) or backquotes) inside a here-document, where a comment or a nested here-document can end the substitution elsewhere than these rules see; move the substitution out of the here-document (x=$(…) before it, then $x)';

const ADVICE = 'write "$PIER_PARAM_<name>" (or $PIER_OUT_DIR …) there yourself, so that the program reading the text again takes the value from the environment';

/**
 * Variables the template gives bash's integer attribute (`declare -i n`, `typeset -i`, `local
 * -i`, `export -i`): bash evaluates every value assigned to them as arithmetic, wherever the
 * assignment stands (`read n` too), so no run parameter may appear in such a template.
 */
function integerVariables(template: string): string[] {
  const names: string[] = [];
  for (const m of template.matchAll(/(?:^|[\s;&|(`{])(?:declare|typeset|local|export|readonly)((?:[ \t]+[^\s;&|()<>]+)*)/g)) {
    const words = m[1]!.trim().split(/[ \t]+/);
    if (!words.some((w) => /^[-+][A-Za-z]*i/.test(w))) continue;
    for (const w of words) if (!/^[-+]/.test(w) && /^[A-Za-z_]/.test(w)) names.push(/^[A-Za-z_][A-Za-z0-9_]*/.exec(w)![0]);
  }
  return names;
}

/**
 * Compiles a command template for the executor's shell (`sh -c`). Placeholders (`{archive}`,
 * `{workdir}`, `{workflow}`, `{out}`, `{runId}`, `{attempt}`, `{param.NAME}`) never put their
 * values into the shell text: each becomes a reference to an environment variable
 * (`templateEnv`), written for the quoting it stands in (bare: `"${V}"`, inside "…" or an
 * unquoted here-document: `${V}`), so the value arrives byte for byte as (part of) one word and
 * is never read as shell syntax (XCU 2.6: the result of a parameter expansion is not parsed
 * again; inside "…" it is not even split or globbed).
 *
 * That holds for the executor's shell by construction. A value must not reach a second reading
 * either (a program that reads an argument as code), and that is a best-effort check: each
 * simple command (XCU 2.9.1) is split into words, and once all its words are known, a
 * placeholder is refused (naming it and why) where code-arguments.ts finds a second reading:
 * the code argument of a shell or interpreter wherever it stands, every argument of eval, trap,
 * ssh, su, awk …, the command a wrapper runs (timeout, sudo, env, xargs, flock -c …), a
 * here-document or here-string read by a shell or interpreter, and where a run parameter would
 * choose what runs (the program, a script, an interpreter's options). Also refused: inside '…'
 * (the text is handed on as it is, typically to `sh -c`), in arithmetic (`$((…))`, bash's
 * `((…))`, `$[…]`, `[[ … ]]`, `let`, `declare`, array subscripts: bash evaluates `a[$(cmd)]`
 * there), inside `${…}` (patterns and offsets), in a substitution inside a here-document, after
 * a backslash, and in a here-document whose delimiter is quoted (nothing expands there). Unknown
 * placeholders are refused too. `${…}` is the shell's own parameter expansion, never a placeholder.
 */
export function compileTemplate(template: string): string {
  let out = '';
  const frame = (ctx: Ctx, close = ''): Frame => ({ ctx, depth: 0, close, words: [], word: '', pending: [], docs: [], compounds: [], closedCode: false });
  const stack: Frame[] = [frame('code')];
  /** Here-documents announced on the current line, in order: their bodies follow the next newline. */
  const heredocs: Heredoc[] = [];
  const integers = integerVariables(template);
  let aliases = false;
  let firstParam: string | null = null;
  /** A here-document body held `$(…)` or backquotes: where it ends is a guess from here on. */
  let substitutedBody = false;
  const top = () => stack[stack.length - 1]!;
  /** The innermost simple command being read. */
  const command = (): Frame => {
    for (let k = stack.length - 1; k > 0; k--) if (isCodeFrame(stack[k]!)) return stack[k]!;
    return stack[0]!;
  };
  const codeFrames = () => stack.filter(isCodeFrame);
  const endWord = () => {
    const c = command();
    if (c.word !== '') c.words.push(c.word);
    c.word = '';
  };
  const refuse = (whole: string, why: string): never => {
    throw new TemplateError(`the placeholder ${whole} ${why}`);
  };
  /**
   * The end of a simple command of frame `c`: its compound commands, its here-documents and its
   * placeholders are decided now that all its words are known (a redirection or a here-string may
   * stand before the program: XCU 2.9.1).
   */
  const finish = (c: Frame) => {
    if (c.word !== '') c.words.push(c.word);
    c.word = '';
    const words = c.words;
    let closed = c.closedCode;
    for (const w of words) {
      if (w.startsWith(OP)) continue;
      if (OPENERS.has(w)) c.compounds.push({ kind: w, code: false });
      else if (Object.hasOwn(CLOSERS, w)) {
        const k = c.compounds.map((x) => x.kind).lastIndexOf(CLOSERS[w]!.find((o) => c.compounds.some((x) => x.kind === o)) ?? '');
        if (k >= 0) closed = c.compounds.splice(k).some((x) => x.code) || closed;
      } else if (!['then', 'do', 'else', 'elif', '!'].includes(w)) break;
    }
    if (runsCode(words)) for (const f of codeFrames()) for (const x of f.compounds) x.code = true;
    const found = words.filter((w) => !w.startsWith(OP));
    if (found.length > 0 && baseName(found[0]!) === 'alias') aliases = true;
    for (const doc of c.docs) {
      const reads = readsInputAsCode(words);
      doc.reread = closed ? 'is in a here-document given to a compound command that runs a shell or an interpreter' : reads !== null ? `is in a here-document that ${reads} reads as code` : null;
    }
    for (const p of c.pending) {
      const found = secondReading(words, p.at, p.offset);
      const r = found?.kind === 'operand' ? operandReading(found.code, found.why, compileTemplate) : found;
      if (r !== null && (r.kind === 'code' || p.param)) refuse(p.whole, `${r.why}; ${ADVICE}`);
    }
    c.words = [];
    c.pending = [];
    c.docs = [];
    c.closedCode = false;
  };
  /** A placeholder of any kind: refused where it stands, or noted for the commands around it. */
  const note = (whole: string, param: boolean, heredoc: boolean) => {
    if (param) firstParam ??= whole;
    if (param && integers.length > 0) refuse(whole, `stands in a template that gives ${integers.join(', ')} the integer attribute, and bash evaluates every value assigned to those as arithmetic (a[$(cmd)] runs cmd); ${ADVICE}`);
    // The word it stands in, and each word around it that holds it in a substitution.
    const frames = codeFrames();
    for (const f of heredoc ? frames.slice(0, -1) : frames) f.pending.push({ whole, at: f.words.length, offset: f.word.length, param });
  };
  const placeholder = (at: number): { text: string; length: number } | null => {
    const m = PLACEHOLDER.exec(template.slice(at));
    if (!m) return null;
    const [whole, key, param] = m as unknown as [string, string, string | undefined];
    // Inside '…' braces that name no placeholder are the text's own (awk '{print}', jq '{name}').
    const known = key === 'param' ? param !== undefined : param === undefined && Object.hasOwn(SIMPLE, key);
    if (!known && top().ctx === 'sq') return null;
    const env = envOf(whole, key, param);
    for (let k = stack.length - 1; k >= 0 && !isCodeFrame(stack[k]!); k--) {
      const ctx = stack[k]!.ctx;
      if (ctx === 'sq') refuse(whole, `stands inside '…': that text is handed on as it is, usually to a program that reads it as code (sh -c, trap, awk, ssh); ${ADVICE}, or put the placeholder outside the quotes`);
      if (ctx === 'arith') refuse(whole, 'stands inside $((…)), $[…] or ((…)): its value would be evaluated as arithmetic; compute with the variable instead');
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, not a JavaScript template
      if (ctx === 'brace') refuse(whole, 'stands inside ${…}, where it would be a pattern or an arithmetic offset; assign it to a variable first');
    }
    if (key === 'param' && substitutedBody) refuse(whole, BODY_SUBSTITUTION);
    note(whole, key === 'param', false);
    command().word += MARK;
    return { text: reference(env), length: whole.length };
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
      // An escaped character is literal (quote removal keeps it); a line continuation is nothing (XCU 2.2.1).
      if (template[i + 1] !== '\n') command().word += template[i + 1] ?? '';
      out += template.slice(i, i + 2);
      i += 2;
      continue;
    }

    if (ctx === 'arith') {
      // Nesting counts the brackets of the closing kind: `((`…`))` or bash's `$[`…`]`.
      const [open, shut] = f.close === ']' ? ['[', ']'] : ['(', ')'];
      if (ch === open) f.depth++;
      if (ch === shut && f.depth > 0) f.depth--;
      else if (template.startsWith(f.close, i)) {
        stack.pop();
        command().word += f.close;
        out += f.close;
        i += f.close.length;
        continue;
      }
      out += ch;
      i++;
      continue;
    }

    if (ch === '$' && template.startsWith('$((', i)) {
      stack.push(frame('arith', '))'));
      command().word += '$((';
      out += '$((';
      i += 3;
      continue;
    }
    if (ch === '$' && template[i + 1] === '[') {
      // bash's old arithmetic expansion `$[…]` (dash leaves it as text: refusing costs nothing).
      stack.push(frame('arith', ']'));
      command().word += '$[';
      out += '$[';
      i += 2;
      continue;
    }
    if (ch === '$' && template[i + 1] === '(') {
      command().word += '$(';
      stack.push(frame('paren'));
      out += '$(';
      i += 2;
      continue;
    }
    if (ch === '$' && template[i + 1] === '{') {
      command().word += '${';
      stack.push(frame('brace'));
      out += '${';
      i += 2;
      continue;
    }
    if (ch === '`') {
      if (ctx === 'backtick') {
        finish(f);
        stack.pop();
      } else {
        command().word += '`';
        stack.push(frame('backtick'));
      }
      out += ch;
      i++;
      continue;
    }
    if (ch === '"') {
      if (ctx === 'dq') stack.pop();
      else stack.push(frame('dq'));
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
      if (ch === "'" && !stack.some((s) => s.ctx === 'dq')) stack.push(frame('sq'));
      command().word += ch;
      out += ch;
      i++;
      continue;
    }
    // From here on: unquoted shell text of a command (`code`, `$(…)` or `` `…` ``).
    if (ch === "'") {
      stack.push(frame('sq'));
      out += ch;
      i++;
      continue;
    }
    if (ch === '(' && command().word === '' && template[i + 1] === '(') {
      // `((…))`: bash's arithmetic command.
      stack.push(frame('arith', '))'));
      out += '((';
      i += 2;
      continue;
    }
    if (ch === ')' && ctx === 'paren' && f.depth === 0) {
      finish(f);
      stack.pop();
      command().word += ')';
      out += ch;
      i++;
      continue;
    }
    if (ch === '(' || ch === ')') {
      const c = command();
      finish(c);
      if (ch === '(') {
        if (ctx === 'paren') f.depth++;
        c.compounds.push({ kind: '(', code: false });
      } else {
        if (ctx === 'paren') f.depth--;
        // A subshell `( … )` closes (a case pattern's `)` closes nothing).
        if (c.compounds.at(-1)?.kind === '(') c.closedCode = c.compounds.pop()!.code;
      }
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
    if (ch === '<' || ch === '>' || (ch === '&' && template[i + 1] === '>')) {
      // A redirection operator (XCU 2.7), with the IO number or bash's {name} before it. `<<<`
      // is bash's here-string (its target is a word), `<<` and `<<-` here-documents.
      const c = command();
      let io = '';
      if (/^[0-9]+$/.test(c.word) || /^\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(c.word)) {
        io = c.word;
        c.word = '';
      } else endWord();
      const doc = template.startsWith('<<<', i) ? null : /^<<(-?)([ \t]*)((?:[^ \t\n;&|()<>'"\\]|\\.|'[^']*'|"[^"]*")+)/.exec(template.slice(i));
      if (doc) {
        const word = doc[3]!;
        const entry: Heredoc = { delimiter: word.replace(/\\(.)|['"]/g, '$1'), quoted: /['"\\]/.test(word), stripTabs: doc[1] === '-', reread: undefined };
        heredocs.push(entry);
        c.docs.push(entry);
        c.words.push(`${OP}${io}<<`);
        out += doc[0];
        i += doc[0].length;
        continue;
      }
      const op = /^(?:<<<|<<-|<<|<&|<>|<|>>|>&|>\||>|&>>|&>)/.exec(template.slice(i))![0];
      c.words.push(`${OP}${io}${op}`);
      out += op;
      i += op.length;
      continue;
    }
    if (ch === ' ' || ch === '\t') {
      endWord();
      out += ch;
      i++;
      continue;
    }
    if (ch === ';' || ch === '&' || ch === '|' || ch === '\n') {
      finish(command());
      out += ch;
      i++;
      if (ch === '\n' && heredocs.length) {
        // The bodies follow the line that announced them, one after another (XCU 2.7.4).
        const bodies = heredocBodies(template, i, heredocs.splice(0), (whole, param) => note(whole, param, true), substitutedBody);
        out += bodies.text;
        i = bodies.end;
        substitutedBody ||= bodies.substituted;
      }
      continue;
    }
    command().word += ch;
    out += ch;
    i++;
  }
  for (let k = stack.length - 1; k >= 0; k--) if (isCodeFrame(stack[k]!)) finish(stack[k]!);
  if (aliases && firstParam !== null) refuse(firstParam, 'stands in a template that defines an alias, which can make any command name run a shell: run parameters cannot be checked there; use a function or write the command out');
  // Found in the raw text too: a mis-read quoting may have hidden the placeholder from the walk.
  const param = firstParam ?? /\{param\.[^{}]*\}/.exec(template)?.[0] ?? null;
  const odd = param === null ? null : unmodelled(template);
  if (odd !== null) refuse(param!, `stands in a template that holds ${odd}, which these rules do not follow word for word, so they cannot tell where the value goes; ${ADVICE}`);
  return out;
}

/**
 * Copies here-document bodies from `start`, each placeholder replaced by its reference. The body
 * of an unquoted here-document expands like "…" (XCU 2.7.4), but a substitution inside it
 * (`$(…)`, `` `…` ``, `$((…))`, `${…}`, `$[…]`) is shell code of its own: a placeholder there is
 * refused rather than guessed. The nesting is a stack of closing characters, so `$(( (1) + x ))`
 * stays open until its own `))`.
 */
function heredocBodies(
  template: string,
  start: number,
  docs: Heredoc[],
  note: (whole: string, param: boolean) => void,
  substitutedBefore: boolean,
): { text: string; end: number; substituted: boolean } {
  let out = '';
  let i = start;
  let substituted = substitutedBefore;
  for (const doc of docs) {
    const closers: string[] = [];
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
          const env = envOf(whole, key, param);
          if (doc.quoted) throw new TemplateError(`the placeholder ${whole} stands inside a here-document with a quoted delimiter, where nothing expands; leave the delimiter unquoted`);
          if (template[i - 1] === '\\' && !escapedBackslash(template, i - 1)) throw new TemplateError(`the placeholder ${whole} follows a backslash; remove the backslash`);
          if (doc.reread === undefined) throw new TemplateError(`the placeholder ${whole} stands in a here-document whose command could not be read; ${ADVICE}`);
          if (doc.reread !== null) throw new TemplateError(`the placeholder ${whole} ${doc.reread}; ${ADVICE}`);
          if (closers.length > 0) throw new TemplateError(`the placeholder ${whole} stands inside $(…), \`…\`, $((…)), $[…] or \${…} in a here-document; ${ADVICE}`);
          if (key === 'param' && substituted) throw new TemplateError(`the placeholder ${whole} ${BODY_SUBSTITUTION}`);
          note(whole, key === 'param');
          out += reference(env);
          i += whole.length;
          continue;
        }
        if (!doc.quoted) {
          const inner = closers.at(-1);
          if (inner === "'") {
            // '…' inside a substitution: nothing in it opens or closes anything (a placeholder there is still refused above).
            if (ch === "'") closers.pop();
            out += ch;
            i++;
            if (ch === '\n') break;
            continue;
          }
          if (inner !== undefined && inner !== '"' && ch === "'") {
            closers.push("'");
            out += ch;
            i++;
            continue;
          }
          if (ch === '\\') {
            out += template.slice(i, i + 2);
            i += 2;
            continue;
          }
          if (ch === '$' && (template[i + 1] === '(' || template[i + 1] === '{' || template[i + 1] === '[')) {
            // `$((` is arithmetic; a command substitution inside it is seen at its own `$(`.
            if (template[i + 1] === '(' && template[i + 2] !== '(') substituted = true;
            closers.push(template[i + 1] === '(' ? ')' : template[i + 1] === '{' ? '}' : ']');
            out += template.slice(i, i + 2);
            i += 2;
            continue;
          }
          if (ch === '`') {
            substituted = true;
            if (inner === '`') closers.pop();
            else closers.push('`');
          } else if (inner !== undefined && ch === inner) closers.pop();
          else if (inner !== undefined && inner !== '"' && ch === '"') closers.push('"');
          else if (inner !== undefined && inner !== '"' && (ch === '(' || ch === '[' || ch === '{')) closers.push(ch === '(' ? ')' : ch === '[' ? ']' : '}');
        }
        out += ch;
        i++;
        if (ch === '\n') break;
      }
    }
  }
  return { text: out, end: i, substituted };
}

/** Whether the backslash at `at` is itself escaped by an odd run of backslashes before it. */
function escapedBackslash(text: string, at: number): boolean {
  let n = 0;
  for (let k = at - 1; k >= 0 && text[k] === '\\'; k--) n++;
  return n % 2 === 1;
}

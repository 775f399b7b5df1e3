/**
 * Which words of a simple command another program reads again as code: the tables of shells and
 * of programs that run their arguments, and the walk over one command's words (after the template compiler
 * has split it: quotes removed, each placeholder a MARK, each redirection operator a token
 * starting with OP). This is a best-effort check of second readings: the executor's own shell
 * never reads a value as syntax (see template.ts); a program not listed here that evaluates an
 * argument is not seen. Interpreters are in code-interpreters.ts, wrappers and container tools in
 * code-wrappers.ts, other programs with code options in code-options.ts.
 */

import { type Interpreter, interpreterOf } from './code-interpreters.js';
import { OPTION_PROGRAMS, fromOptions } from './code-options.js';
import { MARK, OP, type Reason } from './code-words.js';
import { RUNNERS, WRAPPERS, type Wrapper } from './code-wrappers.js';

export { MARK, OP, type Reason } from './code-words.js';

/** Shells: `-c` (alone or in a cluster such as -ec, -lc) makes the first operand the code (XCU `sh`, OPERANDS). */
const SHELL = /^(?:sh|bash|rbash|dash|ash|ksh|ksh93|mksh|lksh|pdksh|oksh|zsh|yash|posh|bosh|fish|csh|tcsh)(?:[0-9][0-9.]*)?$/;
/** Shell options that take a value (the next word): -o errexit, +o, bash's -O shopt, --rcfile FILE. */
const SHELL_VALUE_LETTERS = 'oO';
const SHELL_VALUE_LONG = new Set(['--rcfile', '--init-file']);

/** Programs whose every argument is shell code (or becomes a shell command line): none may hold a placeholder. */
const RUNS_ARGUMENTS = new Set(['eval', 'trap', 'ssh', 'rsh', 'mosh', 'su', 'sg', 'watch', 'parallel', 'tmux', 'screen', 'dtach', 'at', 'batch']);
/** Programs that read their standard input as commands to run later or elsewhere. */
const STDIN_RUNS = new Set(['at', 'batch', 'crontab', 'ssh', 'su', 'sg', 'tmux', 'screen']);
/** awk's program and `-v` assignments both interpret text (code, escape sequences). */
const AWK = /^(?:[gmn]?awk|busybox-awk)$/;
/** Where /bin/sh is bash, these evaluate their operands as arithmetic (`a[$(cmd)]` runs cmd). */
const BASH_ARITHMETIC = new Set(['let', 'declare', 'typeset']);
/** Bash evaluates an array subscript in a variable name given to these (`read 'a[$(cmd)]'`). */
const BASH_NAMES = new Set(['read', 'unset', 'mapfile', 'readarray', 'getopts']);

/** Words that may stand before a command's program (XCU 2.4 reserved words). */
const RESERVED = new Set(['!', '{', 'then', 'do', 'else', 'elif', 'if', 'while', 'until']);
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*\+?=/;
/**
 * Variables that make programs load or run what their value names (a search path, a start-up
 * file, options that load code): a run parameter assigned to one chooses what runs.
 */
const LOADS_CODE =
  /^(?:PATH|IFS|ENV|BASH_ENV|BASHOPTS|SHELLOPTS|PS4|PROMPT_COMMAND|ZDOTDIR|HOME|XDG_CONFIG_HOME|LD_[A-Z_]+|DYLD_[A-Z_]+|GCONV_PATH|HOSTALIASES|PYTHON[A-Z_]*|PERL[A-Z0-9_]*|RUBY[A-Z_]*|NODE_OPTIONS|NODE_PATH|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|CLASSPATH|GIT_[A-Z_]+|[A-Z_]*(?:EDITOR|PAGER|COMMAND|SHELL)|VISUAL|BROWSER|LESSOPEN|LESSCLOSE|R_PROFILE[A-Z_]*|R_ENVIRON[A-Z_]*|LUA_INIT[A-Z0-9_]*|PHPRC|PHP_INI_SCAN_DIR)$/;

export const baseName = (word: string) => word.slice(word.lastIndexOf('/') + 1);
const isOp = (w: string) => w.startsWith(OP);
/** A program named by an expansion (`$SHELL`, `$(which sh)`): it may be any interpreter. */
const isExpansion = (w: string) => /[$`]/.test(w);

/** Whether the program named `name` is one this module knows something about. */
function known(name: string): boolean {
  return (
    SHELL.test(name) ||
    interpreterOf(name) !== undefined ||
    RUNS_ARGUMENTS.has(name) ||
    Object.hasOwn(WRAPPERS, name) ||
    Object.hasOwn(RUNNERS, name) ||
    Object.hasOwn(OPTION_PROGRAMS, name) ||
    AWK.test(name) ||
    name === 'find'
  );
}

/** The words of a simple command without redirections, each with its index among all words. */
interface Plain {
  words: string[];
  index: number[];
}

function plain(words: readonly string[]): Plain {
  const p: Plain = { words: [], index: [] };
  for (let k = 0; k < words.length; k++) {
    if (isOp(words[k]!)) {
      // A here-document operator has no target word (its delimiter is consumed with it).
      if (!/[^<]<<-?$/.test(words[k]!)) k++;
      continue;
    }
    p.words.push(words[k]!);
    p.index.push(k);
  }
  return p;
}

/** Index of the program in plain words: after reserved words and assignments (XCU 2.9.1). */
function programIndex(words: readonly string[]): number {
  let k = 0;
  while (k < words.length && (RESERVED.has(words[k]!) || ASSIGNMENT.test(words[k]!))) k++;
  return k;
}

/** Option name and attached value of an option word, for the given long/short conventions. */
function splitOption(word: string): { name: string; attached: string | null } {
  if (word.startsWith('--')) {
    const eq = word.indexOf('=');
    return eq < 0 ? { name: word, attached: null } : { name: word.slice(0, eq), attached: word.slice(eq + 1) };
  }
  return { name: word, attached: null };
}

/**
 * Why the word at `at` (plain index) is read again, for the command whose program is at `p`,
 * or null. `depth` bounds wrappers inside wrappers.
 */
function fromProgram(w: readonly string[], p: number, at: number, depth = 0): Reason | null {
  if (p >= w.length || at < p || depth > 8) return null;
  const word = w[p]!;
  if (at === p) return { kind: 'chooses', why: 'names the program to run, so the value chooses what runs' };
  if (word.includes(MARK)) return null;
  const name = baseName(word);
  if (isExpansion(word)) {
    // `$SHELL -c "…"`: the program may be any shell or interpreter.
    for (let k = p + 1; k < at; k++) {
      if (/^(?:-[A-Za-z]*[ceEp]|--eval|--command|--print|--expression)$/.test(w[k]!)) return { kind: 'code', why: `follows ${w[k]} of a program named by an expansion (${word.replace(MARK, '…')}), which may be an interpreter reading it as code` };
    }
    // `$E {param.x}` with E=eval: where the name itself (not only its directory) is expanded,
    // the program may be eval or `.`, which run every argument.
    if (isExpansion(name)) return { kind: 'code', why: `is an argument of a program whose name is an expansion (${word.replace(MARK, '…')}), which may be eval or a shell` };
    return null;
  }
  // runuser without -u is su: its arguments go to a shell.
  const suLike = name === 'runuser' && !w.slice(p + 1).some((o) => /^(?:-u|--user)/.test(o));
  if (RUNS_ARGUMENTS.has(name) || suLike) return { kind: 'code', why: `is an argument of ${name}, which runs its arguments as shell code again` };
  if (BASH_ARITHMETIC.has(name)) return { kind: 'code', why: `is an argument of ${name}, which evaluates it as arithmetic where the shell is bash (a[$(cmd)] runs cmd)` };
  if (['local', 'export', 'readonly'].includes(name) && w.slice(p + 1, at).some((o) => /^[-+][A-Za-z]*i/.test(o))) {
    return { kind: 'code', why: `is an argument of ${name} -i, which evaluates it as arithmetic where the shell is bash (a[$(cmd)] runs cmd)` };
  }
  if (['export', 'readonly', 'local'].includes(name)) {
    // An operand NAME=VALUE is an assignment: the value may not choose the name, nor set a variable that loads code.
    const m = /^([A-Za-z_][A-Za-z0-9_]*)\+?=/.exec(w[at]!);
    if (!m) return { kind: 'chooses', why: `names the variable ${name} sets, so the value could set PATH or LD_PRELOAD` };
    if (LOADS_CODE.test(m[1]!)) return { kind: 'chooses', why: `sets ${m[1]}, which makes programs load or run what the value names` };
    return null;
  }
  if (BASH_NAMES.has(name) || (name === 'printf' && w[at - 1] === '-v') || ((name === 'test' || name === '[') && w[at - 1] === '-v')) {
    return { kind: 'chooses', why: `names a variable for ${name}, and bash evaluates an array subscript in a name (a[$(cmd)] runs cmd)` };
  }
  if (AWK.test(name)) return { kind: 'code', why: `is an argument of ${name}, which reads its program and -v values as code; use ENVIRON["…"] in the program instead` };
  if (name === 'find') return fromFind(w, p, at, depth);
  if (SHELL.test(name)) return fromShell(w, p, at, name);
  const interpreter = interpreterOf(name);
  if (interpreter) return fromInterpreter(w, p, at, name, interpreter);
  const wrapper = Object.hasOwn(WRAPPERS, name) ? WRAPPERS[name] : undefined;
  if (wrapper) return fromWrapper(w, p, at, name, wrapper, depth);
  if (Object.hasOwn(OPTION_PROGRAMS, name)) return fromOptions(w, p, at, name, OPTION_PROGRAMS[name]!);
  if (Object.hasOwn(RUNNERS, name)) return fromRunner(w, p, at, name, depth);
  return null;
}

/**
 * `docker run [options] IMAGE CMD…`, `kubectl exec [options] POD -- CMD…`: the tool's own options
 * and subcommand, then the subcommand read as a wrapper of the command it runs.
 */
function fromRunner(w: readonly string[], p: number, at: number, name: string, depth: number): Reason | null {
  const runner = RUNNERS[name]!;
  const path: string[] = [];
  for (let k = p + 1; k < w.length; k++) {
    const o = w[k]!;
    if (o.startsWith('-') && o.length > 1 && !o.includes(MARK)) {
      if (runner.globals.includes(o)) {
        if (at === k + 1) return { kind: 'chooses', why: `is the value of ${name} ${o}, which chooses where ${name} runs commands` };
        k++;
      }
      continue;
    }
    if (at === k) return { kind: 'chooses', why: `stands among the options and subcommand of ${name}, where a value chooses what ${name} does` };
    path.push(o);
    const command = path.join(' ');
    if (Object.hasOwn(runner.commands, command)) return at > k ? fromWrapper(w, k, at, `${name} ${command}`, runner.commands[command]!, depth) : null;
    if (!runner.groups.includes(o)) return null;
  }
  return null;
}

/** `sh [options] -c [options] code [name [args]]`, clustered (-ec, -lc) and valued (-o errexit) options. */
function fromShell(w: readonly string[], p: number, at: number, name: string): Reason | null {
  let codeOption: string | null = null;
  let k = p + 1;
  for (; k < w.length; k++) {
    const o = w[k]!;
    if (o === '--' || o === '-') {
      k++;
      break;
    }
    if (!/^[-+]./.test(o) || o.includes(MARK)) break;
    if (o.startsWith('--')) {
      if (o === '--command' || o === '--init-command') codeOption = o;
      else if (SHELL_VALUE_LONG.has(o)) k++;
      continue;
    }
    for (const letter of o.slice(1)) {
      if (letter === 'c' && o[0] === '-') codeOption = o;
      if (SHELL_VALUE_LETTERS.includes(letter)) k++;
    }
  }
  if (at < k) return { kind: 'chooses', why: `stands among the options of ${name}, where a value could be an option such as -c` };
  if (codeOption !== null) {
    if (at === k) return { kind: 'code', why: `is the code argument of ${name} ${codeOption}, which runs it as code; pass values as arguments after it ("$1") or read them from the environment` };
    // $0, $1 … of that code: read as the code reads them (template.ts).
    if (at > k && k < w.length) return { kind: 'operand', why: `is an operand of ${name} ${codeOption}, which its code reads as $${at - k - 1}`, code: w[k]! };
    return null;
  }
  if (at === k) return { kind: 'chooses', why: `names the script ${name} runs, so the value chooses what runs` };
  return null;
}

/** An interpreter from the table: its code options (clustered or not), valued options, first operand. */
function fromInterpreter(w: readonly string[], p: number, at: number, name: string, spec: Interpreter): Reason | null {
  const norm = (s: string) => (spec.anyCase ? s.toLowerCase() : s);
  const code = new Set(spec.code.map(norm));
  const values = new Set((spec.values ?? []).map(norm));
  const codeReason = (option: string): Reason => ({ kind: 'code', why: `is the code argument of ${name} ${option}, which runs it as code; pass values as arguments after it or read them from the environment` });
  let hadCode = false;
  let k = p + 1;
  while (k < w.length) {
    const o = w[k]!;
    if (o === '--') {
      k++;
      break;
    }
    if (!o.startsWith('-') || o === '-' || (o.includes(MARK) && !o.startsWith('-'))) break;
    const { name: opt, attached } = splitOption(norm(o));
    if (code.has(opt)) {
      hadCode = true;
      if (attached !== null) {
        if (at === k) return codeReason(opt);
        k++;
      } else {
        if (at === k + 1) return codeReason(opt);
        if (at === k) return { kind: 'chooses', why: `stands among the options of ${name}, where a value could be a code option` };
        k += 2;
      }
      continue;
    }
    if (spec.program?.includes(opt)) {
      if (at === k || (attached === null && at === k + 1)) return { kind: 'chooses', why: `is the value of ${name} ${opt}, which chooses what ${name} runs` };
      return null;
    }
    if (values.has(opt)) {
      if (at === k || (attached === null && at === k + 1)) return { kind: 'chooses', why: `is the value of ${name} ${opt}, which chooses what ${name} loads or runs` };
      k += attached === null ? 2 : 1;
      continue;
    }
    // A one-letter option with the rest attached (-cCODE, -e'print 1'), or a cluster (-ne, -pe, -Bc):
    // a code letter takes the rest of the word as code, or else the next word; so does a value letter.
    let extra = 0;
    for (let j = 1; !opt.startsWith('--') && j < opt.length; j++) {
      const letter = `-${opt[j]}`;
      const rest = opt.slice(j + 1);
      if (code.has(letter)) {
        hadCode = true;
        // `node -pe`: the rest is more code options, not code; the code is the next word.
        if (spec.cluster && rest !== '' && [...rest].every((l) => code.has(`-${l}`))) {
          if (at === k + 1) return codeReason(o);
          extra = 1;
          break;
        }
        if (rest !== '' && at === k) return codeReason(letter);
        if (rest === '' && at === k + 1) return codeReason(o);
        extra = rest === '' ? 1 : 0;
        break;
      }
      if (values.has(letter)) {
        if (rest === '' && at === k + 1) return { kind: 'chooses', why: `is the value of ${name} ${letter}, which chooses what ${name} loads or runs` };
        extra = rest === '' ? 1 : 0;
        break;
      }
      if (!spec.cluster) break;
    }
    if (at === k) return { kind: 'chooses', why: `stands among the options of ${name}, where a value could be a code option` };
    k += 1 + extra;
  }
  if (at < k) return { kind: 'chooses', why: `stands among the options of ${name}, where a value could be a code option` };
  if (hadCode) return null;
  if (spec.codeSubcommands?.includes(w[k] ?? '')) return fromCodeSubcommand(w, k, at, name, codeReason);
  if (at === k) {
    if (spec.firstOperandIsCode) return codeReason('script');
    return { kind: 'chooses', why: `names the program ${name} runs, so the value chooses what runs` };
  }
  return null;
}

/** `deno eval [options] CODE [args]`: the subcommand's options, then its first operand is code. */
function fromCodeSubcommand(w: readonly string[], k: number, at: number, name: string, codeReason: (option: string) => Reason): Reason | null {
  let c = k + 1;
  while (c < w.length && w[c]!.startsWith('-') && w[c] !== '--' && !w[c]!.includes(MARK)) c++;
  if (w[c] === '--') c++;
  if (at > k && at < c) return { kind: 'chooses', why: `stands among the options of ${name} ${w[k]}, where a value could be a code option` };
  if (at === c) return codeReason(w[k]!);
  return null;
}

/** `find … -exec cmd … ;`: the command between -exec (-execdir, -ok, -okdir) and `;` or `+`. */
function fromFind(w: readonly string[], p: number, at: number, depth: number): Reason | null {
  for (let k = p + 1; k < w.length; k++) {
    if (!['-exec', '-execdir', '-ok', '-okdir'].includes(w[k]!)) continue;
    // find ends the command at `;`, or at `+` right after `{}` (a `+` elsewhere is an argument).
    let end = k + 1;
    while (end < w.length && w[end] !== ';' && !(w[end] === '+' && w[end - 1] === '{}')) end++;
    if (at > k && at < end) return fromProgram(w.slice(0, end), k + 1, at, depth + 1);
    k = end;
  }
  return null;
}

/** `NAME=VALUE` for the environment of the command a wrapper runs: data, unless the value may name the variable or the variable loads code. */
function environmentValue(name: string, option: string, word: string): Reason | null {
  const m = /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(word);
  if (!m) return { kind: 'chooses', why: `is the value of ${name} ${option}, where it could name the variable set, such as LD_PRELOAD` };
  return LOADS_CODE.test(m[1]!) ? { kind: 'chooses', why: `sets ${m[1]} for ${name}, which makes programs load or run what the value names` } : null;
}

/** A wrapper: its own options and operands, then the command it runs (checked as if it stood there). */
function fromWrapper(w: readonly string[], p: number, at: number, name: string, spec: Wrapper, depth: number): Reason | null {
  const values = new Set([...(spec.values ?? []), ...(spec.chooses ?? [])]);
  const env = new Set(spec.env ?? []);
  const data = new Set(spec.data ?? []);
  const valued = (o: string) => (data.has(o) ? 'data' : env.has(o) ? 'env' : values.has(o) ? 'value' : null);
  const code = new Set(spec.code ?? []);
  const shellRest = new Set(spec.shellRest ?? []);
  let operands = spec.operands ?? 0;
  let k = p + 1;
  let rest = false;
  const codeReason = (o: string): Reason => ({ kind: 'code', why: `is the code argument of ${name} ${o}, which hands it to a shell as code` });
  while (k < w.length) {
    const o = w[k]!;
    if (spec.assignments && ASSIGNMENT.test(o)) {
      const variable = o.slice(0, o.indexOf('=')).replace(/\+$/, '');
      if (at === k) return LOADS_CODE.test(variable) ? { kind: 'chooses', why: `sets ${variable}, which makes programs load or run what the value names` } : null;
      k++;
      continue;
    }
    if (o === '--') {
      k++;
      if (operands === 0) break;
      continue;
    }
    if (o.startsWith('-') && o.length > 1 && !o.includes(MARK)) {
      const { name: opt, attached } = splitOption(o);
      const short = opt.startsWith('--') ? null : opt.slice(0, 2);
      const shortRest = short !== null ? opt.slice(2) : '';
      // A code option later in a cluster (`script -qc CMD`, `env -iS CMD`): its value is the rest
      // of the cluster or the next word, as for the option alone.
      const later = short !== null && attached === null ? [...opt.slice(2)].findIndex((l) => code.has(`-${l}`)) : -1;
      if (later >= 0) {
        const letter = `-${opt[2 + later]}`;
        if (opt.length > 3 + later) {
          if (at === k) return codeReason(letter);
          k++;
        } else {
          if (at === k + 1) return codeReason(letter);
          k += 2;
        }
        continue;
      }
      if (code.has(opt) || (short !== null && code.has(short))) {
        const inline = attached ?? (short !== null && shortRest !== '' && !code.has(opt) ? shortRest : null);
        if (inline !== null) {
          if (at === k) return codeReason(short ?? opt);
          k++;
        } else {
          if (at === k + 1) return codeReason(opt);
          k += 2;
        }
        continue;
      }
      if (shellRest.has(opt) || (short !== null && [...opt.slice(1)].some((l) => shellRest.has(`-${l}`)))) rest = true;
      const kind = valued(opt) ?? (short !== null ? valued(short) : null);
      if (kind) {
        const inline = attached !== null || (short !== null && shortRest !== '' && valued(opt) === null);
        if (at === k || (!inline && at === k + 1)) {
          if (kind === 'data') return null;
          if (kind === 'env') return environmentValue(name, opt, w[at]!);
          return { kind: 'chooses', why: `is the value of ${name} ${opt}, an option of a program that runs a command` };
        }
        k += inline ? 1 : 2;
        continue;
      }
      if (at === k) return { kind: 'chooses', why: `stands among the options of ${name}, which runs a command` };
      k++;
      continue;
    }
    if (operands > 0) {
      if (at === k) return { kind: 'chooses', why: `is an operand of ${name}, which runs a command` };
      operands--;
      k++;
      continue;
    }
    break;
  }
  if (at < k) return { kind: 'chooses', why: `stands among the options of ${name}, which runs a command` };
  if (spec.noCommand) return null;
  if (rest) return { kind: 'code', why: `is an argument of ${name} with a shell option, which runs its arguments as a shell command line` };
  // The command the wrapper runs; should its own options have been misread (an option with a
  // value not in the table), every later known program is tried too.
  const found = fromProgram(w, k, at, depth + 1);
  if (found) return found;
  for (let j = k + 1; j < at; j++) {
    if (!known(baseName(w[j]!))) continue;
    const again = fromProgram(w, j, at, depth + 1);
    if (again) return again;
  }
  return null;
}

/**
 * Why the word at `at` (an index into `words`, tokens included) of a finished simple command is
 * read again as code, or null. `offset` is where the placeholder stands in that word.
 */
export function secondReading(words: readonly string[], at: number, offset: number): Reason | null {
  const all = plain(words);
  const word = words[at]!;
  // A redirection's target: a here-string given to a program that reads its input as code.
  if (at > 0 && isOp(words[at - 1]!)) {
    const op = words[at - 1]!.slice(1);
    const reads = readsInputAsCode(words);
    if (reads !== null && op.endsWith('<<<')) return { kind: 'code', why: `is in a here-string that ${reads} reads as code` };
    if (reads !== null && /^0?<>?$/.test(op)) return { kind: 'chooses', why: `names the file ${reads} reads as code` };
    return null;
  }
  const before = word.slice(0, offset);
  if (/^[A-Za-z_][A-Za-z0-9_]*\[[^\]]*$/.test(before)) return { kind: 'code', why: 'stands in an array subscript, which bash evaluates as arithmetic (a[$(cmd)] runs cmd)' };
  const i = all.index.indexOf(at);
  const w = all.words;
  const open = w.slice(0, i).lastIndexOf('[[');
  if (open >= 0 && !w.slice(open, i).includes(']]')) return { kind: 'code', why: 'stands inside [[ … ]], which evaluates it as arithmetic where the shell is bash (a[$(cmd)] runs cmd)' };
  const p = programIndex(w);
  if (i < p) {
    // An assignment before the program (or on its own): plain data, unless the variable loads code.
    const m = /^([A-Za-z_][A-Za-z0-9_]*)\+?=/.exec(word);
    if (m && LOADS_CODE.test(m[1]!) && before.length > m[0].length - 1) return { kind: 'chooses', why: `sets ${m[1]}, which makes programs load or run what the value names` };
    return null;
  }
  return fromProgram(w, p, i);
}

/** The program of a command's words (looking through wrappers), and whether a wrapper was looked through. */
function programOf(words: readonly string[]): { w: string[]; k: number; wrapped: boolean } {
  const w = plain(words).words;
  let k = programIndex(w);
  let wrapped = false;
  for (let guard = 0; guard < 8 && k < w.length; guard++) {
    const spec = Object.hasOwn(WRAPPERS, baseName(w[k]!)) ? WRAPPERS[baseName(w[k]!)] : undefined;
    if (!spec || spec.noCommand) break;
    wrapped = true;
    // Skip the wrapper's options and operands the way fromWrapper reads them.
    let j = k + 1;
    let operands = spec.operands ?? 0;
    while (j < w.length) {
      const o = w[j]!;
      if (spec.assignments && ASSIGNMENT.test(o)) j++;
      else if (o === '--') {
        j++;
        if (operands === 0) break;
      } else if (o.startsWith('-') && o.length > 1) j += (spec.values ?? []).includes(o) ? 2 : 1;
      else if (operands > 0) {
        operands--;
        j++;
      } else break;
    }
    k = j;
  }
  return { w, k, wrapped };
}

const readsStdin = (name: string) =>
  SHELL.test(name) || STDIN_RUNS.has(name) || RUNS_ARGUMENTS.has(name) || interpreterOf(name)?.stdin === true || (Object.hasOwn(OPTION_PROGRAMS, name) && OPTION_PROGRAMS[name]!.stdin === true);

/**
 * Why standard input given to this command (a here-document, a here-string) is read as code, as
 * the name of the program that reads it, or null: any shell or interpreter (looking through
 * wrappers, whatever its other arguments: `sh -s`, `sh /dev/stdin`, `. /dev/stdin`), a program
 * named by an expansion, and programs that run their input later or elsewhere (at, ssh).
 */
export function readsInputAsCode(words: readonly string[]): string | null {
  const { w, k, wrapped } = programOf(words);
  if (k >= w.length) return null;
  const word = w[k]!;
  if (isExpansion(word)) return word.replaceAll(MARK, '…');
  if (readsStdin(baseName(word))) return baseName(word);
  // find's -exec/-execdir/-ok/-okdir commands inherit its standard input.
  if (baseName(word) === 'find') for (let j = k + 1; j < w.length; j++) if (readsStdin(baseName(w[j]!))) return `find … ${baseName(w[j]!)}`;
  if (AWK.test(baseName(word)) && w.some((a) => /^(?:-|\/dev\/stdin|\/dev\/fd\/0|\/proc\/self\/fd\/0)$/.test(a))) return baseName(word);
  // Behind a wrapper whose options were misread (one with a value not in the table), or a
  // container or cluster tool handing its input on (`docker run -i IMAGE sh`), any later shell or interpreter.
  if (wrapped || Object.hasOwn(RUNNERS, baseName(word))) for (let j = k + 1; j < w.length; j++) if (readsStdin(baseName(w[j]!))) return baseName(w[j]!);
  return null;
}

/** Whether this command's program (looking through wrappers) reads code: marks the compound commands around it. */
export function runsCode(words: readonly string[]): boolean {
  const found = programOf(words);
  if (found.k >= found.w.length) return false;
  const word = found.w[found.k]!;
  const name = baseName(word);
  return isExpansion(word) || readsStdin(name) || AWK.test(name);
}

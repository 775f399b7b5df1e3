/**
 * Interpreters and the options whose value they run as code (`python -c`, `perl -e`, `node -p`
 * …), as a table: name pattern → options (code-arguments.ts walks a command's words with it).
 */

export interface Interpreter {
  /** Options whose value (the next word, or the rest of the word) is code. */
  code: string[];
  /** Options that take a value that is not code (the next word unless attached). */
  values?: string[];
  /** One-letter options may be clustered (`perl -ne`, `node -pe`). */
  cluster?: boolean;
  /** Reads a program from standard input when given none (a here-document to it is code). */
  stdin?: boolean;
  /** The first operand is the program text when no code option was given (sed's script). */
  firstOperandIsCode?: boolean;
  /** Option names compare without case (PowerShell). */
  anyCase?: boolean;
  /** Options whose value names what runs and ends the options: the words after are its arguments (`python -m MODULE ARGS`). */
  program?: string[];
  /** Subcommands (the first operand) whose first operand after their options is code (`deno eval CODE`). */
  codeSubcommands?: string[];
}

/** Interpreters and their code options, as a table: name pattern → options. */
const INTERPRETERS: [RegExp, Interpreter][] = [
  [/^(?:python|pypy)[0-9.]*(?:-dbg)?$/, { code: ['-c'], values: ['-W', '-X', '-Q'], program: ['-m'], cluster: true, stdin: true }],
  [/^perl[0-9.]*$/, { code: ['-e', '-E'], values: ['-I', '-M', '-m', '-x'], cluster: true, stdin: true }],
  [/^j?ruby[0-9.]*$/, { code: ['-e'], values: ['-I', '-r', '-C', '-E', '-F', '--encoding'], cluster: true, stdin: true }],
  [/^(?:node|nodejs|bun)[0-9.]*$/, { code: ['-e', '--eval', '-p', '--print'], values: ['-r', '--require', '--import', '--loader', '--experimental-loader', '-C', '--conditions', '--input-type', '--title', '--env-file', '--stack-size'], cluster: true, stdin: true }],
  [/^php[0-9.]*(?:-cli)?$/, { code: ['-r', '-B', '-R', '-E'], values: ['-d', '-c', '-f', '-F', '-z', '-t'], stdin: true }],
  [/^(?:Rscript|R)$/, { code: ['-e'], values: ['-f', '--file'], stdin: true }],
  [/^osascript$/, { code: ['-e'], values: ['-l', '-s'], stdin: true }],
  [/^(?:lua|luajit)[0-9.]*$/, { code: ['-e'], values: ['-l'], stdin: true }],
  [/^(?:tclsh|wish|expect)[0-9.]*$/, { code: ['-c'], values: ['-f'], stdin: true }],
  [/^(?:pwsh|powershell)(?:\.exe)?$/, { code: ['-c', '-command', '-commandwithargs', '-cwa', '-encodedcommand', '-e', '-ec'], values: ['-f', '-file', '-workingdirectory', '-wd'], stdin: true, anyCase: true }],
  [/^(?:groovy|scala|jshell|kotlin)$/, { code: ['-e'], stdin: true }],
  [/^julia(?:-[0-9.]+)?$/, { code: ['-e', '--eval', '-E', '--print'], values: ['-L', '--load', '-J', '--sysimage', '--project', '-t', '--threads', '-p', '--procs', '--machine-file'], stdin: true }],
  [/^deno$/, { code: [], values: ['--config', '-c', '--import-map', '-r', '--reload'], codeSubcommands: ['eval'] }],
  // ed reads commands (`!cmd` runs one) from standard input, and a file named `!cmd` is a command's output.
  [/^r?ed$/, { code: [], values: ['-p', '--prompt'], stdin: true }],
  [/^dc$/, { code: ['-e', '--expression'], values: ['-f', '--file'], stdin: true }],
  [/^bc$/, { code: [], stdin: true }],
  [/^(?:gdb)$/, { code: ['-ex', '--eval-command', '-iex', '--init-eval-command'], values: ['-x', '--command', '-p', '--pid'] }],
  [/^(?:vi|vim|nvim|ex|view|gvim)$/, { code: ['-c', '--cmd'], values: ['-u', '-U', '-i', '-S', '-T', '-s', '-w', '-W'] }],
  [/^(?:g|gnu)?sed$/, { code: ['-e', '--expression'], values: ['-f', '--file', '-l', '--line-length'], cluster: true, firstOperandIsCode: true, stdin: true }],
  // The dot and `source` read a file as shell code: its name is the program (XCU 2.14 dot).
  [/^(?:\.|source)$/, { code: [], stdin: true }],
];

export function interpreterOf(name: string): Interpreter | undefined {
  for (const [pattern, spec] of INTERPRETERS) if (pattern.test(name)) return spec;
  return undefined;
}

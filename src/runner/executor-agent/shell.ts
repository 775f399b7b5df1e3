import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** The shell that runs commands, and whether it evaluates variable contents as arithmetic. */
export interface CommandShell {
  path: string;
  /** bash, ksh and zsh: a variable's value reaching arithmetic (`$((x+1))`, `[ "$x" -eq 1 ]` in `[[ ]]`) is evaluated recursively, so `a[$(cmd)]` runs cmd. */
  evaluatesValues: boolean;
  /** What it says it is (bash 5.2…, dash). */
  kind: string;
}

/**
 * The default shell: dash where it exists (it never evaluates the contents of a variable as an
 * arithmetic expression: XCU 2.6.4 leaves that unspecified, and bash, ksh and zsh do it), else
 * /bin/sh.
 */
export function defaultShell(): string {
  return fs.existsSync('/bin/dash') ? '/bin/dash' : '/bin/sh';
}

/** Asks the shell what it is; throws when it cannot run a command. */
export function inspectShell(file: string): CommandShell {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text
  const probe = spawnSync(file, ['-c', 'printf "%s|%s|%s" "${BASH_VERSION-}" "${KSH_VERSION-}" "${ZSH_VERSION-}"'], { encoding: 'utf8', timeout: 10_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
  if (probe.error || probe.status === null) throw new Error(`the shell ${file} cannot run commands: ${probe.error?.message ?? `killed by ${probe.signal}`}`);
  const [bash = '', ksh = '', zsh = ''] = probe.status === 0 ? probe.stdout.split('|') : ['', '', ''];
  let real = file;
  try {
    real = fs.realpathSync(file);
  } catch {
    // reported by the probe already
  }
  const base = path.basename(real);
  if (bash) return { path: file, evaluatesValues: true, kind: `bash ${bash}` };
  if (ksh || /ksh/.test(base)) return { path: file, evaluatesValues: true, kind: ksh ? `ksh ${ksh}` : base };
  if (zsh) return { path: file, evaluatesValues: true, kind: `zsh ${zsh}` };
  if (/bash|zsh/.test(base)) return { path: file, evaluatesValues: true, kind: base };
  return { path: file, evaluatesValues: false, kind: base };
}

/** The warning the executor logs at start when its shell evaluates values reaching arithmetic. */
export const ARITHMETIC_WARNING =
  'this shell evaluates the contents of variables reaching arithmetic (x={param.n}; $((x+1)) runs a[$(cmd)]): a run parameter that reaches arithmetic is code; use --shell /bin/dash (or another POSIX shell that does not) where possible';

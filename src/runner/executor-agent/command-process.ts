import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { configVariables } from '../../infra/config.js';
import type { RunUser } from './run-user.js';

/**
 * Runs each command (see the file): the command's process group dies when the executor does, even
 * by SIGKILL, and when the command's shell exits, whatever it left running in the background.
 */
export const SUPERVISOR = fileURLToPath(new URL('./supervisor.mjs', import.meta.url));

/** Settings of the runner and publishing service: an executor started beside them inherits their secrets. */
const SERVICE_VARIABLES = new Set(configVariables());

/**
 * What a command must never see: the executor's own settings (its admin key) and every setting
 * of the service (JWT_SECRET, database URLs, API_KEY, …). Everything else is the operator's
 * (PATH, HOME, proxies, Java options) and passes.
 */
export function commandEnv(env: NodeJS.ProcessEnv, extra: Record<string, string>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) {
    if (k.startsWith('PIER_EXECUTOR_') || k === 'API_KEY' || k === 'PIER_API_KEY' || SERVICE_VARIABLES.has(k)) continue;
    // A run's parameters are its own: none of the same name leaks in from the executor's start.
    if (k.startsWith('PIER_PARAM_') || k.startsWith('PIER_PARAMX_')) continue;
    out[k] = v;
  }
  return { ...out, ...extra };
}

/** What a command is started with. */
export interface CommandStart {
  shell: string;
  /** The compiled template: values are references to variables of `env`. */
  command: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Runs the shell as this user (`--run-as`); null: as the executor's own user. */
  user: RunUser | null;
  /** Each piece of stdout or stderr, as it comes. */
  output(text: string): void;
}

/**
 * Starts a command under its supervisor. The supervisor leads a new process group and runs
 * `<shell> -c` in it: the group's id is the supervisor's pid. Its stdin is its control pipe, fd 3
 * tells how the shell ended; `ended` resolves once its output is read to the end.
 */
export function startCommand(o: CommandStart): { child: ChildProcess; ended: Promise<CommandExit> } {
  const args = [SUPERVISOR, o.shell, o.command, ...(o.user ? [String(o.user.uid), String(o.user.gid)] : [])];
  const child = spawn(process.execPath, args, { cwd: o.cwd, detached: true, stdio: ['pipe', 'pipe', 'pipe', 'pipe'], env: o.env });
  const ended = new Promise<CommandExit>((resolve, reject) => {
    // Writing to a supervisor that has just exited fails with EPIPE: nothing left to signal.
    child.stdin!.on('error', () => {});
    child.stdout!.setEncoding('utf8').on('data', (d: string) => o.output(d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => o.output(d));
    let status = '';
    (child.stdio[3] as Readable).setEncoding('utf8').on('data', (d: string) => {
      status += d;
    });
    child.on('error', reject);
    // However the supervisor ended (killed by the command, say): nothing of its group runs on.
    child.on('exit', () => killGroup(child));
    child.on('close', (code, signal) => resolve(commandExit(child, status, code, signal)));
  });
  return { child, ended };
}

/**
 * Stops (or resumes) reading the command's output: a command whose pipe is not read blocks in its
 * next write, which is how a command is paused while its log is behind.
 */
export function readOutput(child: ChildProcess, on: boolean): void {
  for (const stream of [child.stdout, child.stderr]) {
    if (on) stream?.resume();
    else stream?.pause();
  }
}

/** How a command ended, as its supervisor reported it. */
export interface CommandExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The supervisor died without reporting (and not by the executor's SIGKILL). */
  supervisorKilled: boolean;
}

export const SUPERVISOR_KILLED = "the command's supervisor was killed; its processes were stopped";

/** Supervisors the executor sent SIGKILL: their ending without a report is no surprise. */
const killedByExecutor = new WeakSet<ChildProcess>();

/** Reads the supervisor's report (see supervisor.mjs); `code` and `signal` are the supervisor's own. */
export function commandExit(child: ChildProcess, report: string, code: number | null, signal: NodeJS.Signals | null): CommandExit {
  try {
    const r = JSON.parse(report) as { code?: unknown; signal?: unknown };
    if ((typeof r.code === 'number' || r.code === null) && (typeof r.signal === 'string' || r.signal === null)) {
      return { code: r.code, signal: r.signal as NodeJS.Signals | null, supervisorKilled: false };
    }
  } catch {
    // no report: see below
  }
  return { code, signal, supervisorKilled: !killedByExecutor.has(child) };
}

/**
 * Signals the command's whole process group: through the supervisor's control pipe, and SIGKILL
 * also directly (it needs no cooperation, a stopped supervisor included).
 */
export function signalGroup(child: ChildProcess, signal: 'SIGTERM' | 'SIGKILL'): void {
  if (!running(child)) return;
  if (child.stdin?.writable) child.stdin.write(signal === 'SIGTERM' ? 'TERM\n' : 'KILL\n');
  if (signal === 'SIGKILL') {
    killedByExecutor.add(child);
    killGroup(child);
  }
}

/**
 * SIGKILL to the supervisor's process group. Safe after the supervisor died too: a group id is
 * not given to another process while any member of the group lives, and this runs right after
 * the supervisor is reaped (an empty group's id would have to be reused within that instant).
 */
export function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // the group is gone already
  }
}

/** The supervisor exits only after the command's shell did and its group was killed (or killed by the executor). */
export function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

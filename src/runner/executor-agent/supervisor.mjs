// Runs one command for `pier runner executor` and makes sure nothing of it outlives the executor
// or the run. Plain JavaScript so that it starts fast with no loader (one per run).
//
//   node supervisor.mjs <shell> <shell command> [<uid> <gid>]
//
// The executor starts this process as the leader of a new process group (`detached`), and the
// command runs as `<shell> -c <command>` in that same group, so the executor knows the group
// (its id is this process's pid) from the start: should this process die before its time
// (killed by the command itself, say), the executor kills the group on its own. The command's
// stdout and stderr are this process's.
//
// Standard input is the executor's control pipe: a line `TERM` or `KILL` sends that signal to
// the whole group; the end of the pipe (the executor exited, even by SIGKILL, which no handler
// of its own can catch) kills the group, this process with it. When the shell exits, this
// process writes how (`{"code":…,"signal":…}` and a newline) to file descriptor 3, the
// executor's status pipe, then kills the group, itself included, so nothing the shell left
// running in the background goes on. A supervisor that ends without that line was killed.
//
// With a uid and gid (the executor's `--run-as`), the shell runs as that user (with that group
// only: no supplementary groups), while this process stays the executor's: the command can
// neither signal it nor read its pipes.
import { spawn } from 'node:child_process';
import fs from 'node:fs';

const shell = process.argv[2];
const command = process.argv[3];
const [uid, gid] = [process.argv[4], process.argv[5]].map((v) => (v === undefined ? undefined : Number(v)));
if (shell === undefined || command === undefined || (uid !== undefined && !(Number.isInteger(uid) && Number.isInteger(gid)))) {
  process.stderr.write('usage: supervisor.mjs <shell> <shell command> [<uid> <gid>]\n');
  process.exit(64);
}

// Killing the group means killing this process too: only safe when the group is its own (on
// Linux, field 5 of /proc/self/stat; elsewhere the executor's `detached` is trusted).
const stat = (() => {
  try {
    return fs.readFileSync('/proc/self/stat', 'utf8');
  } catch {
    return null;
  }
})();
if (stat !== null && Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) !== process.pid) {
  process.stderr.write('supervisor.mjs: must be started as the leader of a process group of its own\n');
  process.exit(70);
}

// Signals meant for the command (Ctrl-C, `kill 0` of the command, the executor's TERM line) reach
// this process too: the executor decides what happens to it.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR2', 'SIGALRM']) process.on(signal, () => {});

const child = spawn(shell, ['-c', command], { stdio: ['ignore', 'inherit', 'inherit'], ...(uid !== undefined ? { uid, gid } : {}) });

/** @param {NodeJS.Signals} signal */
function signalGroup(signal) {
  try {
    process.kill(-process.pid, signal);
  } catch {
    // the group is gone already
  }
}

let buffered = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (data) => {
  buffered += data;
  for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
    const line = buffered.slice(0, nl).trim();
    buffered = buffered.slice(nl + 1);
    if (line === 'TERM' || line === 'KILL') signalGroup(`SIG${line}`);
  }
});
// The executor is gone: so is its command.
process.stdin.on('end', () => signalGroup('SIGKILL'));
process.stdin.on('error', () => signalGroup('SIGKILL'));

child.on('error', (e) => {
  process.stderr.write(`executor: cannot start ${shell}: ${e.message}\n`);
  report({ code: 127, signal: null });
  process.exit(127);
});

child.on('exit', (code, signal) => {
  report({ code, signal });
  // Background children of a finished run must not run on unsupervised; this process ends here.
  signalGroup('SIGKILL');
  process.exit(code ?? 1);
});

/** @param {{ code: number | null, signal: NodeJS.Signals | null }} status */
function report(status) {
  try {
    fs.writeSync(3, `${JSON.stringify(status)}\n`);
  } catch {
    // the executor is gone: nobody to tell
  }
}

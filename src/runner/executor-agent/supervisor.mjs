// Runs one command for `pier runner executor` and makes sure nothing of it outlives the executor
// or the run. Plain JavaScript so that it starts fast with no loader (one per run).
//
//   node supervisor.mjs <shell command>
//
// The command runs as `/bin/sh -c <command>` in a process group of its own, its stdout and
// stderr are this process's. Standard input is the executor's control pipe: a line `TERM` or
// `KILL` sends that signal to the whole group; the end of the pipe (the executor exited, even
// by SIGKILL, which no handler of its own can catch) kills the group and ends this process.
// When the shell exits, whatever it left running in its group is killed, and this process ends
// the way the shell did (same exit code, or same signal).
import { spawn } from 'node:child_process';
import { constants } from 'node:os';

const command = process.argv[2];
if (command === undefined) {
  process.stderr.write('usage: supervisor.mjs <shell command>\n');
  process.exit(64);
}

// Ctrl-C in the executor's terminal reaches this process too: the executor decides what happens.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => {});

const child = spawn('/bin/sh', ['-c', command], { detached: true, stdio: ['ignore', 'inherit', 'inherit'] });

/** @param {NodeJS.Signals} signal */
function signalGroup(signal) {
  try {
    process.kill(-child.pid, signal);
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
  process.stderr.write(`executor: cannot start /bin/sh: ${e.message}\n`);
  process.exit(127);
});

child.on('exit', (code, signal) => {
  // Background children of a finished run must not run on unsupervised.
  signalGroup('SIGKILL');
  process.stdin.destroy();
  if (signal) {
    for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    // Signals Node itself ignores (SIGPIPE): the shell's convention.
    setTimeout(() => process.exit(128 + (constants.signals[signal] ?? 0)), 100);
    return;
  }
  process.exit(code ?? 1);
});

import { type ChildProcess, spawn } from 'node:child_process';

/** Set in a part's own process: it serves that part only, prints no summary, ends with its parent. */
export const PART_PROCESS_ENV = 'PIER_SERVE_PART_PROCESS';

/** How long a part's process may take to listen before `pier serve` gives up. */
const START_TIMEOUT_MS = 60_000;

/**
 * Starts one part of `pier serve` as a process of its own (`pier serve --only <part>`), with the
 * same settings. The download host runs this way beside the other parts: every P2 install
 * waits on it, so it keeps an event loop (and a share of the CPU scheduler) of its own, which
 * no vendor-driven work (page checks, SFTP sessions, crawls) can hold up. The process ends
 * with this one: it reads a pipe from us and exits when the pipe closes (even after SIGKILL).
 */
export function startPartProcess(
  part: string,
  onExit: (why: string) => void,
  /** With metrics on (infra/metrics/serve.ts): the process gets an IPC channel, handed to `ipc`. */
  options: { ipc?(child: ChildProcess, part: string): void } = {},
): Promise<{ url: string; close(drainMs?: number, options?: { delay?: boolean }): Promise<void> }> {
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1] ?? 'bin/pier.js', 'serve', '--only', part], {
    env: { ...process.env, [PART_PROCESS_ENV]: '1' },
    stdio: options.ipc ? ['pipe', 'inherit', 'pipe', 'ipc'] : ['pipe', 'inherit', 'pipe'],
  });
  options.ipc?.(child, part);
  let closing = false;
  let listening = false;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the ${part} process did not start within ${START_TIMEOUT_MS / 1000} s`));
    }, START_TIMEOUT_MS);
    let partial = '';
    const listeningLine = new RegExp(`^pier: ${part} listening on (.*)$`);
    child.stderr?.setEncoding('utf8').on('data', (text: string) => {
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const m = listening ? null : listeningLine.exec(line);
        // The part's own "listening" line is said once, by `pier serve` (with the process id).
        if (!m) {
          process.stderr.write(`${line}\n`);
          continue;
        }
        listening = true;
        clearTimeout(timer);
        resolve({
          url: `${m[1]} (own process ${child.pid})`,
          close: (_drainMs, options = {}) =>
            new Promise<void>((done) => {
              closing = true;
              if (child.exitCode !== null || child.signalCode !== null) return done();
              child.once('exit', () => done());
              // Ctrl-C: the part skips the drain delay too (see NO_DELAY).
              if (options.delay === false) child.stdin?.write(NO_DELAY);
              child.kill('SIGTERM');
            }),
        });
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const why = `the ${part} process ended (${signal ?? `exit code ${code}`})`;
      if (!listening) reject(new Error(why));
      else if (!closing) onExit(why);
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

/** Written to a part's process before SIGTERM when it should close its listeners at once (Ctrl-C), not after PIER_DRAIN_DELAY_SECONDS. */
const NO_DELAY = 'no-drain-delay\n';
let delaySkipped = false;

/** In a part's own process: whether its parent asked it to skip the drain delay. */
export function drainDelaySkipped(): boolean {
  return delaySkipped;
}

/** In a part's own process: end when the parent's pipe closes (the parent exited, however). */
export function endWithParent(): void {
  process.stdin.setEncoding('utf8').on('data', (text: string) => {
    if (text.includes(NO_DELAY.trim())) delaySkipped = true;
  });
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
}

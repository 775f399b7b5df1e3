import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../infra/errors.js';
import { ancestorsShowing } from './exposed-secret.js';

// `pier runner executor` loads only its own modules (the executor is a client of the HTTP API):
// a restarted executor is back in well under a second instead of loading the server's modules
// first (src/cli/index.ts starts it without the other commands).

/** The admin key from --api-key-file / PIER_EXECUTOR_API_KEY_FILE, else --api-key / PIER_EXECUTOR_API_KEY. */
function readApiKey(opts: Record<string, string | undefined>): string {
  if (opts.apiKeyFile) {
    let text: string;
    try {
      text = fs.readFileSync(opts.apiKeyFile, 'utf8');
    } catch (e) {
      throw new UsageError(`--api-key-file: cannot read ${opts.apiKeyFile}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    const key = text.replace(/\r?\n$/, '');
    if (!key) throw new UsageError(`--api-key-file: ${opts.apiKeyFile} is empty`);
    return key;
  }
  if (!opts.apiKey) throw new UsageError('--api-key-file (or PIER_EXECUTOR_API_KEY_FILE) or --api-key (or PIER_EXECUTOR_API_KEY) is required');
  return opts.apiKey;
}

/** The users of `--run-as`, checked: the executor must be root, with a user for each run at once. */
async function commandUsers(list: string | undefined, capacity: number) {
  const names = (list ?? '').split(',').map((n) => n.trim()).filter(Boolean);
  if (names.length === 0) return [];
  // Ending every process of a user and checking that none is left reads /proc.
  if (process.platform !== 'linux') throw new UsageError('--run-as works on Linux only');
  if (process.geteuid?.() !== 0) throw new UsageError('--run-as: the executor must run as root to run commands as other users');
  if (names.length < capacity) {
    throw new UsageError(`--run-as names ${names.length} user(s) but --capacity is ${capacity}: each run at once needs a user of its own`);
  }
  const { resolveRunUsers, RunUserError } = await import('../runner/executor-agent/run-user.js');
  try {
    return resolveRunUsers(names, 0);
  } catch (e) {
    if (e instanceof RunUserError) throw new UsageError(`--run-as: ${e.message}`);
    throw e;
  }
}

/** `pier runner executor`, on the `runner` command. */
export function registerExecutorCommand(runner: Command): void {
  runner
    .command('executor')
    .description('run workflows for a runner: register, claim runs (long-poll), run --command for each, send logs, outputs and results')
    .option('--url <url>', 'runner URL (env PIER_EXECUTOR_URL)', process.env.PIER_EXECUTOR_URL)
    .option('--api-key-file <path>', 'file holding the runner\'s admin key (env PIER_EXECUTOR_API_KEY_FILE; preferred)', process.env.PIER_EXECUTOR_API_KEY_FILE)
    .option('--api-key <key>', 'the runner\'s admin key (env PIER_EXECUTOR_API_KEY; prefer --api-key-file: arguments show in ps)', process.env.PIER_EXECUTOR_API_KEY)
    .option('--name <name>', 'executor name (env PIER_EXECUTOR_NAME)', process.env.PIER_EXECUTOR_NAME ?? os.hostname())
    .option('--labels <a,b>', 'labels this executor offers (env PIER_EXECUTOR_LABELS)', process.env.PIER_EXECUTOR_LABELS ?? '')
    .option('--capacity <n>', 'runs at once, 1-256 (env PIER_EXECUTOR_CAPACITY)', process.env.PIER_EXECUTOR_CAPACITY ?? '1')
    .option('--work-dir <dir>', 'where runs are unpacked and run (env PIER_EXECUTOR_WORK_DIR)', process.env.PIER_EXECUTOR_WORK_DIR ?? path.join(os.tmpdir(), 'pier-executor'))
    .option('--command <template>', 'command run by the shell for each run (env PIER_EXECUTOR_COMMAND); placeholders {archive} {workdir} {workflow} {out} {runId} {attempt} {param.NAME}', process.env.PIER_EXECUTOR_COMMAND)
    .option('--shell <path>', 'shell that runs each command as `<shell> -c` (env PIER_EXECUTOR_SHELL; default /bin/dash where it exists, else /bin/sh; with bash, ksh or zsh a run parameter reaching arithmetic is code)', process.env.PIER_EXECUTOR_SHELL)
    .option('--kill-grace <seconds>', 'seconds between SIGTERM and SIGKILL when a run is cancelled (env PIER_EXECUTOR_KILL_GRACE)', process.env.PIER_EXECUTOR_KILL_GRACE ?? '10')
    .option('--state-file <path>', 'file keeping this executor\'s id across restarts, so a restart registers again as the same executor (env PIER_EXECUTOR_STATE_FILE)', process.env.PIER_EXECUTOR_STATE_FILE)
    .option('--give-up <seconds>', 'seconds a log batch or a run\'s report may keep failing (5xx, network) before the run fails (env PIER_EXECUTOR_GIVE_UP_SECONDS)', process.env.PIER_EXECUTOR_GIVE_UP_SECONDS ?? '120')
    .option(
      '--run-as <users>',
      'comma-separated users to run commands as, one per run at once (at least --capacity of them); the executor runs as root, and every process of a run\'s user ends with the run (env PIER_EXECUTOR_RUN_AS)',
      process.env.PIER_EXECUTOR_RUN_AS,
    )
    .action(async (opts: Record<string, string | undefined>) => {
      const url = opts.url;
      if (!url || !/^https?:\/\//.test(url)) throw new UsageError('--url (or PIER_EXECUTOR_URL) must be the runner\'s http(s) URL');
      const apiKey = readApiKey(opts);
      // Commands run by this process must never see the admin key: not in the environment it
      // passes on (see commandEnv), nor in its command line (/proc/<pid>/cmdline). What the
      // process was started with stays readable in /proc/<pid>/environ by the same user: the
      // README says to prefer --api-key-file and to run commands as another user.
      delete process.env.PIER_EXECUTOR_API_KEY;
      delete process.env.PIER_EXECUTOR_API_KEY_FILE;
      // Both `--api-key KEY` and `--api-key=KEY` put it into an argument.
      const key = opts.apiKey;
      if (key !== undefined && process.argv.some((a) => a.includes(key))) {
        process.title = 'pier runner executor';
        for (const p of ancestorsShowing(key)) {
          process.stderr.write(
            `pier: warning: the admin key stays readable by every user of this machine in the command line of process ${p.pid} (${p.command}) ` +
              'for as long as it runs: pass it with --api-key-file or PIER_EXECUTOR_API_KEY_FILE instead of --api-key\n',
          );
        }
      }
      if (!opts.command) throw new UsageError('--command (or PIER_EXECUTOR_COMMAND) is required');
      const { compileTemplate, TemplateError } = await import('../runner/executor-agent/template.js');
      try {
        compileTemplate(opts.command);
      } catch (e) {
        if (e instanceof TemplateError) throw new UsageError(`--command: ${e.message}`);
        throw e;
      }
      const capacity = Number(opts.capacity);
      if (!Number.isInteger(capacity) || capacity < 1 || capacity > 256) throw new UsageError('--capacity must be a whole number from 1 to 256');
      const grace = Number(opts.killGrace);
      if (!Number.isInteger(grace) || grace < 0 || grace > 3600) throw new UsageError('--kill-grace must be 0-3600 seconds');
      const giveUp = Number(opts.giveUp);
      if (!Number.isInteger(giveUp) || giveUp < 1 || giveUp > 86_400) throw new UsageError('--give-up must be 1-86400 seconds');
      const labels = (opts.labels ?? '').split(',').map((l) => l.trim()).filter(Boolean);
      const runAs = await commandUsers(opts.runAs, capacity);
      // The executor is a client of the HTTP API only: nothing of the server is loaded.
      const { ExecutorAgent } = await import('../runner/executor-agent/agent.js');
      const { jsonLogger } = await import('../runner/executor-agent/client.js');
      let agent: InstanceType<typeof ExecutorAgent>;
      try {
        agent = new ExecutorAgent({
          url,
          apiKey,
          name: (opts.name ?? 'executor').slice(0, 200),
          labels,
          capacity,
          workDir: path.resolve(opts.workDir ?? 'pier-executor'),
          command: opts.command,
          killGraceSeconds: grace,
          giveUpMs: giveUp * 1000,
          stateFile: opts.stateFile ? path.resolve(opts.stateFile) : undefined,
          shell: opts.shell,
          runAs,
          log: jsonLogger,
        });
      } catch (e) {
        // The shell is asked what it is at start: one that cannot run stops the executor here.
        if (e instanceof Error && e.message.startsWith('the shell ')) throw new UsageError(`--shell: ${e.message}`);
        throw e;
      }
      process.on('SIGTERM', () => agent.stop());
      process.on('SIGINT', () => agent.stop());
      // A bug must not leave commands running unsupervised (their runs are re-queued and would
      // run twice at once): kill every command's process group, say why in one line, exit.
      const fatal = (e: unknown) => {
        agent.killAllNow();
        jsonLogger('fatal', { error: e instanceof Error ? e.message : String(e) });
        process.exit(70);
      };
      process.on('uncaughtException', fatal);
      process.on('unhandledRejection', fatal);
      try {
        await agent.run();
      } catch (e) {
        // Every exit path first ends the commands still running (SIGTERM, SIGKILL after the grace).
        await agent.killAll();
        throw e;
      }
    });
}

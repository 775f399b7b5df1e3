import { Command } from 'commander';
import pkg from '../../package.json' with { type: 'json' };
import { runProgram } from './run-program.js';

const program = new Command('pier')
  .description('Pier: extension publishing service and workflow runner')
  .version(pkg.version)
  .showHelpAfterError();
program.exitOverride();

// `pier publish` runs in CI on every release and loads only its own modules: the server parts
// take about 2 s to load, longer than a re-publish of one changed file. So does `pier ci`
// (the generated pipelines run `pier ci label` before every publish).
const publishOnly = process.argv[2] === 'publish' || process.argv[2] === 'ci';
// `pier runner executor` too: an executor (re)started by its service manager is back at work
// without loading the server first.
const executorOnly = process.argv[2] === 'runner' && process.argv[3] === 'executor';
if (executorOnly) {
  const runner = program.command('runner').description('workflow runner administration');
  (await import('./executor-command.js')).registerExecutorCommand(runner);
} else if (!publishOnly) {
  (await import('./serve.js')).registerServeCommand(program);
  (await import('./staff.js')).registerStaffCommands(program);
  (await import('./runner.js')).registerRunnerCommands(program);
  (await import('./backup.js')).registerBackupCommands(program);
}
if (!executorOnly) {
  (await import('./publish/command.js')).registerPublishCommand(program);
  (await import('./ci-init/command.js')).registerCiCommands(program);
}

await runProgram(program);

import { Command, CommanderError } from 'commander';
import { ConfigError } from '../infra/config.js';
import { AppError, UsageError } from '../infra/errors.js';
import { registerRunnerCommands } from './runner.js';
import { registerServeCommand } from './serve.js';
import { registerStaffCommands } from './staff.js';
import pkg from '../../package.json' with { type: 'json' };

const program = new Command('pier')
  .description('Pier: extension publishing service and workflow runner')
  .version(pkg.version)
  .showHelpAfterError();
program.exitOverride();

registerServeCommand(program);
registerStaffCommands(program);
registerRunnerCommands(program);
(await import('./backup.js')).registerBackupCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode);
  if (err instanceof ConfigError) {
    console.error(`pier: configuration error: ${err.message}`);
    process.exit(78);
  }
  if (err instanceof AppError || err instanceof UsageError) {
    console.error(`pier: ${err.message}`);
    process.exit(1);
  }
  console.error(`pier: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}

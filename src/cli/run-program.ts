import { type Command, CommanderError } from 'commander';
import { ConfigError } from '../infra/config.js';
import { AppError, UsageError } from '../infra/errors.js';

/** Runs the parsed command line; errors become one `pier: …` line and an exit code (78: configuration). */
export async function runProgram(program: Command): Promise<void> {
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
}

import type { Command } from 'commander';

export function registerRunnerCommands(program: Command): void {
  program.command('runner').description('workflow runner administration');
}

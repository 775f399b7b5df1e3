import type { Command } from 'commander';
import { loadConfig } from '../infra/config.js';
import { UsageError } from '../infra/errors.js';
import { registerExecutorCommand } from './executor-command.js';
import { readNewPassword } from './prompt.js';

/** The first line of stdin (the password), without its line ending. */
async function readFirstLine(stream: NodeJS.ReadableStream = process.stdin): Promise<string> {
  let buf = '';
  for await (const chunk of stream) {
    buf += chunk.toString();
    const nl = buf.search(/\r?\n/);
    if (nl >= 0) return buf.slice(0, nl);
  }
  return buf;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function registerRunnerCommands(program: Command): void {
  const runner = program.command('runner').description('workflow runner administration');
  const user = runner.command('user').description('runner user accounts');
  user
    .command('add')
    .description('create a runner user; the password is asked twice without echo on a terminal, or read from the first line of piped stdin')
    .requiredOption('--email <email>', 'email address (the login)')
    .option('--name <name>', 'display name (default: the part of the email before @)')
    .option('--admin', 'make the user an administrator', false)
    .option('--json', 'print the created user as JSON', false)
    .action(async (opts: { email: string; name?: string; admin: boolean; json: boolean }) => {
      if (!EMAIL.test(opts.email) || opts.email.length > 254) throw new UsageError(`--email: "${opts.email}" is not an email address`);
      if (opts.name !== undefined && (!opts.name.trim() || opts.name.length > 200)) throw new UsageError('--name must be 1-200 characters');
      // On a terminal: asked twice, never echoed. Piped: the first line of stdin (scripts).
      const password = process.stdin.isTTY ? await readNewPassword() : await readFirstLine();
      if (password.length < 10 || password.length > 1024) {
        throw new UsageError('the password must be 10-1024 characters');
      }
      const config = loadConfig();
      // Loaded here, not with the command line: `pier --help` needs none of the runner's code.
      const [{ openRunnerDatabase }, { UsersRepository }, { presentUser }, { createUser }] = await Promise.all([
        import('../runner/db/index.js'),
        import('../runner/users/repository.js'),
        import('../runner/api/presenters.js'),
        import('../runner/users/service.js'),
      ]);
      const database = await openRunnerDatabase(config.runner.databaseUrl);
      try {
        const created = await createUser(
          new UsersRepository(database.db),
          { email: opts.email, name: opts.name, password, role: opts.admin ? 'admin' : 'member' },
          new Date(),
        );
        const out = presentUser(created);
        if (opts.json) process.stdout.write(`${JSON.stringify(out)}\n`);
        else process.stdout.write(`created ${out.role} ${out.email} (${out.id})\n`);
      } finally {
        await database.close();
      }
    });

  registerExecutorCommand(runner);
}

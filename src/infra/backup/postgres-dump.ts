import { spawn } from 'node:child_process';
import pg from 'pg';
import { libpqConnection, maskDatabaseUrl, withoutPassword } from './database-url.js';
import { BackupError } from './errors.js';

/**
 * PostgreSQL through its own tools: `pg_dump --format=custom` takes one consistent snapshot of
 * the whole database (a repeatable-read transaction) while the servers keep writing, and
 * `pg_restore` reads it back. The URL's password reaches them through PGPASSWORD, never their
 * command line.
 */

/** What to tell someone who has no pg_dump / pg_restore. */
function missingTool(tool: string): BackupError {
  return new BackupError(
    `${tool} is not installed, and PostgreSQL databases are ${tool === 'pg_dump' ? 'backed up' : 'restored'} with it. ` +
      'Install the PostgreSQL client programs of the server\'s major version or newer (Debian/Ubuntu: apt-get install postgresql-client; ' +
      'other systems: the "postgresql" client package) and run this again. ' +
      (tool === 'pg_dump'
        ? 'Without it, back up the database with the server\'s own means (a filesystem snapshot of its data directory, or pg_basebackup), ' +
          'then copy PIER_STORAGE_DIR and RUNNER_STORAGE_DIR.'
        : ''),
  );
}

interface ToolRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a PostgreSQL client tool against `url`; missing tool → the install message. */
function runTool(tool: string, url: string, args: string[]): Promise<ToolRun> {
  const { dbname, env } = libpqConnection(url);
  return new Promise((resolve, reject) => {
    const child = spawn(tool, [...args, `--dbname=${dbname}`], {
      // PGPASSWORD from the URL only: a PGPASSWORD of our own environment must not pick another user's password.
      env: { ...process.env, PGPASSWORD: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => {
      stdout += c;
    });
    child.stderr.on('data', (c) => {
      stderr += c;
    });
    child.on('error', (e: NodeJS.ErrnoException) => reject(e.code === 'ENOENT' ? missingTool(tool) : e));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Fails now, before any work, when `tool` cannot be run. */
export async function requireTool(tool: 'pg_dump' | 'pg_restore'): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn(tool, ['--version'], { stdio: 'ignore' });
    child.on('error', (e: NodeJS.ErrnoException) => reject(e.code === 'ENOENT' ? missingTool(tool) : e));
    child.on('close', () => resolve());
  });
}

function failure(what: string, url: string, run: ToolRun): BackupError {
  const said = withoutPassword(run.stderr.trim(), url);
  return new BackupError(`${what} of ${maskDatabaseUrl(url)} failed (exit code ${run.code}): ${said || 'no message'}`);
}

/** Tables of the connection's schema (current_schema(): where the migrations created ours). */
export async function postgresTables(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    const r = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name",
    );
    return r.rows.map((row) => row.table_name);
  } catch (e) {
    throw new BackupError(`cannot read the tables of ${maskDatabaseUrl(url)}: ${withoutPassword((e as Error).message, url)}`);
  } finally {
    await client.end().catch(() => {});
  }
}

/** Dumps the whole database to `file` (custom format: compressed, read by pg_restore). */
export async function dumpPostgres(url: string, file: string): Promise<void> {
  const run = await runTool('pg_dump', url, ['--format=custom', '--no-password', `--file=${file}`]);
  if (run.code !== 0) throw failure('pg_dump', url, run);
}

/**
 * Restores a dump into the (empty) database of `url` in one transaction: a failure leaves the
 * database as it was. Owners and grants of the source are not carried over: the tables belong
 * to the user of the URL, as if its migrations had created them.
 */
export async function restorePostgres(url: string, file: string): Promise<void> {
  const run = await runTool('pg_restore', url, ['--no-owner', '--no-privileges', '--exit-on-error', '--single-transaction', '--no-password', file]);
  if (run.code !== 0) throw failure('pg_restore', url, run);
}

/**
 * Whether pg_restore can read the dump's table of contents (`pg_restore --list`): null when it
 * can, else what it said. Nothing is connected to.
 */
export async function postgresDumpProblem(file: string): Promise<string | null> {
  const run = await new Promise<ToolRun>((resolve, reject) => {
    const child = spawn('pg_restore', ['--list', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.resume();
    child.stderr.on('data', (c) => {
      stderr += c;
    });
    child.on('error', (e: NodeJS.ErrnoException) => reject(e.code === 'ENOENT' ? missingTool('pg_restore') : e));
    child.on('close', (code) => resolve({ code, stdout: '', stderr }));
  });
  return run.code === 0 ? null : run.stderr.trim() || `pg_restore --list ended with exit code ${run.code}`;
}

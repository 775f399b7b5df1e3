import { type Database, openMigratedDatabase } from '../../infra/database/index.js';
import { runnerMigrations } from './migrations.js';
import type { RunnerDB } from './schema.js';

export type RunnerDatabase = Database<RunnerDB>;

/** Prefix of the runner's migration tables (`runner_migrations`): the publishing service may share the database. */
export const RUNNER_MIGRATION_TABLE = 'runner';

/** Opens the runner database and brings its schema up to date (migrations run at start). */
export function openRunnerDatabase(url: string): Promise<RunnerDatabase> {
  return openMigratedDatabase<RunnerDB>(url, RUNNER_MIGRATION_TABLE, runnerMigrations);
}

/** True for a unique-constraint violation on either dialect. */
export function isUniqueViolation(e: unknown): boolean {
  const err = e as { code?: string; message?: string };
  return err?.code === '23505' || err?.code === 'SQLITE_CONSTRAINT_UNIQUE' || err?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

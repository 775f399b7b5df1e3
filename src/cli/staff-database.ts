import type { Config } from '../infra/config.js';
import { describeDatabaseUrl, hasSchema } from '../infra/database/exists.js';
import { UsageError } from '../infra/errors.js';
import { PUBLISHING_MIGRATION_TABLE } from '../publishing/db.js';

type Env = Record<string, string | undefined>;

/** Where the data directory came from, said so that a command run in the wrong folder is noticed. */
function dataDirOrigin(config: Config, env: Env): string {
  return env.PIER_DATA_DIR ? `data directory ${config.dataDir} (PIER_DATA_DIR)` : `data directory ${config.dataDir} (PIER_DATA_DIR is unset: ./data of the working directory)`;
}

/**
 * Says on stderr which data directory and publishing database `pier staff` uses (stdout stays
 * the command's answer, `--json` included). A database that does not exist yet (no SQLite file;
 * a PostgreSQL database without Pier's tables) is created only by a command that may start a
 * registry (`create`: register, set-release); any other command refuses and creates nothing, so
 * a command run in another folder says so instead of answering from an empty new registry.
 */
export async function checkStaffDatabase(config: Config, options: { create: boolean }, env: Env = process.env): Promise<void> {
  const url = config.publishing.databaseUrl;
  const where = env.PIER_DATABASE_URL ? `publishing database ${describeDatabaseUrl(url)} (PIER_DATABASE_URL)` : `publishing database ${url}`;
  const origin = dataDirOrigin(config, env);
  const exists = await hasSchema(url, PUBLISHING_MIGRATION_TABLE);
  if (exists) {
    process.stderr.write(`pier: ${where}; ${origin}\n`);
    return;
  }
  if (!options.create) {
    throw new UsageError(
      `no ${where} exists yet; ${origin}. Nothing was created. Run this command with the server's settings (PIER_DATA_DIR, or PIER_DATABASE_URL), or where its data directory is.`,
    );
  }
  process.stderr.write(`pier: creating a new ${where}; ${origin}\n`);
}

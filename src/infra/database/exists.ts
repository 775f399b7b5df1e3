import fsp from 'node:fs/promises';
import pg from 'pg';
import { isPostgresUrl } from './index.js';

/**
 * Whether the database at `url` already holds a product's schema (its migration table
 * `<table>_migrations`, see `migrate`), without creating anything: a SQLite file is only looked
 * at, a PostgreSQL database only asked. For commands that must not create a database by mistake.
 */
export async function hasSchema(url: string, table: string): Promise<boolean> {
  if (!isPostgresUrl(url)) {
    const st = await fsp.stat(url).catch(() => null);
    return st?.isFile() === true && st.size > 0;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const r = await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [`${table}_migrations`]);
    return typeof r.rows[0]?.t === 'string';
  } finally {
    await client.end();
  }
}

/** A database URL fit for a log or a message: a PostgreSQL URL without its password. */
export function describeDatabaseUrl(url: string): string {
  if (!isPostgresUrl(url)) return url;
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}

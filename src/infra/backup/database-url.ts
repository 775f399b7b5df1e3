import path from 'node:path';
import { isPostgresUrl } from '../database/index.js';

/**
 * The URL with its password replaced by `***`: database URLs may hold one, and a backup prints
 * and records where each database came from. SQLite paths are returned as they are.
 */
export function maskDatabaseUrl(url: string): string {
  if (!isPostgresUrl(url)) return url;
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    // node-pg also takes the password as a query parameter.
    if (u.searchParams.has('password')) u.searchParams.set('password', '***');
    return u.toString();
  } catch {
    return 'postgres://(unreadable URL)';
  }
}

/**
 * Which database a URL names, whoever connects: the same SQLite file, or the same PostgreSQL
 * database on the same server (user and password do not matter). Both products may share one
 * database, and a backup then dumps it once.
 */
export function databaseIdentity(url: string): string {
  if (!isPostgresUrl(url)) return `sqlite:${path.resolve(url)}`;
  const u = new URL(url);
  const name = decodeURIComponent(u.pathname.replace(/^\//, '')) || decodeURIComponent(u.username) || 'postgres';
  return `postgres:${u.hostname.toLowerCase()}:${u.port || '5432'}/${name}`;
}

/**
 * libpq settings for a PostgreSQL URL with the password moved out of it: the URL goes on the
 * command line of pg_dump/pg_restore (visible to every user in `ps`), the password in the
 * child's environment (PGPASSWORD) only.
 */
export function libpqConnection(url: string): { dbname: string; env: Record<string, string> } {
  const u = new URL(url);
  const password = decodeURIComponent(u.password) || (u.searchParams.get('password') ?? '');
  u.password = '';
  u.searchParams.delete('password');
  return { dbname: u.toString(), env: password ? { PGPASSWORD: password } : {} };
}

/** `text` with every occurrence of the URL's password replaced (tool messages echo what they were given). */
export function withoutPassword(text: string, url: string): string {
  if (!isPostgresUrl(url)) return text;
  let password = '';
  try {
    const u = new URL(url);
    password = decodeURIComponent(u.password) || (u.searchParams.get('password') ?? '');
  } catch {
    return text;
  }
  return password ? text.split(password).join('***') : text;
}

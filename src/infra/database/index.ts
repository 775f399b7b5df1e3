import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { type CompiledQuery, Kysely, type Migration, Migrator, PostgresDialect, sql } from 'kysely';
import { FifoSqliteDialect, SQLITE_BUSY_TIMEOUT_MS } from './sqlite-driver.js';
import { countingWrites, WriteCounter } from './write-counter.js';
import pg from 'pg';

export type DialectName = 'sqlite' | 'postgres';

export interface Database<DB> {
  db: Kysely<DB>;
  dialect: DialectName;
  /** See `preparedRead`: a compiled read run synchronously on an idle SQLite connection, else null. */
  readNow: ReadNow;
  /** Writes this process finished through `db` (write-counter.ts): caches built from the database check it. */
  writes: WriteCounter;
  /** Null when the database answers a trivial query, else why not (readiness, infra/readiness.ts). */
  ping(): Promise<string | null>;
  close(): Promise<void>;
}

/** `ping` of a Kysely handle: the reason is generic (readiness answers are public), the error is kept for the log. */
function pinger(db: Kysely<unknown>, onError: (e: unknown) => void): () => Promise<string | null> {
  return async () => {
    try {
      await sql`select 1`.execute(db);
      return null;
    } catch (e) {
      onError(e);
      return 'the database does not answer';
    }
  };
}

const warnPing = (e: unknown) => process.emitWarning(`readiness: database check failed: ${e instanceof Error ? e.message : String(e)}`);

export type ReadNow = <R>(compiled: CompiledQuery<R>, values: readonly unknown[]) => R[] | null;

const neverNow: ReadNow = () => null;

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}

// pg returns int8/numeric as strings to avoid precision loss; our counts fit in a double.
pg.types.setTypeParser(20, (v) => Number.parseInt(v, 10));

/**
 * Kysely prepares every query anew; with better-sqlite3 preparing costs about as much as running
 * a small query, so statements are kept per SQL text (a bounded map; our SQL has few shapes).
 */
function withStatementCache(sqlite: SQLite.Database): SQLite.Database {
  const cache = new Map<string, SQLite.Statement>();
  const prepare = sqlite.prepare.bind(sqlite);
  const cachedPrepare = (source: string) => {
    let stmt = cache.get(source);
    if (!stmt) {
      stmt = prepare(source);
      if (cache.size >= 500) cache.delete(cache.keys().next().value as string);
      cache.set(source, stmt);
    }
    return stmt;
  };
  return new Proxy(sqlite, {
    get: (target, prop, receiver) => (prop === 'prepare' ? cachedPrepare : Reflect.get(target, prop, receiver)),
  });
}

/** Opens a database: `postgres://…` → a pg pool; anything else is a SQLite file (`:memory:` allowed). */
export function openDatabase<DB>(url: string): Database<DB> {
  if (isPostgresUrl(url)) {
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    // An idle client losing its connection (server restart, DROP … WITH FORCE) emits 'error' on
    // the pool; unhandled, that would crash the process. The pool replaces the client itself.
    pool.on('error', (err) => process.emitWarning(`PostgreSQL idle client error: ${err.message}`));
    // A checked-out client whose connection dies between statements emits 'error' on itself,
    // where the pool does not listen; the query in flight (if any) fails on its own.
    pool.on('connect', (client) => {
      client.on('error', (err) => process.emitWarning(`PostgreSQL connection error: ${err.message}`));
    });
    const writes = new WriteCounter();
    const db = new Kysely<DB>({ dialect: countingWrites(new PostgresDialect({ pool }), writes) });
    return { db, dialect: 'postgres', readNow: neverNow, writes, ping: pinger(db as Kysely<unknown>, warnPing), close: () => db.destroy() };
  }
  if (url !== ':memory:') fs.mkdirSync(path.dirname(url), { recursive: true });
  const sqlite = new SQLite(url);
  // WAL lets the staff CLI write while the server reads; busy_timeout waits instead of failing.
  sqlite.pragma('journal_mode = WAL');
  // A short synchronous wait for another process's write lock; the rest is waited on timers
  // (sqlite-driver.ts retryWhileBusy), so the event loop keeps serving meanwhile.
  sqlite.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('synchronous = NORMAL');
  const cached = withStatementCache(sqlite);
  const dialect = new FifoSqliteDialect({ database: cached });
  const writes = new WriteCounter();
  const db = new Kysely<DB>({ dialect: countingWrites(dialect, writes) });
  const readNow: ReadNow = <R>(compiled: CompiledQuery<R>, values: readonly unknown[]) =>
    dialect.idle ? (cached.prepare(compiled.sql).all(...values) as R[]) : null;
  return { db, dialect: 'sqlite', readNow, writes, ping: pinger(db as Kysely<unknown>, warnPing), close: () => db.destroy() };
}

/**
 * Runs the ordered, forward-only migrations of one product. Each product keeps its own
 * migration table so the publishing service and the runner may share one PostgreSQL database.
 */
export async function migrate<DB>(
  db: Kysely<DB>,
  table: string,
  migrations: Record<string, Migration>,
): Promise<void> {
  const migrator = new Migrator({
    db,
    migrationTableName: `${table}_migrations`,
    migrationLockTableName: `${table}_migrations_lock`,
    provider: { getMigrations: async () => migrations },
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`migration ${failed} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Opens a database and brings its schema up to date; closes it again if a migration fails. */
async function openMigratedAlone<DB>(url: string, table: string, migrations: Record<string, Migration>): Promise<Database<DB>> {
  const database = openDatabase<DB>(url);
  try {
    await migrate(database.db, table, migrations);
  } catch (e) {
    await database.close();
    throw e;
  }
  return database;
}

/**
 * Whether parts of this process share one handle per SQLite file (`shareSqliteHandles`), and
 * the handles shared so far with how many parts hold each.
 */
let shareSqlite = false;
const sharedSqlite = new Map<string, { database: Promise<Database<unknown>>; users: number }>();

/**
 * From now on, the parts this process starts share one handle per SQLite file (`pier serve`:
 * the web part and the SFTP part both open the publishing database). Two handles on one file in
 * one process deadlock: a transaction of one holds the write lock while it waits for the event
 * loop, and the other's write waits for the lock synchronously, blocking that loop until
 * busy_timeout ends it with SQLITE_BUSY (a PATCH during an upload failed with a 500). One handle
 * queues its transactions instead (sqlite-driver.ts). Tests leave this off, so that a second
 * handle stands for another process as it should.
 */
export function shareSqliteHandles(): void {
  shareSqlite = true;
}

/** Opens a database and brings its schema up to date (see `shareSqliteHandles` for SQLite files). */
export async function openMigratedDatabase<DB>(
  url: string,
  table: string,
  migrations: Record<string, Migration>,
): Promise<Database<DB>> {
  if (!shareSqlite || isPostgresUrl(url) || url === ':memory:') return openMigratedAlone<DB>(url, table, migrations);
  const key = `${path.resolve(url)}\u0000${table}`;
  let entry = sharedSqlite.get(key);
  if (!entry) {
    const opening = openMigratedAlone<unknown>(url, table, migrations);
    entry = { database: opening, users: 0 };
    sharedSqlite.set(key, entry);
    opening.catch(() => sharedSqlite.delete(key));
  }
  const held = entry;
  const database = (await held.database) as Database<DB>;
  held.users++;
  let closed = false;
  return {
    ...database,
    async close() {
      if (closed) return;
      closed = true;
      held.users--;
      if (held.users > 0) return;
      sharedSqlite.delete(key);
      await database.close();
    },
  };
}

/**
 * A read on a hot path (token and session look-ups on every request): compiled by Kysely once,
 * then run with new values. On SQLite it runs synchronously when the connection is idle, which
 * skips Kysely's promise pipeline and queue (about half the cost of an authenticated request,
 * bench/runner-auth.ts); otherwise, and on PostgreSQL, it goes through Kysely as usual.
 */
export function preparedRead<R>(
  database: { db: Pick<Kysely<unknown>, 'executeQuery'>; readNow: ReadNow },
  compiled: CompiledQuery<R>,
): (values: readonly unknown[]) => Promise<R[]> {
  return async (values) =>
    database.readNow(compiled, values) ?? (await database.db.executeQuery(withParameters(compiled, values))).rows;
}

/**
 * A query compiled once and run with new parameter values: building and compiling a Kysely
 * query costs more than running it on SQLite, which matters on hot paths (token lookups on
 * every request). `compiled` must have exactly as many parameters as `values`.
 */
export function withParameters<R>(compiled: CompiledQuery<R>, values: readonly unknown[]): CompiledQuery<R> {
  if (compiled.parameters.length !== values.length) {
    throw new Error(`prepared query expects ${compiled.parameters.length} parameters, got ${values.length}`);
  }
  return { ...compiled, parameters: values };
}

import type { CompiledQuery, DatabaseConnection, Dialect, Driver, QueryCompiler, QueryResult, TransactionSettings } from 'kysely';

/**
 * Counts the writes this process finished through one database handle: a caller that saw the
 * count change knows that something it may have cached from the database could be older than
 * what is there now (the pages' freshness check, web/page-changes.ts, is cut short by it).
 *
 * A connection that ran anything but a SELECT counts once when it is handed back, which Kysely
 * does after the statement (auto-commit) or after COMMIT / ROLLBACK of a transaction: so the
 * count moves only once the write is visible to every other connection. A rolled-back write
 * counts too (a needless re-check, never a missed one).
 */
export class WriteCounter {
  count = 0;
}

const READ = /^\s*select\b/i;

class CountedConnection implements DatabaseConnection {
  wrote = false;

  constructor(readonly inner: DatabaseConnection) {}

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    if (!READ.test(compiledQuery.sql)) this.wrote = true;
    return this.inner.executeQuery<R>(compiledQuery);
  }

  streamQuery<R>(compiledQuery: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    if (!READ.test(compiledQuery.sql)) this.wrote = true;
    return this.inner.streamQuery<R>(compiledQuery, chunkSize);
  }
}

const innerOf = (c: DatabaseConnection) => (c instanceof CountedConnection ? c.inner : c);

class CountingDriver implements Driver {
  constructor(
    readonly inner: Driver,
    readonly counter: WriteCounter,
  ) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new CountedConnection(await this.inner.acquireConnection());
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    try {
      await this.inner.releaseConnection(innerOf(connection));
    } finally {
      if (connection instanceof CountedConnection && connection.wrote) this.counter.count++;
    }
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.inner.beginTransaction(innerOf(connection), settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.inner.commitTransaction(innerOf(connection));
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.inner.rollbackTransaction(innerOf(connection));
  }

  async savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    await this.inner.savepoint?.(innerOf(connection), name, compile);
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    await this.inner.rollbackToSavepoint?.(innerOf(connection), name, compile);
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    await this.inner.releaseSavepoint?.(innerOf(connection), name, compile);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

/** `dialect` with its driver wrapped so that `counter` counts finished writes (see WriteCounter). */
export function countingWrites(dialect: Dialect, counter: WriteCounter): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new CountingDriver(dialect.createDriver(), counter),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}

import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryCompiler,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
  type TransactionSettings,
} from 'kysely';

/** How long a statement waits for another process's write lock before it fails, in all. */
export const SQLITE_LOCK_WAIT_MS = 5000;
/**
 * The synchronous part of that wait (busy_timeout, set where the file is opened): the thread
 * sleeps in SQLite meanwhile, so it is kept short; past it the statement is tried again after a
 * timer, and the event loop serves other requests while another process (the download host, the
 * SFTP server's own process, the staff CLI) finishes its write.
 */
export const SQLITE_BUSY_TIMEOUT_MS = 10;

const isBusy = (e: unknown) => (e as { code?: string })?.code === 'SQLITE_BUSY';

/** Runs `attempt` until it does not fail with SQLITE_BUSY, waiting on timers, up to SQLITE_LOCK_WAIT_MS. */
async function retryWhileBusy<T>(attempt: () => Promise<T>): Promise<T> {
  const until = performance.now() + SQLITE_LOCK_WAIT_MS;
  for (let pause = 1; ; pause = Math.min(pause * 2, 50)) {
    try {
      return await attempt();
    } catch (e) {
      if (!isBusy(e) || performance.now() >= until) throw e;
    }
    await new Promise((r) => setTimeout(r, pause));
  }
}

/**
 * The connection, with statements outside a transaction tried again while another process holds
 * the write lock (SQLITE_BUSY means the statement did nothing, so running it again is safe).
 * Inside a transaction the lock is already held (IMMEDIATE, see `beginTransaction`).
 */
function lockWaiting(connection: DatabaseConnection, inTransaction: () => boolean): DatabaseConnection {
  return {
    executeQuery: (query) => (inTransaction() ? connection.executeQuery(query) : retryWhileBusy(() => connection.executeQuery(query))),
    streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
  };
}

/**
 * Kysely's SQLite driver guards its single connection with a mutex whose waiters all wake on
 * every release and race for it again; with 32 concurrent requests that is hundreds of wake-ups
 * per query and it halved the throughput of token look-ups (bench/runner-auth.ts). This driver
 * hands the connection to the next waiter in FIFO order instead. Everything else is Kysely's.
 */
class FifoSqliteDriver implements Driver {
  readonly #inner: SqliteDriver;
  #connection: DatabaseConnection | undefined;
  #locked = false;
  #inTransaction = false;
  readonly #waiters: (() => void)[] = [];

  constructor(config: SqliteDialectConfig) {
    this.#inner = new SqliteDriver(config);
  }

  async init(): Promise<void> {
    await this.#inner.init();
    // Held for the driver's lifetime; exclusivity is managed here.
    this.#connection = lockWaiting(await this.#inner.acquireConnection(), () => this.#inTransaction);
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#locked) await new Promise<void>((resolve) => this.#waiters.push(resolve));
    this.#locked = true;
    return this.#connection!;
  }

  /** True when no query or transaction holds the connection right now. */
  get idle(): boolean {
    return !this.#locked && this.#connection !== undefined;
  }

  async releaseConnection(): Promise<void> {
    const next = this.#waiters.shift();
    // Ownership passes straight to the next waiter; the lock stays taken.
    if (next) next();
    else this.#locked = false;
  }

  async beginTransaction(connection: DatabaseConnection, _settings: TransactionSettings): Promise<void> {
    // SQLite has no isolation levels to set; Kysely's driver ignores the settings too.
    // IMMEDIATE: the write lock is taken (waiting up to busy_timeout) when the transaction
    // starts. A deferred transaction that reads and then writes while another process (the
    // download host, the SFTP server's own process, the staff CLI) committed in between fails at
    // once with SQLITE_BUSY: in WAL mode its snapshot cannot become a writer, and SQLite does
    // not wait for that. Outside a transaction, the connection waits for the lock on timers (`lockWaiting`).
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    this.#inTransaction = true;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await this.#inner.commitTransaction(connection);
    this.#inTransaction = false;
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    this.#inTransaction = false;
    await this.#inner.rollbackTransaction(connection);
  }

  savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.#inner.savepoint(connection, name, compile);
  }

  rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.#inner.rollbackToSavepoint(connection, name, compile);
  }

  releaseSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return this.#inner.releaseSavepoint(connection, name, compile);
  }

  async destroy(): Promise<void> {
    if (this.#connection) await this.#inner.releaseConnection();
    await this.#inner.destroy();
  }
}

export class FifoSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;
  #driver: FifoSqliteDriver | undefined;

  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }

  override createDriver(): Driver {
    this.#driver = new FifoSqliteDriver(this.#config);
    return this.#driver;
  }

  /**
   * Whether a synchronous statement may run now: nothing holds the connection, so it cannot
   * land inside another request's open transaction (JavaScript runs nothing else meanwhile).
   */
  get idle(): boolean {
    return this.#driver?.idle ?? false;
  }
}

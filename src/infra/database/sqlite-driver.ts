import {
  type DatabaseConnection,
  type Driver,
  type QueryCompiler,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
  type TransactionSettings,
} from 'kysely';

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
  readonly #waiters: (() => void)[] = [];

  constructor(config: SqliteDialectConfig) {
    this.#inner = new SqliteDriver(config);
  }

  async init(): Promise<void> {
    await this.#inner.init();
    // Held for the driver's lifetime; exclusivity is managed here.
    this.#connection = await this.#inner.acquireConnection();
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

  beginTransaction(connection: DatabaseConnection, _settings: TransactionSettings): Promise<void> {
    // SQLite has no isolation levels to set; Kysely's driver ignores the settings too.
    return this.#inner.beginTransaction(connection);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.#inner.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.#inner.rollbackTransaction(connection);
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

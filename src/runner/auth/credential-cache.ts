import type { CompiledQuery, Kysely } from 'kysely';
import type { RunnerDatabase } from '../db/index.js';
import type { RunnerDB } from '../db/schema.js';

/**
 * Credential changes made in this process, through any connection (see `bumpCredentialEpoch`).
 * Raised as soon as the change's statement has run, so that the next request reads the counter
 * again instead of reusing a recent read (`CredentialEpoch.current`).
 */
let changesInThisProcess = 0;

/**
 * Raises the credentials counter. Call it inside the transaction that revokes, expires or
 * changes a credential or its user (revoke, password, role, profile, delete): the change and the
 * signal commit together, so a crash between them cannot lose the signal, and no file or process
 * outside the database can make an instance miss it.
 */
export async function bumpCredentialEpoch(trx: Kysely<RunnerDB>): Promise<void> {
  await trx
    .updateTable('runner_counters')
    .set((eb) => ({ value: eb('value', '+', 1) }))
    .where('name', '=', 'credentials')
    .execute();
  changesInThisProcess++;
}

/**
 * How long a read of the credentials counter answers for the requests that follow it. Each read
 * is a SQLite read transaction: two fcntl locks and an fstat, ~6 µs of CPU in the bench against
 * ~25 µs for the whole request (bench/runner-auth.ts), so reading it per request alone put the
 * overhead of token authentication over 20%. Reused for 1 ms, it is read at most 1000 times a
 * second whatever the load.
 *
 * What that relaxes, and by how much (DESIGN.md asks that changes by another process show on the
 * next request):
 *  - a change committed through this instance's own connection is still refused on the next
 *    request: its `bumpCredentialEpoch` forces a new read, and that read cannot run before the
 *    commit (the transaction holds the connection, `readNow` answers null, and the request reads
 *    the database, after the commit);
 *  - a change committed by any other connection (the `pier` CLI, another instance on the same
 *    SQLite file) is refused by every request authenticated 1 ms or more after its commit; one
 *    authenticated within that millisecond may still pass. A writer in this process (another
 *    connection, as tests and in-process instances use) that committed before the request is
 *    seen at once, unless a read of the counter fell between its statement and its commit.
 */
export const EPOCH_REUSE_MS = 1;

/**
 * The credentials counter as read on the authentication hot path. On SQLite it is one indexed
 * read run synchronously on the idle connection, reused for `EPOCH_REUSE_MS`; when the
 * connection is busy it answers null and the request reads the database itself.
 *
 * PostgreSQL deployments: reading the counter would cost the same round trip as the look-up it
 * saves, so the epoch is always null there and every request reads the database.
 */
export class CredentialEpoch {
  private readonly query: CompiledQuery<{ value: number }> | null;
  private value = 0;
  /** `monotonicMs()` taken before the last successful read; -Infinity: never read. */
  private readAtMs = Number.NEGATIVE_INFINITY;
  /** `changesInThisProcess` as it was before that read. */
  private changesSeen = -1;

  constructor(
    private readonly database: Pick<RunnerDatabase, 'db' | 'dialect' | 'readNow'>,
    private readonly reuseMs = EPOCH_REUSE_MS,
    /** Monotonic milliseconds: a wall clock set back must not stretch the reuse (tests move it). */
    private readonly monotonicMs: () => number = () => performance.now(),
  ) {
    this.query =
      database.dialect === 'sqlite'
        ? database.db.selectFrom('runner_counters').select('value').where('name', '=', 'credentials').compile()
        : null;
  }

  /** The current epoch, or null when it cannot be read at once. Read it before the database. */
  current(): number | null {
    if (this.query === null) return null;
    const nowMs = this.monotonicMs();
    const changes = changesInThisProcess;
    if (changes === this.changesSeen && nowMs - this.readAtMs < this.reuseMs) return this.value;
    const rows = this.database.readNow(this.query, this.query.parameters);
    const value = rows?.[0]?.value;
    if (value === undefined) return null;
    // Stamped with the time before the read: the read is at least that fresh.
    this.value = Number(value);
    this.readAtMs = nowMs;
    this.changesSeen = changes;
    return this.value;
  }
}

/**
 * Authentication look-ups remembered for as long as the epoch they were read at is current.
 * Only hits are kept (an unknown token always reads the database), and expiry is still checked
 * against the clock by the caller.
 */
export class CredentialCache<V> {
  private readonly entries = new Map<string, { value: V; epoch: number }>();
  private seenEpoch = -1;

  constructor(private readonly maxEntries = 10_000) {}

  get(key: string, epoch: number | null): V | undefined {
    if (epoch === null || epoch < this.seenEpoch) return undefined;
    this.forgetOlderThan(epoch);
    return this.entries.get(key)?.value;
  }

  set(key: string, value: V, epoch: number | null): void {
    // An epoch older than one already seen means a change landed meanwhile: do not keep it.
    if (epoch === null || epoch < this.seenEpoch) return;
    this.forgetOlderThan(epoch);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, { value, epoch });
  }

  private forgetOlderThan(epoch: number): void {
    if (epoch > this.seenEpoch) {
      this.entries.clear();
      this.seenEpoch = epoch;
    }
  }
}

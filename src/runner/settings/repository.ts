import type { Kysely } from 'kysely';
import type { RunnerDB } from '../db/schema.js';

function checkedPrefix(prefix: string): string {
  if (/[%_\\]/.test(prefix)) throw new Error(`a settings prefix holds no LIKE wildcard: ${prefix}`);
  return prefix;
}

/**
 * Values every instance of one runner must agree on (generated secrets), kept in the database
 * they share rather than in one instance's data dir (DESIGN.md, Processes and ports).
 */
export class SettingsRepository {
  constructor(private readonly db: Kysely<RunnerDB>) {}

  async get(key: string): Promise<string | undefined> {
    return (await this.db.selectFrom('runner_meta').select('value').where('key', '=', key).executeTakeFirst())?.value;
  }

  /** Stores `value` under `key`, replacing what was there. */
  async set(key: string, value: string): Promise<void> {
    await this.db
      .insertInto('runner_meta')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
      .execute();
  }

  async delete(key: string): Promise<void> {
    await this.db.deleteFrom('runner_meta').where('key', '=', key).execute();
  }

  /**
   * Every key that starts with `prefix`, with its value. The prefix must hold no LIKE wildcard
   * (`%`, `_`): it is matched as a LIKE pattern on both databases.
   */
  async listPrefixed(prefix: string): Promise<{ key: string; value: string }[]> {
    return this.db.selectFrom('runner_meta').select(['key', 'value']).where('key', 'like', `${checkedPrefix(prefix)}%`).execute();
  }

  /** Deletes every key that starts with `prefix` (no LIKE wildcard in it, as for `listPrefixed`). */
  async deletePrefixed(prefix: string): Promise<void> {
    await this.db.deleteFrom('runner_meta').where('key', 'like', `${checkedPrefix(prefix)}%`).execute();
  }

  /**
   * The stored value of `key`, storing `initial()` first if there is none. Instances starting at
   * the same time race on the primary key; every one of them ends up with the winner's value.
   */
  async getOrCreate(key: string, initial: () => string): Promise<string> {
    const existing = await this.get(key);
    if (existing !== undefined) return existing;
    await this.db
      .insertInto('runner_meta')
      .values({ key, value: initial() })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    const value = await this.get(key);
    if (value === undefined) throw new Error(`setting ${key} could not be stored`);
    return value;
  }
}

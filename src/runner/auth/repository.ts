import type { Kysely, Selectable } from 'kysely';
import type { OAuthAccessTokensTable, PersonalTokensTable, RunnerDB } from '../db/schema.js';

export type PersonalTokenRow = Selectable<PersonalTokensTable>;
export type OAuthAccessTokenRow = Selectable<OAuthAccessTokensTable>;
export type TokenScope = 'read' | 'write';

/** Personal access tokens. Looked up by the SHA-256 of the secret through a unique index. */
export class PersonalTokensRepository {
  constructor(private readonly db: Kysely<RunnerDB>) {}

  async insert(row: Omit<PersonalTokenRow, 'revoked_at' | 'last_used_at' | 'last_used_ip'>): Promise<PersonalTokenRow> {
    const full: PersonalTokenRow = { ...row, revoked_at: null, last_used_at: null, last_used_ip: null };
    await this.db.insertInto('personal_tokens').values(full).execute();
    return full;
  }

  findByHash(hash: string): Promise<PersonalTokenRow | undefined> {
    return this.db.selectFrom('personal_tokens').selectAll().where('token_hash', '=', hash).executeTakeFirst();
  }

  /** The user's tokens that still count (not revoked), newest first; expired ones are listed too. */
  listForUser(userId: string): Promise<PersonalTokenRow[]> {
    return this.db
      .selectFrom('personal_tokens')
      .selectAll()
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
  }

  async revoke(userId: string, id: string, now: string): Promise<boolean> {
    const r = await this.db
      .updateTable('personal_tokens')
      .set({ revoked_at: now })
      .where('id', '=', id)
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Writes last use unless another request did so since `notBefore` (at most one write per window). */
  async touch(id: string, now: string, ip: string, notBefore: string): Promise<void> {
    await this.db
      .updateTable('personal_tokens')
      .set({ last_used_at: now, last_used_ip: ip })
      .where('id', '=', id)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', notBefore)]))
      .execute();
  }
}

/**
 * OAuth access tokens. The authorization server that issues them comes in a later issue; the
 * API already accepts them so that issue only has to insert rows.
 */
export class OAuthTokensRepository {
  constructor(private readonly db: Kysely<RunnerDB>) {}

  async insert(row: Omit<OAuthAccessTokenRow, 'revoked_at'>): Promise<OAuthAccessTokenRow> {
    const full: OAuthAccessTokenRow = { ...row, revoked_at: null };
    await this.db.insertInto('oauth_access_tokens').values(full).execute();
    return full;
  }

  findByHash(hash: string): Promise<OAuthAccessTokenRow | undefined> {
    return this.db.selectFrom('oauth_access_tokens').selectAll().where('token_hash', '=', hash).executeTakeFirst();
  }

  async revoke(id: string, now: string): Promise<boolean> {
    const r = await this.db
      .updateTable('oauth_access_tokens')
      .set({ revoked_at: now })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }
}

import type { Kysely, Selectable } from 'kysely';
import { preparedRead } from '../../infra/database/index.js';
import type { OAuthAccessTokensTable, PersonalTokensTable, RunnerDB } from '../db/schema.js';
import type { HotPathOptions, UserRow } from '../users/repository.js';
import { bumpCredentialEpoch } from './credential-cache.js';

export type PersonalTokenRow = Selectable<PersonalTokensTable>;
export type OAuthAccessTokenRow = Selectable<OAuthAccessTokensTable>;
export type TokenScope = 'read' | 'write';

/** Personal access tokens. Looked up by the SHA-256 of the secret through a unique index. */
export class PersonalTokensRepository {
  /** Looked up on every PAT request: compiled once (see preparedRead). */
  private readonly withUser;

  constructor(
    private readonly db: Kysely<RunnerDB>,
    hot: HotPathOptions = {},
  ) {
    const query = db
      .selectFrom('personal_tokens as t')
      .innerJoin('users as u', 'u.id', 't.user_id')
      .select([
        't.id', 't.user_id', 't.name as t_name', 't.scope', 't.token_hash', 't.token_hint', 't.created_at as t_created_at',
        't.expires_at', 't.revoked_at', 't.last_used_at', 't.last_used_ip',
        'u.email', 'u.name as u_name', 'u.password_hash', 'u.role', 'u.session_epoch', 'u.disabled_at', 'u.created_at as u_created_at', 'u.updated_at',
      ])
      .where('t.token_hash', '=', '')
      .compile();
    this.withUser = preparedRead({ db, readNow: hot.readNow ?? (() => null) }, query);
  }

  async insert(row: Omit<PersonalTokenRow, 'revoked_at' | 'last_used_at' | 'last_used_ip'>): Promise<PersonalTokenRow> {
    const full: PersonalTokenRow = { ...row, revoked_at: null, last_used_at: null, last_used_ip: null };
    await this.db.insertInto('personal_tokens').values(full).execute();
    return full;
  }

  findByHash(hash: string): Promise<PersonalTokenRow | undefined> {
    return this.db.selectFrom('personal_tokens').selectAll().where('token_hash', '=', hash).executeTakeFirst();
  }

  /** The token and its user in one indexed query. */
  async findWithUser(hash: string): Promise<{ token: PersonalTokenRow; user: UserRow } | undefined> {
    const row = (await this.withUser([hash]))[0];
    if (!row) return undefined;
    return {
      token: {
        id: row.id, user_id: row.user_id, name: row.t_name, scope: row.scope, token_hash: row.token_hash, token_hint: row.token_hint,
        created_at: row.t_created_at, expires_at: row.expires_at, revoked_at: row.revoked_at, last_used_at: row.last_used_at,
        last_used_ip: row.last_used_ip,
      },
      user: {
        id: row.user_id, email: row.email, name: row.u_name, password_hash: row.password_hash, role: row.role,
        session_epoch: row.session_epoch, disabled_at: row.disabled_at, created_at: row.u_created_at, updated_at: row.updated_at,
      },
    };
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
    return this.db.transaction().execute(async (trx) => {
      const r = await trx
        .updateTable('personal_tokens')
        .set({ revoked_at: now })
        .where('id', '=', id)
        .where('user_id', '=', userId)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0) return false;
      await bumpCredentialEpoch(trx);
      return true;
    });
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

/** OAuth access tokens as the API looks them up; the authorization server (oauth/) issues them. */
export class OAuthTokensRepository {
  /** The token and its user, looked up on every OAuth request the caches do not answer: compiled once (see preparedRead). */
  private readonly withUser;

  constructor(
    private readonly db: Kysely<RunnerDB>,
    hot: HotPathOptions = {},
  ) {
    this.withUser = preparedRead(
      { db, readNow: hot.readNow ?? (() => null) },
      db
        .selectFrom('oauth_access_tokens as t')
        .innerJoin('users as u', 'u.id', 't.user_id')
        .select([
          't.id', 't.user_id', 't.client_id', 't.scope', 't.token_hash', 't.created_at as t_created_at', 't.expires_at', 't.revoked_at', 't.grant_id',
          'u.email', 'u.name as u_name', 'u.password_hash', 'u.role', 'u.session_epoch', 'u.disabled_at', 'u.created_at as u_created_at', 'u.updated_at',
        ])
        .where('t.token_hash', '=', '')
        .compile(),
    );
  }

  /** The token and its user in one indexed query (one round trip on PostgreSQL, where nothing is cached). */
  async findWithUser(hash: string): Promise<{ token: OAuthAccessTokenRow; user: UserRow } | undefined> {
    const row = (await this.withUser([hash]))[0];
    if (!row) return undefined;
    return {
      token: {
        id: row.id, user_id: row.user_id, client_id: row.client_id, scope: row.scope, token_hash: row.token_hash, created_at: row.t_created_at,
        expires_at: row.expires_at, revoked_at: row.revoked_at, grant_id: row.grant_id,
      },
      user: {
        id: row.user_id, email: row.email, name: row.u_name, password_hash: row.password_hash, role: row.role,
        session_epoch: row.session_epoch, disabled_at: row.disabled_at, created_at: row.u_created_at, updated_at: row.updated_at,
      },
    };
  }

  async insert(row: Omit<OAuthAccessTokenRow, 'revoked_at' | 'grant_id'> & { grant_id?: string | null }): Promise<OAuthAccessTokenRow> {
    const full: OAuthAccessTokenRow = { ...row, grant_id: row.grant_id ?? null, revoked_at: null };
    await this.db.insertInto('oauth_access_tokens').values(full).execute();
    return full;
  }

  /** The row alone (tests, tools); requests use `findWithUser`. */
  findByHash(hash: string): Promise<OAuthAccessTokenRow | undefined> {
    return this.db.selectFrom('oauth_access_tokens').selectAll().where('token_hash', '=', hash).executeTakeFirst();
  }

  /** Writes the grant's last use unless another request did so since `notBefore`. */
  async touchGrant(grantId: string, now: string, notBefore: string): Promise<void> {
    await this.db
      .updateTable('oauth_grants')
      .set({ last_used_at: now })
      .where('id', '=', grantId)
      .where('last_used_at', '<', notBefore)
      .execute();
  }

  async revoke(id: string, now: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const r = await trx
        .updateTable('oauth_access_tokens')
        .set({ revoked_at: now })
        .where('id', '=', id)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0) return false;
      await bumpCredentialEpoch(trx);
      return true;
    });
  }
}

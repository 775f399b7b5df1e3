import type { Kysely, Selectable, Transaction } from 'kysely';
import type { OAuthAccessTokensTable, OAuthCodesTable, OAuthGrantsTable, OAuthRefreshTokensTable, RunnerDB } from '../db/schema.js';
import { bumpCredentialEpoch } from '../auth/credential-cache.js';

export type OAuthGrantRow = Selectable<OAuthGrantsTable>;
export type OAuthCodeRow = Selectable<OAuthCodesTable>;
export type OAuthRefreshTokenRow = Selectable<OAuthRefreshTokensTable>;
type AccessTokenRow = Selectable<OAuthAccessTokensTable>;

export interface IssuedTokens {
  access: AccessTokenRow;
  refresh: OAuthRefreshTokenRow;
}

export interface ConnectedAppRow {
  client_id: string;
  client_name: string;
  client_uri: string | null;
  scope: string;
  first_authorized_at: string;
  last_used_at: string;
}

/** Grants, authorization codes and refresh tokens; every revocation bumps the credential epoch. */
export class OAuthGrantsRepository {
  constructor(private readonly db: Kysely<RunnerDB>) {}

  /**
   * Stores a consent: the grant and its code, only while the user exists and is enabled; false
   * otherwise. The user's row is locked first, as disabling takes it (UsersRepository.update
   * writes it before revoking the user's grants in the same transaction): either the disabling
   * waits for this grant and then revokes it, or this transaction waits for the disabling and
   * then sees the account disabled. A check before the transaction would leave a window in which
   * a grant made after the revocation outlives it.
   */
  async createGrantWithCode(grant: OAuthGrantRow, code: OAuthCodeRow): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      if (!(await holdEnabledUser(trx, grant.user_id))) return false;
      await trx.insertInto('oauth_grants').values(grant).execute();
      await trx.insertInto('oauth_codes').values(code).execute();
      return true;
    });
  }

  findCode(hash: string): Promise<(OAuthCodeRow & { grant_revoked_at: string | null; user_id: string }) | undefined> {
    return this.db
      .selectFrom('oauth_codes as c')
      .innerJoin('oauth_grants as g', 'g.id', 'c.grant_id')
      .selectAll('c')
      .select(['g.revoked_at as grant_revoked_at', 'g.user_id'])
      .where('c.code_hash', '=', hash)
      .executeTakeFirst();
  }

  /**
   * Marks the code used and issues the first tokens, in one transaction: 'used' when another
   * request used the code first (the caller then treats it as a replay), 'revoked' when the grant
   * was revoked meanwhile.
   */
  async redeemCode(hash: string, grantId: string, now: string, tokens: IssuedTokens): Promise<'issued' | 'used' | 'revoked'> {
    return this.db.transaction().execute(async (trx) => {
      if (!(await this.holdLiveGrant(trx, grantId, now))) return 'revoked';
      const r = await trx.updateTable('oauth_codes').set({ used_at: now }).where('code_hash', '=', hash).where('used_at', 'is', null).executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0) return 'used';
      await this.issue(trx, tokens);
      return 'issued';
    });
  }

  findRefreshToken(hash: string): Promise<(OAuthRefreshTokenRow & { grant: OAuthGrantRow }) | undefined> {
    return this.db
      .selectFrom('oauth_refresh_tokens as r')
      .innerJoin('oauth_grants as g', 'g.id', 'r.grant_id')
      .selectAll('r')
      .select(['g.user_id', 'g.client_id', 'g.scope as g_scope', 'g.created_at as g_created_at', 'g.last_used_at', 'g.revoked_at'])
      .where('r.token_hash', '=', hash)
      .executeTakeFirst()
      .then((row) =>
        row
          ? {
              id: row.id, grant_id: row.grant_id, token_hash: row.token_hash, scope: row.scope, created_at: row.created_at,
              expires_at: row.expires_at, rotated_at: row.rotated_at, parent_id: row.parent_id,
              grant: {
                id: row.grant_id, user_id: row.user_id, client_id: row.client_id, scope: row.g_scope, created_at: row.g_created_at,
                last_used_at: row.last_used_at, revoked_at: row.revoked_at,
              },
            }
          : undefined,
      );
  }

  /**
   * Rotation: marks the presented refresh token used and issues its successor in one
   * transaction: 'rotated' when a concurrent request rotated it first, 'revoked' when the grant
   * was revoked meanwhile.
   */
  async rotate(refreshId: string, grantId: string, now: string, tokens: IssuedTokens): Promise<'issued' | 'rotated' | 'revoked'> {
    return this.db.transaction().execute(async (trx) => {
      if (!(await this.holdLiveGrant(trx, grantId, now))) return 'revoked';
      const r = await trx.updateTable('oauth_refresh_tokens').set({ rotated_at: now }).where('id', '=', refreshId).where('rotated_at', 'is', null).executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0) return 'rotated';
      await this.issue(trx, tokens);
      return 'issued';
    });
  }

  /**
   * Issues tokens under a grant that was already rotated (the concurrent-refresh grace); false
   * when the grant was revoked meanwhile.
   */
  async issueAgain(grantId: string, now: string, tokens: IssuedTokens): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      if (!(await this.holdLiveGrant(trx, grantId, now))) return false;
      await this.issue(trx, tokens);
      return true;
    });
  }

  /**
   * Locks the grant's row for the rest of the transaction (it records the use) and says whether
   * it is still live. Every transaction that writes a grant's tokens takes this lock first, as
   * revocation does (revokeGrants): one lock order, so PostgreSQL cannot deadlock them, and a
   * revocation either waits for tokens being issued (and then revokes them too) or makes the
   * issuing transaction see it revoked. On SQLite the first write takes the database's lock.
   */
  private async holdLiveGrant(trx: Transaction<RunnerDB>, grantId: string, now: string): Promise<boolean> {
    const r = await trx.updateTable('oauth_grants').set({ last_used_at: now }).where('id', '=', grantId).where('revoked_at', 'is', null).executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  private async issue(trx: Transaction<RunnerDB>, tokens: IssuedTokens): Promise<void> {
    await trx.insertInto('oauth_access_tokens').values(tokens.access).execute();
    await trx.insertInto('oauth_refresh_tokens').values(tokens.refresh).execute();
  }

  /** Ends a grant and everything issued under it (RFC 7009 §2.1, RFC 6749 §4.1.2, OAuth 2.1 §4.3.1). */
  async revokeGrant(grantId: string, now: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await this.revokeGrants(trx, [grantId], now);
    });
  }

  /** Ends one access token (RFC 7009); false when unknown or already revoked. */
  async revokeAccessTokenByHash(hash: string, clientId: string, now: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const r = await trx
        .updateTable('oauth_access_tokens')
        .set({ revoked_at: now })
        .where('token_hash', '=', hash)
        .where('client_id', '=', clientId)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0) return false;
      await bumpCredentialEpoch(trx);
      return true;
    });
  }

  /** Connected apps: revokes every live grant of the user to the client. */
  async revokeClientForUser(userId: string, clientId: string, now: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const ids = await trx
        .selectFrom('oauth_grants')
        .select('id')
        .where('user_id', '=', userId)
        .where('client_id', '=', clientId)
        .where('revoked_at', 'is', null)
        .execute();
      if (ids.length === 0) return false;
      await this.revokeGrants(trx, ids.map((g) => g.id), now);
      return true;
    });
  }

  private async revokeGrants(trx: Transaction<RunnerDB>, ids: string[], now: string): Promise<void> {
    await revokeGrantsIn(trx, ids, now);
    // Same transaction as the revocation: no instance keeps serving a cached token (auth/credential-cache.ts).
    await bumpCredentialEpoch(trx);
  }

  /** The user's applications with a live grant: widest scope, first authorization, last use. */
  async connectedApps(userId: string): Promise<ConnectedAppRow[]> {
    const rows = await this.db
      .selectFrom('oauth_grants as g')
      .innerJoin('oauth_clients as c', 'c.id', 'g.client_id')
      .select(['g.client_id', 'c.name as client_name', 'c.client_uri'])
      .select((eb) => [
        eb.fn.max('g.scope').as('scope'),
        eb.fn.min('g.created_at').as('first_authorized_at'),
        eb.fn.max('g.last_used_at').as('last_used_at'),
      ])
      .where('g.user_id', '=', userId)
      .where('g.revoked_at', 'is', null)
      .groupBy(['g.client_id', 'c.name', 'c.client_uri'])
      .orderBy('last_used_at', 'desc')
      .execute();
    return rows as ConnectedAppRow[];
  }
}

/**
 * Locks the user's row until the transaction ends and says whether the account is enabled. A
 * no-op UPDATE takes the row lock on PostgreSQL (where it waits for a concurrent disabling and
 * then re-reads the row, so it sees `disabled_at` set) and the write lock on SQLite, the same
 * statement on both dialects (SQLite has no SELECT … FOR UPDATE; see projects/repository.ts
 * lockProjects).
 */
async function holdEnabledUser(trx: Transaction<RunnerDB>, userId: string): Promise<boolean> {
  const r = await trx
    .updateTable('users')
    .set((eb) => ({ updated_at: eb.ref('updated_at') }))
    .where('id', '=', userId)
    .where('disabled_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/**
 * Ends every live grant of a user inside the caller's transaction, which also bumps the
 * credential epoch (a password change, users/repository.ts). Returns how many applications
 * lost their grants.
 */
export async function revokeUserGrants(trx: Transaction<RunnerDB>, userId: string, now: string): Promise<number> {
  const live = await trx.selectFrom('oauth_grants').select(['id', 'client_id']).where('user_id', '=', userId).where('revoked_at', 'is', null).execute();
  if (live.length === 0) return 0;
  await revokeGrantsIn(trx, live.map((g) => g.id), now);
  return new Set(live.map((g) => g.client_id)).size;
}

/** Revokes grants and everything issued under them; the caller bumps the credential epoch. */
async function revokeGrantsIn(trx: Transaction<RunnerDB>, ids: string[], now: string): Promise<void> {
  // The grants first, one by one in id order, then their tokens: the lock order of every
  // transaction that issues tokens (holdLiveGrant), so none can deadlock with this one.
  for (const id of [...ids].sort()) {
    await trx.updateTable('oauth_grants').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).execute();
  }
  await trx.updateTable('oauth_access_tokens').set({ revoked_at: now }).where('grant_id', 'in', ids).where('revoked_at', 'is', null).execute();
  await trx.updateTable('oauth_refresh_tokens').set({ rotated_at: now }).where('grant_id', 'in', ids).where('rotated_at', 'is', null).execute();
}

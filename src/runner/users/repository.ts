import { preparedRead, type ReadNow } from '../../infra/database/index.js';

/**
 * What the authentication hot path gives a repository: `readNow` lets look-ups skip Kysely's
 * queue on an idle SQLite connection. Every write that changes a credential or its user raises
 * the credentials counter in its own transaction (auth/credential-cache.ts).
 */
export interface HotPathOptions {
  readNow?: ReadNow;
}
import type { Kysely, Selectable } from 'kysely';
import type { RunnerDB, UsersTable } from '../db/schema.js';
import { projectsSolelyOwnedBy } from '../projects/repository.js';
import { bumpCredentialEpoch } from '../auth/credential-cache.js';
import { revokeUserGrants } from '../oauth/grants-repository.js';

export type UserRow = Selectable<UsersTable>;
export type Role = UsersTable['role'];

export interface NewUser {
  id: string;
  email: string;
  name: string;
  passwordHash: string;
  role: Role;
  now: string;
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export class UsersRepository {
  /** Compiled once: looked up on every authenticated request (see withParameters). */
  private readonly byId: (values: readonly unknown[]) => Promise<UserRow[]>;

  constructor(
    private readonly db: Kysely<RunnerDB>,
    hot: HotPathOptions = {},
  ) {
    this.byId = preparedRead({ db, readNow: hot.readNow ?? (() => null) }, db.selectFrom('users').selectAll().where('id', '=', '').compile());
  }

  async count(): Promise<number> {
    const row = await this.db.selectFrom('users').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async countAdmins(): Promise<number> {
    const row = await this.db
      .selectFrom('users')
      .where('role', '=', 'admin')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async insert(u: NewUser, db: Kysely<RunnerDB> = this.db): Promise<UserRow> {
    const row: UserRow = {
      id: u.id,
      email: normalizeEmail(u.email),
      name: u.name,
      password_hash: u.passwordHash,
      role: u.role,
      session_epoch: 0,
      disabled_at: null,
      created_at: u.now,
      updated_at: u.now,
    };
    await db.insertInto('users').values(row).execute();
    return row;
  }

  /**
   * Creates the first administrator only while no user exists. The `runner_meta` row with a
   * fixed key makes a concurrent second setup fail on its primary key, on both dialects.
   */
  async insertFirstAdmin(u: NewUser): Promise<UserRow | null> {
    return this.db.transaction().execute(async (trx) => {
      const existing = await trx.selectFrom('users').select('id').limit(1).executeTakeFirst();
      if (existing) return null;
      await trx.insertInto('runner_meta').values({ key: 'first_admin', value: u.id }).execute();
      return this.insert({ ...u, role: 'admin' }, trx);
    });
  }


  /** Every web-session request loads its user: compiled once (see withParameters). */
  async findById(id: string): Promise<UserRow | undefined> {
    return (await this.byId([id]))[0];
  }

  findByEmail(email: string): Promise<UserRow | undefined> {
    return this.db.selectFrom('users').selectAll().where('email', '=', normalizeEmail(email)).executeTakeFirst();
  }

  list(): Promise<UserRow[]> {
    return this.db.selectFrom('users').selectAll().orderBy('created_at').orderBy('id').execute();
  }

  /**
   * Changes a user; 'last_admin' when it would demote or disable the last enabled administrator.
   * The admin rows are locked before they are counted, so two administrators demoting each other
   * at once cannot both succeed (write skew under READ COMMITTED). Disabling ends the user's web
   * sessions and revokes their OAuth grants; their personal tokens stop working while disabled.
   */
  async update(
    id: string,
    changes: { name?: string; email?: string; role?: Role; disabled?: boolean },
    now: string,
  ): Promise<UserRow | undefined | 'last_admin'> {
    const values: Partial<UserRow> = { updated_at: now };
    if (changes.name !== undefined) values.name = changes.name;
    if (changes.email !== undefined) values.email = normalizeEmail(changes.email);
    if (changes.role !== undefined) values.role = changes.role;
    if (changes.disabled !== undefined) values.disabled_at = changes.disabled ? now : null;
    const result = await this.db.transaction().execute(async (trx) => {
      if ((changes.role === 'member' || changes.disabled === true) && (await lastAdmin(trx, id))) return 'last_admin' as const;
      await trx.updateTable('users').set(values).where('id', '=', id).execute();
      if (changes.disabled === true) {
        await trx
          .updateTable('users')
          .set((eb) => ({ session_epoch: eb('session_epoch', '+', 1) }))
          .where('id', '=', id)
          .execute();
        await revokeUserGrants(trx, id, now);
      }
      await bumpCredentialEpoch(trx);
      return 'ok' as const;
    });
    if (result === 'last_admin') return result;
    return this.findById(id);
  }

  /** Ends every web session (JWT) of the user: tokens carry the epoch they were issued in. */
  async endSessions(id: string, now: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('users')
        .set((eb) => ({ updated_at: now, session_epoch: eb('session_epoch', '+', 1) }))
        .where('id', '=', id)
        .execute();
      await bumpCredentialEpoch(trx);
    });
  }

  /**
   * Stores a new password hash, ends every web session (JWT) of the user and revokes the user's
   * OAuth grants (connected applications were authorized by a session of the old password), in
   * one transaction. Personal access tokens are left alone (README: password changes). Returns
   * the user and how many applications lost their grants.
   */
  async setPassword(id: string, passwordHash: string, now: string): Promise<{ user: UserRow; revokedConnectedApps: number } | undefined> {
    const revokedConnectedApps = await this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('users')
        .set((eb) => ({ password_hash: passwordHash, updated_at: now, session_epoch: eb('session_epoch', '+', 1) }))
        .where('id', '=', id)
        .execute();
      const revoked = await revokeUserGrants(trx, id, now);
      await bumpCredentialEpoch(trx);
      return revoked;
    });
    const user = await this.findById(id);
    return user && { user, revokedConnectedApps };
  }

  /**
   * Deletes a user with their tokens and memberships, unless that leaves a project without an
   * owner (the ids of those projects) or the runner without an administrator. Checks and delete
   * share one transaction holding the locks (see projectsSolelyOwnedBy, lastAdmin).
   */
  async delete(id: string): Promise<'deleted' | 'absent' | 'last_admin' | { soleOwnerOf: string[] }> {
    const result = await this.db.transaction().execute(async (trx) => {
      const soleOwnerOf = await projectsSolelyOwnedBy(trx, id);
      if (soleOwnerOf.length) return { soleOwnerOf };
      if (await lastAdmin(trx, id)) return 'last_admin' as const;
      const r = await trx.deleteFrom('users').where('id', '=', id).executeTakeFirst();
      if (Number(r.numDeletedRows) === 0) return 'absent' as const;
      await bumpCredentialEpoch(trx);
      return 'deleted' as const;
    });
    return result;
  }
}

/** Whether `id` is the only enabled administrator; locks the admin rows first (see UsersRepository.update). */
async function lastAdmin(trx: Kysely<RunnerDB>, id: string): Promise<boolean> {
  const admins = await trx
    .updateTable('users')
    .set((eb) => ({ role: eb.ref('role') }))
    .where('role', '=', 'admin')
    .where('disabled_at', 'is', null)
    .returning('id')
    .execute();
  return admins.length <= 1 && admins.some((a) => a.id === id);
}

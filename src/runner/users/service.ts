import { ConflictError, NotFoundError } from '../../infra/errors.js';
import { hashPassword, randomUUID } from '../../infra/secrets.js';
import { isUniqueViolation } from '../db/index.js';
import type { Role, UserRow, UsersRepository } from './repository.js';

export function defaultName(email: string): string {
  return email.split('@')[0] || email;
}

/** Creates a user; used by the admin API, first-run setup and the CLI. Duplicate email → 409. */
export async function createUser(
  users: UsersRepository,
  input: { email: string; name?: string; password: string; role: Role },
  now: Date,
  firstAdmin = false,
): Promise<UserRow> {
  const row = {
    id: randomUUID(),
    email: input.email,
    name: input.name?.trim() || defaultName(input.email),
    passwordHash: await hashPassword(input.password),
    role: input.role,
    now: now.toISOString(),
  };
  try {
    if (firstAdmin) {
      const created = await users.insertFirstAdmin(row);
      if (!created) throw new ConflictError('setup is already done: a user exists', 'setup_done');
      return created;
    }
    return await users.insert(row);
  } catch (e) {
    if (isUniqueViolation(e)) {
      if (firstAdmin) throw new ConflictError('setup is already done: a user exists', 'setup_done');
      throw new ConflictError(`a user with email ${row.email.toLowerCase()} already exists`, 'email_taken');
    }
    throw e;
  }
}

/** An administrator changes a user's name or role; the last administrator stays one (409). */
export async function updateUser(
  users: UsersRepository,
  id: string,
  changes: { name?: string; email?: string; role?: Role; disabled?: boolean },
  now: Date,
  actorId?: string,
): Promise<UserRow> {
  if (changes.disabled === true && actorId === id) throw new ConflictError('you cannot disable your own account', 'self_disable');
  let updated: UserRow | undefined | 'last_admin';
  try {
    updated = await users.update(id, changes, now.toISOString());
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError('another user has this email', 'email_taken');
    throw e;
  }
  if (updated === 'last_admin') throw new ConflictError('cannot demote or disable the last enabled administrator; make someone else administrator first', 'last_admin');
  if (!updated) throw new NotFoundError('no such user');
  return updated;
}

/**
 * Deletes a user (tokens and memberships go with them). Refused for oneself, for the last
 * administrator, and for the only owner of a project: like demoting the last owner, that would
 * leave a project nobody can manage.
 */
export async function deleteUser(users: UsersRepository, actorId: string, id: string): Promise<void> {
  if (actorId === id) throw new ConflictError('you cannot delete your own account', 'self_delete');
  const r = await users.delete(id);
  if (r === 'absent') throw new NotFoundError('no such user');
  if (r === 'last_admin') throw new ConflictError('cannot delete the last administrator', 'last_admin');
  if (typeof r === 'object') {
    throw new ConflictError(
      `the user is the only owner of ${r.soleOwnerOf.length} project(s) (${r.soleOwnerOf.join(', ')}); make someone else owner first`,
      'last_owner',
    );
  }
}

export async function getUser(users: UsersRepository, id: string): Promise<UserRow> {
  const user = await users.findById(id);
  if (!user) throw new NotFoundError('no such user');
  return user;
}

export function listUsers(users: UsersRepository): Promise<UserRow[]> {
  return users.list();
}

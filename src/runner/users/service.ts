import { ConflictError } from '../../infra/errors.js';
import { hashPassword, randomUUID } from '../../infra/secrets.js';
import { isUniqueViolation } from '../db/index.js';
import type { Role, UserRow, UsersRepository } from './repository.js';

export function presentUser(u: UserRow) {
  return { id: u.id, email: u.email, name: u.name, role: u.role, createdAt: u.created_at, updatedAt: u.updated_at };
}

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

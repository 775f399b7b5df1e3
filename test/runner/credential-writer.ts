// Changes credentials in the runner database from a process of its own, as the `pier` CLI or
// another instance would: the running instance under test shares nothing with it but the
// database (credential-cache.test.ts). Usage: node --import tsx credential-writer.ts '<json>'
// with { url, changes: [{ kind, ... }] }; prints "done" once every change has committed.
import { OAuthTokensRepository, PersonalTokensRepository } from '../../src/runner/auth/repository.js';
import { openRunnerDatabase } from '../../src/runner/db/index.js';
import { UsersRepository } from '../../src/runner/users/repository.js';

export type CredentialChange =
  | { kind: 'revoke-pat'; userId: string; tokenId: string }
  | { kind: 'revoke-oauth'; tokenId: string }
  | { kind: 'disable-user'; userId: string }
  | { kind: 'set-role'; userId: string; role: 'admin' | 'member' }
  | { kind: 'set-password'; userId: string }
  | { kind: 'delete-user'; userId: string };

const { url, changes } = JSON.parse(process.argv[2]!) as { url: string; changes: CredentialChange[] };
const database = await openRunnerDatabase(url);
const now = new Date().toISOString();
try {
  const users = new UsersRepository(database.db);
  for (const c of changes) {
    let result: unknown;
    switch (c.kind) {
      case 'revoke-pat':
        result = await new PersonalTokensRepository(database.db).revoke(c.userId, c.tokenId, now);
        break;
      case 'revoke-oauth':
        result = await new OAuthTokensRepository(database.db).revoke(c.tokenId, now);
        break;
      case 'disable-user':
        result = await users.update(c.userId, { disabled: true }, now);
        break;
      case 'set-role':
        result = await users.update(c.userId, { role: c.role }, now);
        break;
      case 'set-password':
        result = await users.setPassword(c.userId, 'not a password hash', now);
        break;
      case 'delete-user':
        result = await users.delete(c.userId);
        break;
    }
    const failed = c.kind === 'delete-user' ? result !== 'deleted' : !result || result === 'last_admin';
    if (failed) throw new Error(`${c.kind}: ${JSON.stringify(result)}`);
  }
  process.stdout.write('done\n');
} finally {
  await database.close();
}

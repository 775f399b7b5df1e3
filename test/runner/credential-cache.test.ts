import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { randomUUID, sha256 } from '../../src/infra/secrets.js';
import { CredentialCache, CredentialEpoch, EPOCH_REUSE_MS } from '../../src/runner/auth/credential-cache.js';
import { OAuthTokensRepository, PersonalTokensRepository } from '../../src/runner/auth/repository.js';
import { openRunnerDatabase, type RunnerDatabase } from '../../src/runner/db/index.js';
import { UsersRepository } from '../../src/runner/users/repository.js';
import { dialects } from '../helpers/db.js';
import type { CredentialChange } from './credential-writer.js';
import { apiKey, bearer, startRunner, type TestRunner, SETUP_TOKEN } from './helpers.js';
import { authorizeClient, PASSWORD } from './oauth-helpers.js';

const T0 = '2030-01-01T00:00:00.000Z';

test('the epoch lives in the database: a change committed by any connection raises it', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pier-epoch-'));
  const file = path.join(dir, 'runner.sqlite');
  const a = await openRunnerDatabase(file);
  const b = await openRunnerDatabase(file);
  const epoch = new CredentialEpoch(a);
  const start = epoch.current()!;
  assert.equal(typeof start, 'number');
  const users = new UsersRepository(b.db);
  const u = await users.insert({ id: randomUUID(), email: 'e@example.com', name: 'e', passwordHash: 'h', role: 'member', now: T0 });
  assert.equal(epoch.current(), start, 'creating a user changes no credential');
  await users.setPassword(u.id, 'h2', T0);
  assert.equal(epoch.current(), start + 1, 'a change through another connection is seen at once');
  await a.close();
  await b.close();
  fs.rmSync(dir, { recursive: true, force: true });
  const pg = new CredentialEpoch({ dialect: 'postgres', db: null as never, readNow: () => null });
  assert.equal(pg.current(), null, 'no caching on PostgreSQL: every request reads the database');
});

describe('a running instance sees every credential change committed to the database', () => {
  // The writer is a bare repository on its own connection, as another process (the CLI, a
  // second instance, a crash right after commit) would leave it: nothing but the database tells
  // the running instance. A marker file beside the database used to, and could be lost.
  let r: TestRunner;
  let other: RunnerDatabase;
  let session: string;
  let userId: string;
  before(async () => {
    r = await startRunner();
    other = await openRunnerDatabase(r.config.runner.databaseUrl);
    const res = await r.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'a@example.com', password: 'a long enough password' } });
    session = res.json().session.token;
    userId = res.json().user.id;
  });
  after(async () => {
    await other.close();
    await r.close();
  });
  const me = (h: Record<string, string>) => r.service.app.inject({ method: 'GET', url: '/api/me', headers: h });

  test('a revoked personal access token', async () => {
    const t = (await r.service.app.inject({ method: 'POST', url: '/api/tokens', headers: bearer(session), payload: { name: 'x', scope: 'read' } })).json();
    assert.equal((await me(apiKey(t.token))).statusCode, 200);
    assert.equal((await me(apiKey(t.token))).statusCode, 200, 'now remembered');
    assert.ok(await new PersonalTokensRepository(other.db).revoke(userId, t.id, T0));
    assert.equal((await me(apiKey(t.token))).statusCode, 401);
  });

  test('a session of a changed password', async () => {
    assert.equal((await me(bearer(session))).statusCode, 200);
    await new UsersRepository(other.db).setPassword(userId, 'another hash', T0);
    assert.equal((await me(bearer(session))).statusCode, 401);
  });
});

test('entries live only while their epoch is current; late fills from an older epoch are dropped', () => {
  const cache = new CredentialCache<string>();
  cache.set('k', 'v1', 5);
  assert.equal(cache.get('k', 5), 'v1');
  assert.equal(cache.get('k', 6), undefined, 'a newer epoch empties the cache');
  cache.set('late', 'read-before-the-change', 5);
  assert.equal(cache.get('late', 6), undefined, 'a value read at an older epoch is not kept');
  assert.equal(cache.get('k', null), undefined);
  cache.set('k', 'v2', null);
  assert.equal(cache.get('k', 6), undefined, 'nothing is stored without an epoch');
  const small = new CredentialCache<number>(2);
  small.set('a', 1, 1);
  small.set('b', 2, 1);
  small.set('c', 3, 1);
  assert.equal(small.get('a', 1), undefined, 'bounded: the oldest entry goes');
  assert.equal(small.get('c', 1), 3);
});

test('a read of the epoch is reused for EPOCH_REUSE_MS, and not after a change made in this process', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pier-epoch-'));
  const file = path.join(dir, 'runner.sqlite');
  const a = await openRunnerDatabase(file);
  const b = await openRunnerDatabase(file);
  let reads = 0;
  let busy = false;
  const readNow: typeof a.readNow = (q, v) => {
    if (busy) return null;
    reads++;
    return a.readNow(q, v);
  };
  const counted = { ...a, readNow };
  let t = 1_000;
  const epoch = new CredentialEpoch(counted, EPOCH_REUSE_MS, () => t);
  const start = epoch.current()!;
  assert.equal(reads, 1);
  // Halves: exact in binary, so the window ends exactly at the second step.
  t += EPOCH_REUSE_MS / 2;
  assert.equal(epoch.current(), start);
  assert.equal(reads, 1, 'reused within the window');
  t += EPOCH_REUSE_MS / 2;
  assert.equal(epoch.current(), start);
  assert.equal(reads, 2, 'read again once the window has passed');
  const users = new UsersRepository(b.db);
  const u = await users.insert({ id: randomUUID(), email: 'r@example.com', name: 'r', passwordHash: 'h', role: 'member', now: T0 });
  await users.setPassword(u.id, 'h2', T0);
  assert.equal(epoch.current(), start + 1, 'a change made in this process is seen at once, inside the window');
  assert.equal(reads, 3);
  await users.setPassword(u.id, 'h3', T0);
  busy = true;
  assert.equal(epoch.current(), null, 'busy connection: no epoch, the caller reads the database');
  busy = false;
  assert.equal(epoch.current(), start + 2, 'the next request reads it, still inside the window');
  assert.equal(reads, 4);
  await a.close();
  await b.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * The writer is another process (credential-writer.ts), as the `pier` CLI or another instance
 * would be: nothing in this process hears of the change, only the database has it. On SQLite the
 * instance reuses a read of the credentials counter for EPOCH_REUSE_MS, so a request that starts
 * that long after the commit must be refused; on PostgreSQL nothing is cached and the bound is 0.
 */
for (const target of dialects()) {
  describe(`credential changes committed by another process (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let admin: Record<string, string>;
    before(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url });
      const res = await r.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } });
      admin = bearer(res.json().session.token);
    });
    after(async () => {
      await r.close();
      await dbh.drop();
    });
    const inject = (method: 'GET' | 'POST', url: string, headers: Record<string, string>, payload?: object) =>
      r.service.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
    const me = (h: Record<string, string>) => inject('GET', '/api/me', h);

    /** A new member with a web session, a personal access token and an OAuth access token. */
    async function member(email: string) {
      const user = (await inject('POST', '/api/users', admin, { email, password: PASSWORD })).json() as { id: string };
      const login = await inject('POST', '/api/auth/login', {}, { email, password: PASSWORD });
      const session = bearer(login.json().token);
      const pat = (await inject('POST', '/api/tokens', session, { name: 'ci', scope: 'read' })).json() as { id: string; token: string };
      const oauth = (await authorizeClient(r, email)).access_token;
      const database = await openRunnerDatabase(dbh.url);
      const oauthId = (await new OAuthTokensRepository(database.db).findByHash(sha256(oauth)))!.id;
      await database.close();
      return { id: user.id, session, pat: apiKey(pat.token), patId: pat.id, oauth: bearer(oauth), oauthId };
    }

    /** Runs the changes in a child process and returns once they have committed. */
    function elsewhere(...changes: CredentialChange[]): void {
      const child = spawnSync(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'credential-writer.ts'), JSON.stringify({ url: dbh.url, changes })], {
        encoding: 'utf8',
      });
      assert.equal(child.stdout, 'done\n', child.stderr);
    }

    /** Requests `h` twice (the second one is answered from the caches) and expects `status`. */
    async function cached(h: Record<string, string>, url = '/api/me', status = 200): Promise<void> {
      for (let i = 0; i < 2; i++) assert.equal((await inject('GET', url, h)).statusCode, status);
    }

    const afterTheBound = () => new Promise((resolve) => setTimeout(resolve, EPOCH_REUSE_MS + 5));

    test('a revoked personal access token and OAuth access token', async () => {
      const m = await member('tokens@example.com');
      await cached(m.pat);
      await cached(m.oauth);
      elsewhere({ kind: 'revoke-pat', userId: m.id, tokenId: m.patId }, { kind: 'revoke-oauth', tokenId: m.oauthId });
      await afterTheBound();
      assert.equal((await me(m.pat)).statusCode, 401);
      assert.equal((await me(m.oauth)).statusCode, 401);
      assert.equal((await me(m.session)).statusCode, 200, 'the session is another credential');
    });

    test('a disabled user: session, personal and OAuth tokens', async () => {
      const m = await member('disabled@example.com');
      for (const h of [m.session, m.pat, m.oauth]) await cached(h);
      elsewhere({ kind: 'disable-user', userId: m.id });
      await afterTheBound();
      for (const h of [m.session, m.pat, m.oauth]) assert.equal((await me(h)).statusCode, 401);
    });

    test('a deleted user', async () => {
      const m = await member('deleted@example.com');
      for (const h of [m.session, m.pat]) await cached(h);
      elsewhere({ kind: 'delete-user', userId: m.id });
      await afterTheBound();
      for (const h of [m.session, m.pat]) assert.equal((await me(h)).statusCode, 401);
    });

    test('a changed password ends the sessions', async () => {
      const m = await member('password@example.com');
      await cached(m.session);
      elsewhere({ kind: 'set-password', userId: m.id });
      await afterTheBound();
      assert.equal((await me(m.session)).statusCode, 401);
    });

    test('a role change: an administrator made member loses the admin routes', async () => {
      const m = await member('role@example.com');
      elsewhere({ kind: 'set-role', userId: m.id, role: 'admin' });
      await afterTheBound();
      await cached(m.session, '/api/users');
      elsewhere({ kind: 'set-role', userId: m.id, role: 'member' });
      await afterTheBound();
      assert.equal((await inject('GET', '/api/users', m.session)).statusCode, 403);
    });
  });
}

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { randomUUID } from '../../src/infra/secrets.js';
import { CredentialCache, CredentialEpoch } from '../../src/runner/auth/credential-cache.js';
import { PersonalTokensRepository } from '../../src/runner/auth/repository.js';
import { openRunnerDatabase, type RunnerDatabase } from '../../src/runner/db/index.js';
import { UsersRepository } from '../../src/runner/users/repository.js';
import { apiKey, bearer, startRunner, type TestRunner, SETUP_TOKEN } from './helpers.js';

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

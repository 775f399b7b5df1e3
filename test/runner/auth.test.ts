import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { base64url, SignJWT } from 'jose';
import { JWT_LIFETIME_SECONDS } from '../../src/runner/auth/jwt.js';
import { MAX_SETUP_LINKS } from '../../src/runner/auth/service.js';
import { openRunnerDatabase } from '../../src/runner/db/index.js';
import { SettingsRepository } from '../../src/runner/settings/repository.js';
import { dialects, tempDir } from '../helpers/db.js';
import { API_KEY, apiKey, bearer, startRunner, storedJwtSecret, TestClock, type TestRunner, SETUP_TOKEN } from './helpers.js';

const PASSWORD = 'a long enough password';

async function setup(r: TestRunner, email = 'admin@example.com') {
  const res = await r.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email, password: PASSWORD } });
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as { user: { id: string }; session: { token: string; expiresAt: string } };
}

describe('JWT sessions', () => {
  let r: TestRunner;
  let secret: Uint8Array;
  let userId: string;
  const ISS = 'http://runner.test';

  before(async () => {
    r = await startRunner();
    userId = (await setup(r)).user.id;
    secret = await storedJwtSecret(r);
  });
  after(() => r.close());

  const me = (token: string) => r.service.app.inject({ method: 'GET', url: '/api/me', headers: bearer(token) });

  test('login gives a token valid for exactly 7 days', async () => {
    const start = r.clock.t;
    const res = await r.service.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'ADMIN@example.com', password: PASSWORD } });
    assert.equal(res.statusCode, 200, res.body);
    const { token, expiresAt } = res.json();
    assert.equal(Date.parse(expiresAt) - start, 7 * 24 * 3600 * 1000);
    const payload = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
    assert.equal(payload.exp - payload.iat, JWT_LIFETIME_SECONDS);
    assert.equal(payload.iss, ISS);
    assert.equal(payload.sub, userId);

    r.clock.t = start + JWT_LIFETIME_SECONDS * 1000 - 1000;
    assert.equal((await me(token)).statusCode, 200, 'valid at 7 days minus 1 second');
    r.clock.t = start + JWT_LIFETIME_SECONDS * 1000 + 1000;
    const late = await me(token);
    assert.equal(late.statusCode, 401, 'rejected at 7 days plus 1 second');
    assert.equal(late.headers['www-authenticate'], 'Bearer realm="runner", resource_metadata="http://runner.test/.well-known/oauth-protected-resource", ApiKey realm="runner"');
    r.clock.t = start;
  });

  const now = () => Math.floor(r.clock.t / 1000);
  const claims = () => ({ sv: 0, sub: userId, iss: ISS, aud: ISS, iat: now(), exp: now() + 3600 });

  test('a correctly made token is accepted (control for the rejections below)', async () => {
    const token = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256' }).sign(secret);
    assert.equal((await me(token)).statusCode, 200);
  });

  test('alg: none is rejected', async () => {
    const header = base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }));
    const body = base64url.encode(JSON.stringify(claims()));
    assert.equal((await me(`${header}.${body}.`)).statusCode, 401);
    assert.equal((await me(`${header}.${body}`)).statusCode, 401);
  });

  test('HS256 signed with another secret is rejected', async () => {
    const token = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode('x'.repeat(48)));
    assert.equal((await me(token)).statusCode, 401);
  });

  test('a tampered payload is rejected', async () => {
    const token = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256' }).sign(secret);
    const [h, , s] = token.split('.');
    const forged = base64url.encode(JSON.stringify({ ...claims(), exp: now() + 10 * 365 * 86400 }));
    assert.equal((await me(`${h}.${forged}.${s}`)).statusCode, 401);
  });

  test('a tampered payload is rejected also under the signature of a token in use', async () => {
    // Verified tokens are remembered by their signature (jwt.ts): the rest must still match.
    const token = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256' }).sign(secret);
    assert.equal((await me(token)).statusCode, 200);
    assert.equal((await me(token)).statusCode, 200, 'now remembered');
    const [h, , s] = token.split('.');
    const forged = base64url.encode(JSON.stringify({ ...claims(), exp: now() + 10 * 365 * 86400 }));
    assert.equal((await me(`${h}.${forged}.${s}`)).statusCode, 401);
    const otherHeader = base64url.encode(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid: 'x' }));
    assert.equal((await me(`${otherHeader}.${token.split('.')[1]}.${s}`)).statusCode, 401);
    assert.equal((await me(token)).statusCode, 200, 'the genuine token still works');
  });

  test('RS256 / ES256 tokens (algorithm confusion) are rejected', async () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const rs = await new SignJWT(claims()).setProtectedHeader({ alg: 'RS256' }).sign(rsa.privateKey);
    assert.equal((await me(rs)).statusCode, 401);
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const es = await new SignJWT(claims()).setProtectedHeader({ alg: 'ES256' }).sign(ec.privateKey);
    assert.equal((await me(es)).statusCode, 401);
    // The classic confusion: HMAC keyed with a public key the attacker knows.
    const pem = rsa.publicKey.export({ type: 'spki', format: 'pem' });
    const hs = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(String(pem)));
    assert.equal((await me(hs)).statusCode, 401);
  });

  test('wrong issuer, longer lifetime or unknown user are rejected', async () => {
    const otherIss = await new SignJWT({ ...claims(), iss: 'http://evil.test' }).setProtectedHeader({ alg: 'HS256' }).sign(secret);
    assert.equal((await me(otherIss)).statusCode, 401);
    const long = await new SignJWT({ ...claims(), exp: now() + JWT_LIFETIME_SECONDS + 60 }).setProtectedHeader({ alg: 'HS256' }).sign(secret);
    assert.equal((await me(long)).statusCode, 401);
    const ghost = await new SignJWT({ ...claims(), sub: 'nobody' }).setProtectedHeader({ alg: 'HS256' }).sign(secret);
    assert.equal((await me(ghost)).statusCode, 401);
  });

  test('changing the password ends earlier sessions', async () => {
    const login = await r.service.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'admin@example.com', password: PASSWORD } });
    const old = login.json().token;
    const wrong = await r.service.app.inject({
      method: 'PUT', url: '/api/me/password', headers: bearer(old), payload: { currentPassword: 'nope nope nope', newPassword: 'another long password' },
    });
    assert.equal(wrong.statusCode, 400);
    assert.equal(wrong.json().code, 'wrong_password');
    const res = await r.service.app.inject({
      method: 'PUT', url: '/api/me/password', headers: bearer(old), payload: { currentPassword: PASSWORD, newPassword: 'another long password' },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await me(old)).statusCode, 401);
    assert.equal((await me(res.json().token)).statusCode, 200);
    const relog = await r.service.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'admin@example.com', password: 'another long password' } });
    assert.equal(relog.statusCode, 200);
  });

  test('the generated secret is kept in the database, not in the data dir', async () => {
    const fs = await import('node:fs');
    assert.ok(!fs.existsSync(`${r.config.dataDir}/runner-jwt.secret`));
    assert.ok(secret.length >= 43);
    // Another instance on the same database with a data dir of its own accepts the session.
    const other = await startRunner({ databaseUrl: r.config.runner.databaseUrl, clock: r.clock });
    try {
      const login = await r.service.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'admin@example.com', password: 'another long password' } });
      const res = await other.service.app.inject({ method: 'GET', url: '/api/me', headers: bearer(login.json().token) });
      assert.equal(res.statusCode, 200, res.body);
    } finally {
      await other.close();
    }
  });

  test('a secret an older version kept in the data dir is adopted', async () => {
    const fs = await import('node:fs');
    const dataDir = fs.mkdtempSync(`${r.config.dataDir}-legacy`);
    const legacy = 'x'.repeat(64);
    fs.writeFileSync(`${dataDir}/runner-jwt.secret`, `${legacy}\n`);
    const old = await startRunner({ dataDir });
    try {
      assert.deepEqual(await storedJwtSecret(old), new TextEncoder().encode(legacy));
    } finally {
      await old.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('login rate limits and first-run setup', () => {
  let r: TestRunner;
  before(async () => {
    r = await startRunner();
  });
  after(() => r.close());
  const login = (email: string, password: string, ip = '10.0.0.1') =>
    r.service.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email, password }, remoteAddress: ip });

  test('setup creates the first admin once', async () => {
    const first = await setup(r);
    const me = await r.service.app.inject({ method: 'GET', url: '/api/me', headers: bearer(first.session.token) });
    assert.equal(me.json().role, 'admin');
    const again = await r.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'b@example.com', password: PASSWORD } });
    assert.equal(again.statusCode, 409);
    assert.equal(again.json().code, 'setup_done');
  });

  test('unknown email and wrong password look the same', async () => {
    const a = await login('nobody@example.com', PASSWORD, '10.0.0.9');
    const b = await login('admin@example.com', 'wrong password', '10.0.0.9');
    assert.equal(a.statusCode, 401);
    assert.equal(b.statusCode, 401);
    assert.equal(a.json().detail, b.json().detail);
  });

  const WINDOW = 15 * 60_000;
  const unlock = (email: string, headers: Record<string, string>) =>
    r.service.app.inject({ method: 'DELETE', url: `/api/login-limits/${encodeURIComponent(email)}`, headers });

  test('per account and address: 5 failures lock that address out of the account, not the owner elsewhere', async () => {
    r.clock.advance(WINDOW + 1); // a fresh window: the test above failed once
    for (let i = 0; i < 5; i++) assert.equal((await login('admin@example.com', 'wrong password', '10.1.0.1')).statusCode, 401);
    const locked = await login('admin@example.com', PASSWORD, '10.1.0.1');
    assert.equal(locked.statusCode, 429);
    assert.ok(Number(locked.headers['retry-after']) > 0);
    // The owner, from their own address, is not locked out by a stranger's guesses.
    assert.equal((await login('admin@example.com', PASSWORD, '10.1.0.2')).statusCode, 200);
    // The locked address may still log in to other accounts (its per-address count is 5 of 20).
    assert.equal((await login('nobody@example.com', 'wrong password', '10.1.0.1')).statusCode, 401);
    assert.equal((await login('admin@example.com', PASSWORD, '10.1.0.1')).statusCode, 429);
    r.clock.advance(WINDOW + 1);
    assert.equal((await login('admin@example.com', PASSWORD, '10.1.0.1')).statusCode, 200);
  });

  test('a successful login forgets the failures of its account from its address', async () => {
    r.clock.advance(WINDOW + 1);
    for (let i = 0; i < 4; i++) assert.equal((await login('admin@example.com', 'wrong password', '10.1.1.1')).statusCode, 401);
    assert.equal((await login('admin@example.com', PASSWORD, '10.1.1.1')).statusCode, 200);
    for (let i = 0; i < 4; i++) assert.equal((await login('admin@example.com', 'wrong password', '10.1.1.1')).statusCode, 401);
    assert.equal((await login('admin@example.com', PASSWORD, '10.1.1.1')).statusCode, 200);
  });

  test('per account from all addresses: 100 failures lock the account for one window, never longer', async () => {
    for (let round = 0; round < 2; round++) {
      r.clock.advance(WINDOW + 1);
      for (let a = 0; a < 20; a++) {
        for (let i = 0; i < 5; i++) assert.equal((await login('admin@example.com', 'wrong password', `10.3.${round}.${a}`)).statusCode, 401);
      }
      const locked = await login('admin@example.com', PASSWORD, '10.3.9.9');
      assert.equal(locked.statusCode, 429);
      // A repeated attack does not lengthen the owner's lock (pair and address locks double).
      assert.equal(Number(locked.headers['retry-after']), WINDOW / 1000);
    }
    r.clock.advance(WINDOW + 1);
    assert.equal((await login('admin@example.com', PASSWORD, '10.3.9.9')).statusCode, 200);
  });

  test('an administrator or the admin key lifts the locks of an account at once', async () => {
    r.clock.advance(WINDOW + 1);
    for (let i = 0; i < 5; i++) await login('admin@example.com', 'wrong password', '10.4.0.1');
    assert.equal((await login('admin@example.com', PASSWORD, '10.4.0.1')).statusCode, 429);
    assert.equal((await unlock('ADMIN@example.com', apiKey(API_KEY))).statusCode, 204);
    assert.equal((await login('admin@example.com', PASSWORD, '10.4.0.1')).statusCode, 200);

    // The ceiling: every address, the owner's included, is locked; the admin key lifts it.
    r.clock.advance(WINDOW + 1);
    for (let a = 0; a < 20; a++) for (let i = 0; i < 5; i++) await login('admin@example.com', 'wrong password', `10.4.1.${a}`);
    assert.equal((await login('admin@example.com', PASSWORD, '10.4.9.9')).statusCode, 429);
    assert.equal((await login('admin@example.com', PASSWORD, '10.4.1.0')).statusCode, 429);
    assert.equal((await unlock('admin@example.com', apiKey(API_KEY))).statusCode, 204);
    assert.equal((await login('admin@example.com', PASSWORD, '10.4.9.9')).statusCode, 200);
    assert.equal((await login('admin@example.com', PASSWORD, '10.4.1.0')).statusCode, 200);

    // An admin's session may too; other accounts' locks stay.
    const session = (await login('admin@example.com', PASSWORD, '10.4.9.9')).json().token as string;
    for (let i = 0; i < 5; i++) await login('other@example.com', 'wrong password', '10.4.2.1');
    for (let i = 0; i < 5; i++) await login('admin@example.com', 'wrong password', '10.4.2.2');
    assert.equal((await unlock('admin@example.com', bearer(session))).statusCode, 204);
    assert.equal((await login('admin@example.com', PASSWORD, '10.4.2.2')).statusCode, 200);
    assert.equal((await login('other@example.com', 'wrong password', '10.4.2.1')).statusCode, 429);
    assert.equal((await unlock('not an email', bearer(session))).statusCode, 400);
  });

  test('per address: many accounts from one address get 429', async () => {
    r.clock.advance(WINDOW + 1);
    for (let i = 0; i < 20; i++) await login(`user${i}@example.com`, 'wrong password', '10.2.0.1');
    const res = await login('admin@example.com', PASSWORD, '10.2.0.1');
    assert.equal(res.statusCode, 429);
    assert.equal((await login('admin@example.com', PASSWORD, '10.2.0.2')).statusCode, 200);
    r.clock.advance(WINDOW + 1);
  });
});

for (const target of dialects()) {
  describe(`personal access tokens across instances (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let a: TestRunner;
    let b: TestRunner;
    let session: string;
    const clock = new TestClock();

    before(async () => {
      dbh = await target.create();
      a = await startRunner({ databaseUrl: dbh.url, clock });
      b = await startRunner({ databaseUrl: dbh.url, clock, dataDir: a.dataDir });
      session = (await setup(a)).session.token;
    });
    after(async () => {
      await b.close();
      await a.close();
      await dbh.drop();
    });

    const create = async (body: object) => {
      const res = await a.service.app.inject({ method: 'POST', url: '/api/tokens', headers: bearer(session), payload: body });
      assert.equal(res.statusCode, 201, res.body);
      return res.json() as { id: string; token: string; expiresAt: string | null };
    };
    const meOn = (r: TestRunner, token: string) => r.service.app.inject({ method: 'GET', url: '/api/me', headers: apiKey(token) });

    test('the token is shown once, stored hashed, and works on both instances', async () => {
      const t = await create({ name: 'ci', scope: 'read' });
      assert.match(t.token, /^rnr_pat_[0-9A-Za-z]{49}$/);
      assert.equal((await meOn(a, t.token)).statusCode, 200);
      assert.equal((await meOn(b, t.token)).json().authenticatedBy, 'pat');
      const list = await a.service.app.inject({ method: 'GET', url: '/api/tokens', headers: bearer(session) });
      assert.ok(!list.body.includes(t.token.slice(8, 40)), 'the list never shows the secret');
      const item = list.json().items.find((i: { id: string }) => i.id === t.id);
      assert.equal(item.name, 'ci');
      assert.equal(item.tokenHint, t.token.slice(-4));
    });

    test('revocation takes effect at once on the other instance', async () => {
      const t = await create({ name: 'revoke-me', scope: 'write' });
      assert.equal((await meOn(b, t.token)).statusCode, 200);
      const del = await a.service.app.inject({ method: 'DELETE', url: `/api/tokens/${t.id}`, headers: bearer(session) });
      assert.equal(del.statusCode, 204);
      assert.equal((await meOn(b, t.token)).statusCode, 401);
      assert.equal((await meOn(a, t.token)).statusCode, 401);
      const again = await a.service.app.inject({ method: 'DELETE', url: `/api/tokens/${t.id}`, headers: bearer(session) });
      assert.equal(again.statusCode, 404);
    });

    test('expiry takes effect at once on both instances', async () => {
      const expiresAt = new Date(clock.t + 3600_000).toISOString();
      const t = await create({ name: 'short', scope: 'read', expiresAt });
      assert.equal(t.expiresAt, expiresAt);
      clock.advance(3600_000 - 1);
      assert.equal((await meOn(b, t.token)).statusCode, 200);
      clock.advance(1);
      assert.equal((await meOn(b, t.token)).statusCode, 401);
      assert.equal((await meOn(a, t.token)).statusCode, 401);
      const past = await a.service.app.inject({
        method: 'POST', url: '/api/tokens', headers: bearer(session), payload: { name: 'x', scope: 'read', expiresAt: new Date(clock.t - 1).toISOString() },
      });
      assert.equal(past.statusCode, 400);
    });

    test('last use is written at most every 30 seconds', async () => {
      const t = await create({ name: 'used', scope: 'read' });
      const lastUsed = async () =>
        (await a.service.app.inject({ method: 'GET', url: '/api/tokens', headers: bearer(session) })).json().items.find((i: { id: string }) => i.id === t.id);
      assert.equal((await lastUsed()).lastUsedAt, null);
      const t0 = clock.t;
      await b.service.app.inject({ method: 'GET', url: '/api/me', headers: apiKey(t.token), remoteAddress: '10.9.9.9' });
      assert.equal((await lastUsed()).lastUsedAt, new Date(t0).toISOString());
      assert.equal((await lastUsed()).lastUsedIp, '10.9.9.9');
      clock.advance(20_000);
      await a.service.app.inject({ method: 'GET', url: '/api/me', headers: apiKey(t.token) });
      assert.equal((await lastUsed()).lastUsedAt, new Date(t0).toISOString(), 'not rewritten within 30 s');
      clock.advance(15_000);
      await a.service.app.inject({ method: 'GET', url: '/api/me', headers: apiKey(t.token), remoteAddress: '10.8.8.8' });
      assert.equal((await lastUsed()).lastUsedAt, new Date(clock.t).toISOString());
      assert.equal((await lastUsed()).lastUsedIp, '10.8.8.8');
    });

    test('profile, role, password and user deletion on one instance show on the other at once', async () => {
      // Instance b remembers credentials between requests (SQLite); every one of these changes
      // must reach it before its next request is answered.
      const created = await a.service.app.inject({
        method: 'POST', url: '/api/users', headers: bearer(session), payload: { email: 'member@example.com', password: PASSWORD, role: 'member' },
      });
      assert.equal(created.statusCode, 201, created.body);
      const memberId = created.json().id as string;
      const login = await b.service.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'member@example.com', password: PASSWORD } });
      const memberJwt = login.json().token as string;
      const pat = await b.service.app.inject({ method: 'POST', url: '/api/tokens', headers: bearer(memberJwt), payload: { name: 'm', scope: 'read' } });
      const memberPat = pat.json().token as string;
      const onB = (h: Record<string, string>, url = '/api/me') => b.service.app.inject({ method: 'GET', url, headers: h });

      assert.equal((await onB(bearer(memberJwt))).json().name, 'member');
      assert.equal((await onB(apiKey(memberPat))).json().role, 'member');
      assert.equal((await onB(bearer(memberJwt), '/api/users')).statusCode, 403);

      const renamed = await a.service.app.inject({ method: 'PATCH', url: `/api/users/${memberId}`, headers: bearer(session), payload: { name: 'Renamed', role: 'admin' } });
      assert.equal(renamed.statusCode, 200, renamed.body);
      assert.equal((await onB(bearer(memberJwt))).json().name, 'Renamed');
      assert.equal((await onB(apiKey(memberPat))).json().role, 'admin');
      assert.equal((await onB(bearer(memberJwt), '/api/users')).statusCode, 200);

      const changed = await a.service.app.inject({
        method: 'PUT', url: '/api/me/password', headers: bearer(memberJwt), payload: { currentPassword: PASSWORD, newPassword: 'another long password' },
      });
      assert.equal(changed.statusCode, 200, changed.body);
      assert.equal((await onB(bearer(memberJwt))).statusCode, 401, 'the old session ends on the other instance');
      assert.equal((await onB(apiKey(memberPat))).statusCode, 200, 'tokens outlive a password change');

      const removed = await a.service.app.inject({ method: 'DELETE', url: `/api/users/${memberId}`, headers: bearer(session) });
      assert.equal(removed.statusCode, 204, removed.body);
      assert.equal((await onB(apiKey(memberPat))).statusCode, 401, 'a deleted user\'s token fails at once');
    });

    test('a personal token sent as Bearer works like the ApiKey form, with the same scope', async () => {
      const read = await create({ name: 'bearer-read', scope: 'read' });
      const me = await a.service.app.inject({ method: 'GET', url: '/api/me', headers: bearer(read.token) });
      assert.equal(me.statusCode, 200, me.body);
      assert.equal(me.json().authenticatedBy, 'pat');
      const write = await b.service.app.inject({ method: 'POST', url: '/api/projects', headers: bearer(read.token), payload: { name: 'by-bearer' } });
      assert.equal(write.statusCode, 403, 'a read token cannot write, whichever scheme carries it');
      assert.equal(write.json().code, 'insufficient_scope');
      const tokens = await a.service.app.inject({ method: 'GET', url: '/api/tokens', headers: bearer(read.token) });
      assert.equal(tokens.statusCode, 403, 'tokens never reach token management');
      const w = await create({ name: 'bearer-write', scope: 'write' });
      const created = await b.service.app.inject({ method: 'POST', url: '/api/projects', headers: bearer(w.token), payload: { name: 'by-bearer' } });
      assert.equal(created.statusCode, 201, created.body);
      await a.service.app.inject({ method: 'DELETE', url: `/api/tokens/${w.id}`, headers: bearer(session) });
      const revoked = await b.service.app.inject({ method: 'GET', url: '/api/me', headers: bearer(w.token) });
      assert.equal(revoked.statusCode, 401);
      assert.match(revoked.json().detail, /personal access token/);
    });

    test('a token with a bad checksum or unknown value is 401, never 500', async () => {
      const t = await create({ name: 'x', scope: 'read' });
      const flipped = t.token.slice(0, 20) + (t.token[20] === 'a' ? 'b' : 'a') + t.token.slice(21);
      for (const v of [flipped, 'rnr_pat_', 'rnr_oat_abc', 'something-else-entirely', '']) {
        const res = await a.service.app.inject({ method: 'GET', url: '/api/me', headers: { authorization: `ApiKey ${v}` } });
        assert.equal(res.statusCode, 401, v);
      }
      const basic = await a.service.app.inject({ method: 'GET', url: '/api/me', headers: { authorization: 'Basic dTpw' } });
      assert.equal(basic.statusCode, 401);
    });
  });
}

describe('admin API key', () => {
  test('is disabled when API_KEY is unset', async () => {
    const r = await startRunner({ apiKey: null });
    try {
      const res = await r.service.app.inject({ method: 'GET', url: '/api/executors', headers: apiKey(API_KEY) });
      assert.equal(res.statusCode, 401);
    } finally {
      await r.close();
    }
  });

  test('a wrong key is 401, the right one admits executor routes and not user routes', async () => {
    const r = await startRunner();
    try {
      const wrong = await r.service.app.inject({ method: 'GET', url: '/api/executors', headers: apiKey(`${API_KEY.slice(0, -1)}X`) });
      assert.equal(wrong.statusCode, 401);
      const ok = await r.service.app.inject({ method: 'GET', url: '/api/executors', headers: apiKey(API_KEY) });
      assert.equal(ok.statusCode, 200);
      assert.deepEqual(ok.json(), { items: [] });
      const users = await r.service.app.inject({ method: 'GET', url: '/api/users', headers: apiKey(API_KEY) });
      assert.equal(users.statusCode, 403);
      for (const near of [API_KEY.slice(0, -1), `${API_KEY}X`, '', 'x']) {
        const res = await r.service.app.inject({ method: 'GET', url: '/api/executors', headers: { authorization: `ApiKey ${near}` } });
        assert.equal(res.statusCode, 401, `a key of another length (${near.length})`);
      }
      const spelled = await r.service.app.inject({ method: 'GET', url: '/api/executors', headers: { authorization: `APIKEY ${API_KEY}` } });
      assert.equal(spelled.statusCode, 200, 'the scheme is case-insensitive');
    } finally {
      await r.close();
    }
  });

  test('an API_KEY that starts like a token is still the admin key', async () => {
    // Token requests skip the admin key comparison by their public prefix, unless the key has it too.
    const key = `rnr_pat_${'k'.repeat(49)}`;
    const r = await startRunner({ apiKey: key });
    try {
      const ok = await r.service.app.inject({ method: 'GET', url: '/api/executors', headers: apiKey(key) });
      assert.equal(ok.statusCode, 200, ok.body);
      const wrong = await r.service.app.inject({ method: 'GET', url: '/api/executors', headers: apiKey(`rnr_pat_${'j'.repeat(49)}`) });
      assert.equal(wrong.statusCode, 401);
    } finally {
      await r.close();
    }
  });
});

for (const d of dialects()) {
  describe(`first administrator: only with the setup token (${d.name})`, () => {
    test('a fresh instance cannot be claimed from the network without the token the process printed', async () => {
      const db = await d.create();
      const databaseUrl = db.url;
      const dataDir = tempDir();
      // No RUNNER_SETUP_TOKEN: the runner makes a one-time link at start.
      const first = await startRunner({ databaseUrl, dataDir, env: { RUNNER_SETUP_TOKEN: '' } });
      const link = first.service.setupLink;
      assert.ok(link, 'a setup link while no user exists');
      const m = /^http:\/\/runner\.test\/setup#token=(rnr_setup_[A-Za-z0-9_]+)$/.exec(link);
      assert.ok(m, link);
      const token = m[1]!;
      const claim = (r: TestRunner, setupToken: string | undefined, email = 'mallory@example.com') =>
        r.service.app.inject({ method: 'POST', url: '/api/setup', payload: { ...(setupToken === undefined ? {} : { setupToken }), email, password: PASSWORD } });
      assert.equal((await claim(first, undefined)).statusCode, 400, 'the token is required');
      for (const guess of ['', 'x', `${token}x`, token.slice(0, -1), token.toUpperCase()]) {
        const res = await claim(first, guess);
        assert.ok(res.statusCode === 403 || res.statusCode === 400, `${guess}: ${res.statusCode}`);
        if (res.statusCode === 403) assert.equal(res.json().code, 'setup_token_invalid');
      }
      await first.close();
      // A restart (as with API_KEY set, which the first start advises) prints a new link, and the
      // one printed before stays valid until an administrator exists.
      const second = await startRunner({ databaseUrl, dataDir, env: { RUNNER_SETUP_TOKEN: '' } });
      try {
        const again = second.service.setupLink!;
        assert.notEqual(again, link);
        const created = await claim(second, token, 'admin@example.com');
        assert.equal(created.statusCode, 201, created.body);
        assert.equal(created.json().user.role, 'admin');
        // Used: a second claim with either token finds a user and is refused.
        assert.equal((await claim(second, token, 'b@example.com')).statusCode, 409);
        assert.equal((await claim(second, new URL(again).hash.slice('#token='.length), 'b@example.com')).statusCode, 409);
        const users = await second.service.app.inject({ method: 'GET', url: '/api/users', headers: bearer(created.json().session.token) });
        assert.deepEqual(users.json().items.map((u: { email: string }) => u.email), ['admin@example.com']);
      } finally {
        await second.close();
      }
      // Once a user exists, no link is made.
      const third = await startRunner({ databaseUrl, dataDir, env: { RUNNER_SETUP_TOKEN: '' } });
      assert.equal(third.service.setupLink, null);
      await third.close();
      await db.drop();
    });

    test(`restarts keep the newest ${MAX_SETUP_LINKS} setup links valid, and two instances starting at once both print a valid one`, async () => {
      const db = await d.create();
      const env = { RUNNER_SETUP_TOKEN: '' };
      try {
        const tokens: string[] = [];
        const tokenOf = (r: TestRunner) => new URL(r.service.setupLink!).hash.slice('#token='.length);
        const at = (minutes: number) => new TestClock(Date.parse('2030-01-01T00:00:00Z') + minutes * 60_000);
        for (let i = 0; i < MAX_SETUP_LINKS; i++) {
          const r = await startRunner({ databaseUrl: db.url, env, clock: at(i) });
          tokens.push(tokenOf(r));
          await r.close();
        }
        const [a, b] = await Promise.all([startRunner({ databaseUrl: db.url, env, clock: at(60) }), startRunner({ databaseUrl: db.url, env, clock: at(60) })]);
        tokens.push(tokenOf(a), tokenOf(b));
        try {
          const database = await openRunnerDatabase(a.config.runner.databaseUrl);
          const stored = await new SettingsRepository(database.db).listPrefixed('setup-token:');
          await database.close();
          assert.equal(stored.length, MAX_SETUP_LINKS);
          const claim = (setupToken: string) => a.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken, email: 'admin@example.com', password: PASSWORD } });
          // The oldest went; the latest ones, both racing instances' included, are valid.
          assert.equal((await claim(tokens[0]!)).statusCode, 403);
          assert.equal((await claim(tokens[1]!)).statusCode, 403);
          assert.equal((await claim(tokens.at(-2)!)).statusCode, 201);
          assert.equal((await claim(tokens.at(-1)!)).statusCode, 409);
        } finally {
          await a.close();
          await b.close();
        }
      } finally {
        await db.drop();
      }
    });

    test('sign-out ends every web session of the user, and only those', async () => {
      const db = await d.create();
      const r = await startRunner({ databaseUrl: db.url });
      try {
        const { session } = await setup(r);
        const other = (await r.service.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'admin@example.com', password: PASSWORD } })).json().token;
        const pat = (await r.service.app.inject({ method: 'POST', url: '/api/tokens', headers: bearer(session.token), payload: { name: 'ci', scope: 'read' } })).json().token;
        const out = await r.service.app.inject({ method: 'POST', url: '/api/auth/logout', headers: bearer(session.token) });
        assert.equal(out.statusCode, 204);
        assert.match(String(out.headers['set-cookie']), /^rnr_session=; Expires=Thu, 01 Jan 1970/);
        for (const t of [session.token, other]) assert.equal((await r.service.app.inject({ method: 'GET', url: '/api/me', headers: bearer(t) })).statusCode, 401);
        assert.equal((await r.service.app.inject({ method: 'GET', url: '/api/me', headers: apiKey(pat) })).statusCode, 200, 'personal access tokens keep working');
        // Personal access tokens cannot sign a user out (web sessions only).
        assert.equal((await r.service.app.inject({ method: 'POST', url: '/api/auth/logout', headers: apiKey(pat) })).statusCode, 403);
      } finally {
        await r.close();
        await db.drop();
      }
    });
  });
}

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { API_KEY, apiKey, bearer, startRunner, type TestRunner, SETUP_TOKEN } from './helpers.js';
import { authorizeClient, PASSWORD } from './oauth-helpers.js';

const EMAIL = 'owner@example.com';
/** DEFAULT_GUARD_LIMITS.perAddress: this many rejected credentials ban an address. */
const LIMIT = 50;

/**
 * The rejected-credential guard (auth/guard.ts) brakes guessing. Credentials that are genuine but
 * no longer hold (an expired OAuth access token is normal client life) guess nothing, and the
 * admin key of the executors behind an address must not be locked out by other clients there.
 */
describe('rejected-credential guard', () => {
  let r: TestRunner;
  let session: string;

  before(async () => {
    r = await startRunner();
    const setup = await r.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: EMAIL, password: PASSWORD } });
    assert.equal(setup.statusCode, 201, setup.body);
    session = setup.json().session.token;
  });
  after(() => r.close());

  const me = (authorization: string, remoteAddress: string) =>
    r.service.app.inject({ method: 'GET', url: '/api/me', headers: { authorization }, remoteAddress });
  const executors = (authorization: string, remoteAddress: string) =>
    r.service.app.inject({ method: 'GET', url: '/api/executors', headers: { authorization }, remoteAddress });

  test('expired and revoked credentials that were genuine are not scored; made-up ones are', async () => {
    const address = '10.7.0.1';
    const oauth = (await authorizeClient(r, EMAIL)).access_token;
    const pat = await r.service.app.inject({
      method: 'POST', url: '/api/tokens', headers: bearer(session), payload: { name: 'short', scope: 'read', expiresAt: new Date(r.clock.t + 60_000).toISOString() },
    });
    const revokedPat = await r.service.app.inject({ method: 'POST', url: '/api/tokens', headers: bearer(session), payload: { name: 'gone', scope: 'read' } });
    assert.equal((await me(bearer(oauth).authorization, address)).statusCode, 200);
    await r.service.app.inject({ method: 'DELETE', url: `/api/tokens/${revokedPat.json().id}`, headers: bearer(session) });
    const fresh = (await r.service.app.inject({ method: 'POST', url: '/api/tokens', headers: bearer(session), payload: { name: 'fresh', scope: 'read' } })).json().token as string;

    r.clock.advance(2 * 3600_000); // past the access token's and the short PAT's lifetimes
    for (let i = 0; i < 2 * LIMIT; i++) {
      const res = await me(bearer(oauth).authorization, address);
      assert.equal(res.statusCode, 401, `an expired OAuth access token is 401, not a ban (request ${i + 1})`);
      assert.match(res.json().detail, /expired/);
    }
    for (let i = 0; i < LIMIT; i++) {
      assert.equal((await me(apiKey(pat.json().token).authorization, address)).statusCode, 401, 'an expired personal token');
      assert.equal((await me(apiKey(revokedPat.json().token).authorization, address)).statusCode, 401, 'a revoked personal token');
    }
    assert.equal((await me(apiKey(fresh).authorization, address)).statusCode, 200, 'nothing was scored');

    // Web sessions: one this instance verified before (cached signature), one it never saw.
    const unseen = (await r.service.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: EMAIL, password: PASSWORD } })).json().token as string;
    assert.equal((await me(bearer(session).authorization, address)).statusCode, 200);
    r.clock.advance(8 * 24 * 3600_000);
    for (let i = 0; i < LIMIT; i++) {
      assert.equal((await me(bearer(session).authorization, address)).statusCode, 401, 'an expired web session');
      assert.equal((await me(bearer(unseen).authorization, address)).statusCode, 401, 'an expired web session not seen before');
    }
    assert.equal((await me(apiKey(fresh).authorization, address)).statusCode, 200, 'nothing was scored');

    for (let i = 0; i < LIMIT; i++) assert.equal((await me(`Bearer not.a.jwt${i}`, address)).statusCode, 401);
    const banned = await me(apiKey(fresh).authorization, address);
    assert.equal(banned.statusCode, 429, 'made-up credentials are still scored');
    assert.ok(Number(banned.headers['retry-after']) > 0);
    r.clock.advance(24 * 3600_000);
  });

  test('the right admin key is never locked out by the failures of other clients behind its address', async () => {
    const address = '10.7.0.2';
    for (let i = 0; i < LIMIT / 2; i++) assert.equal((await executors(`ApiKey wrong-executor-key-${i}-0123456789abcdef`, address)).statusCode, 401);
    for (let i = 0; i < LIMIT / 2; i++) assert.equal((await me(`ApiKey rnr_pat_made_up_${i}`, address)).statusCode, 401);
    const locked = await executors(`ApiKey wrong-executor-key-x-0123456789abcdef`, address);
    assert.equal(locked.statusCode, 429, 'the address is banned for guessing');
    const ok = await executors(apiKey(API_KEY).authorization, address);
    assert.equal(ok.statusCode, 200, 'the executors behind the address keep working');
    assert.deepEqual(ok.json(), { items: [] });
    r.clock.advance(24 * 3600_000);
  });
});

import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { openRunnerDatabase, type RunnerDatabase } from '../../src/runner/db/index.js';
import { OAuthGrantsRepository } from '../../src/runner/oauth/grants-repository.js';
import { OAuthClientsRepository } from '../../src/runner/oauth/repository.js';
import { OAuthService } from '../../src/runner/oauth/service.js';
import { dialects } from '../helpers/db.js';
import { bearer, SETUP_TOKEN, startRunner, TestClock, type TestRunner } from './helpers.js';
import { Browser, hiddenFields, injectFetch, PASSWORD, signIn } from './oauth-helpers.js';

const EMAIL = 'dan@example.com';
const REDIRECT = 'http://127.0.0.1:5555/cb';
/** The race was lost in 10 of 25 tries between two instances; many more tries here. */
const TRIALS = 40;

/**
 * Approving an application's consent while an administrator disables the account, on two
 * instances of one database: whichever commits first, the account ends up with no live grant, so
 * enabling it again brings back neither the application nor any token from its code.
 */
for (const target of dialects()) {
  describe(`consent approved while the account is being disabled (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let a: TestRunner;
    let b: TestRunner;
    let admin: Record<string, string>;
    let userId: string;
    let clientId: string;
    let database: RunnerDatabase;
    const clock = new TestClock();

    before(async () => {
      dbh = await target.create();
      a = await startRunner({ databaseUrl: dbh.url, clock });
      b = await startRunner({ databaseUrl: dbh.url, clock, dataDir: a.dataDir });
      const setup = await a.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } });
      assert.equal(setup.statusCode, 201, setup.body);
      admin = bearer(setup.json().session.token);
      const user = await a.service.app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { email: EMAIL, password: PASSWORD } });
      assert.equal(user.statusCode, 201, user.body);
      userId = user.json().id;
      const reg = await a.service.app.inject({
        method: 'POST', url: '/oauth/register', payload: { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', client_name: 'Race app' },
      });
      assert.equal(reg.statusCode, 201, reg.body);
      clientId = reg.json().client_id;
      database = await openRunnerDatabase(dbh.url);
    });
    after(async () => {
      await database.close();
      await b.close();
      await a.close();
      await dbh.drop();
    });

    const setDisabled = async (on: TestRunner, disabled: boolean) => {
      const res = await on.service.app.inject({ method: 'PATCH', url: `/api/users/${userId}`, headers: admin, payload: { disabled } });
      assert.equal(res.statusCode, 200, res.body);
    };

    /** What a client holding `location` gets once the account is enabled again: no working token, no connected app. */
    async function leftovers(location: string | null, verifier: string): Promise<string[]> {
      const found: string[] = [];
      const code = location === null ? null : new URL(location).searchParams.get('code');
      if (code) {
        const res = await b.service.app.inject({
          method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: REDIRECT, client_id: clientId }).toString(),
        });
        if (res.statusCode === 200) {
          const me = await a.service.app.inject({ method: 'GET', url: '/api/me', headers: bearer(res.json().access_token) });
          found.push(`the code gave a token that answers ${me.statusCode}`);
        } else {
          assert.equal(res.json().error, 'invalid_grant', res.body);
        }
      }
      const live = await database.db.selectFrom('oauth_grants').select('id').where('user_id', '=', userId).where('revoked_at', 'is', null).execute();
      if (live.length > 0) found.push(`${live.length} live grant(s)`);
      return found;
    }

    /** A signed-in browser on the consent screen of instance `a`; answers its form and the PKCE verifier. */
    async function onConsentScreen(): Promise<{ browser: Browser; fields: Record<string, string>; verifier: string }> {
      const origin = a.config.runner.url;
      const browser = new Browser(injectFetch(a, origin));
      await signIn(browser, origin, EMAIL);
      const verifier = randomBytes(32).toString('base64url');
      const q = new URLSearchParams({
        client_id: clientId, redirect_uri: REDIRECT, response_type: 'code', state: 's', scope: 'read',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
      });
      const page = await browser.request(`${origin}/oauth/authorize?${q}`);
      assert.equal(page.status, 200, 'the consent screen is shown');
      return { browser, fields: hiddenFields(await page.text()), verifier };
    }

    test('an approval that reaches the database after the disabling grants nothing', async () => {
      // The consent screen was answered by a session checked before the disabling committed: the
      // approval itself must see the account disabled (an OAuth service of its own on the same
      // database, as a second instance would be).
      const { fields, verifier } = await onConsentScreen();
      await setDisabled(b, true);
      const clients = new OAuthClientsRepository(database.db);
      const oauth = new OAuthService({ clients, grants: new OAuthGrantsRepository(database.db), now: clock.now, issuer: a.config.runner.url, accessTokenTtlSeconds: 3600 });
      const location = await oauth.approve(await oauth.authorizationRequest(fields), userId);
      await setDisabled(b, false);
      // Whatever the approval answered, enabling the account again must not bring a grant back.
      assert.deepEqual(await leftovers(location, verifier), []);
      assert.equal(location, null, 'no code for a disabled account');
    });

    test(`approving on one instance while another disables the account: ${TRIALS} races, no live grant afterwards`, async (t) => {
      const failures: string[] = [];
      const outcomes = { approved: 0, refused: 0 };
      for (let trial = 0; trial < TRIALS; trial++) {
        const { browser, fields, verifier } = await onConsentScreen();
        const origin = a.config.runner.url;
        const approve = async () => {
          // Each trial starts the two a different number of event-loop turns apart, so the
          // disabling lands at different steps of the approval.
          for (let i = 0; i < trial % 8; i++) await new Promise((r) => setImmediate(r));
          return browser.post(`${origin}/oauth/authorize`, { ...fields, decision: 'approve' });
        };
        const disable = async () => {
          for (let i = 0; i < (trial >> 3) % 4; i++) await new Promise((r) => setImmediate(r));
          await setDisabled(b, true);
        };
        const [decided] = await Promise.all([approve(), disable()]);
        // Approved before the disabling (a redirect with a code), or refused after it (a page, or
        // the sign-in page once the session had ended): never a 5xx.
        assert.ok([303, 403].includes(decided.status), `trial ${trial}: ${decided.status}`);
        const location = decided.headers.get('location');
        const withCode = location?.startsWith(REDIRECT) === true;
        outcomes[withCode ? 'approved' : 'refused']++;
        await setDisabled(b, false);
        for (const f of await leftovers(withCode ? location : null, verifier)) failures.push(`trial ${trial}: ${f}`);
        // The next trial's grant is told apart by time; the code lifetime is not reached.
        clock.advance(1000);
      }
      t.diagnostic(`approved before the disabling: ${outcomes.approved}, refused after it: ${outcomes.refused}`);
      assert.deepEqual(failures, [], JSON.stringify(outcomes));
    });
  });
}

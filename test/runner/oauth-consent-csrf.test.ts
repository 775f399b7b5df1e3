import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startRunner, type TestRunner, SETUP_TOKEN } from './helpers.js';
import { Browser, hiddenFields, injectFetch, PASSWORD, signIn } from './oauth-helpers.js';

const REDIRECT = 'http://127.0.0.1:5555/cb';

/**
 * The consent form's anti-forgery token is bound to the signed-in session on the server: a token
 * chosen by the client (cookie and form field set to the same value), or one taken from another
 * session, decides nothing. On https the cookies carry the `__Host-` prefix (RFC 6265bis §4.1.3.2),
 * so a sibling host cannot plant them.
 */
for (const runnerUrl of ['http://runner.test', 'https://runner.test']) {
  describe(`consent form anti-forgery token (${runnerUrl})`, () => {
    let r: TestRunner;
    let clientId: string;
    const https = runnerUrl.startsWith('https:');
    const prefix = https ? '__Host-' : '';

    before(async () => {
      r = await startRunner({ env: { RUNNER_URL: runnerUrl } });
      for (const email of ['alice@example.com', 'mallory@example.com']) {
        const created = await r.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email, password: PASSWORD } });
        if (created.statusCode !== 201) {
          const admin = await r.service.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'alice@example.com', password: PASSWORD } });
          const res = await r.service.app.inject({
            method: 'POST', url: '/api/users', headers: { authorization: `Bearer ${admin.json().token}` }, payload: { email, password: PASSWORD, role: 'member' },
          });
          assert.equal(res.statusCode, 201, res.body);
        }
      }
      const reg = await r.service.app.inject({
        method: 'POST', url: '/oauth/register', payload: { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', client_name: 'App' },
      });
      clientId = reg.json().client_id;
    });
    after(() => r.close());

    const authorizeQuery = () => {
      const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
      return new URLSearchParams({ client_id: clientId, redirect_uri: REDIRECT, response_type: 'code', state: 's', code_challenge: challenge, code_challenge_method: 'S256' });
    };

    /** A browser signed in as `email` as the web UI signs in; returns it with the cookies set. */
    async function signedIn(email: string) {
      const browser = new Browser(injectFetch(r, runnerUrl));
      const res = await signIn(browser, runnerUrl, email);
      return { browser, setCookies: res.headers.getSetCookie() };
    }

    async function consentFields(browser: Browser): Promise<Record<string, string>> {
      const page = await browser.request(`${runnerUrl}/oauth/authorize?${authorizeQuery()}`);
      assert.equal(page.status, 200);
      return hiddenFields(await page.text());
    }

    const decided = (res: Response) => new URL(res.headers.get('location') ?? 'x:/').searchParams.has('code');

    test('the form of the signed-in session approves (control)', async () => {
      const { browser } = await signedIn('alice@example.com');
      const res = await browser.post(`${runnerUrl}/oauth/authorize`, { ...(await consentFields(browser)), decision: 'approve' });
      assert.equal(res.status, 303);
      assert.ok(decided(res), 'a code is issued');
    });

    test('a token chosen by the client (cookie and field alike) is refused and issues nothing', async () => {
      const { browser } = await signedIn('alice@example.com');
      const fields = await consentFields(browser);
      const chosen = 'a'.repeat(64);
      browser.cookies.set(`${prefix}rnr_csrf`, chosen);
      const res = await browser.post(`${runnerUrl}/oauth/authorize`, { ...fields, csrf: chosen, decision: 'approve' });
      assert.equal(res.status, 403);
      assert.ok(!decided(res));
    });

    test("another session's token is refused: the token belongs to the session it was shown to", async () => {
      const alice = await signedIn('alice@example.com');
      const mallory = await signedIn('mallory@example.com');
      const malloryFields = await consentFields(mallory.browser);
      // Mallory's own page, cookies and all, replayed into Alice's session.
      for (const [name, value] of mallory.browser.cookies) if (!name.endsWith('rnr_session')) alice.browser.cookies.set(name, value);
      const res = await alice.browser.post(`${runnerUrl}/oauth/authorize`, { ...malloryFields, decision: 'approve' });
      assert.equal(res.status, 403);
      assert.ok(!decided(res));
    });

    test('a new session invalidates the forms shown to the old one', async () => {
      const { browser } = await signedIn('alice@example.com');
      const fields = await consentFields(browser);
      r.clock.advance(1_000); // another login issues a different session token
      await signIn(browser, runnerUrl, 'alice@example.com');
      const stale = await browser.post(`${runnerUrl}/oauth/authorize`, { ...fields, decision: 'approve' });
      assert.equal(stale.status, 403);
    });

    test('a sign-in through the API sets the session cookie only when asked (browserSession), and a sign-out clears it', async () => {
      const plain = await r.service.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'alice@example.com', password: PASSWORD } });
      assert.equal(plain.statusCode, 200);
      assert.equal(plain.headers['set-cookie'], undefined);
      const { browser } = await signedIn('alice@example.com');
      const session = browser.cookies.get(`${prefix}rnr_session`);
      assert.ok(session);
      const out = await browser.request(`${runnerUrl}/api/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${session}` } });
      assert.equal(out.status, 204);
      assert.equal(browser.cookies.get(`${prefix}rnr_session`), '', 'the cookie is cleared');
      // Signing out ended the session for the consent screen too: it sends to the sign-in page.
      browser.cookies.set(`${prefix}rnr_session`, session);
      const page = await browser.request(`${runnerUrl}/oauth/authorize?${authorizeQuery()}`);
      assert.equal(page.status, 303);
      assert.match(page.headers.get('location') ?? '', /^\/login\?return_to=%2Foauth%2Fauthorize%3F/);
    });

    test(`cookies are ${https ? '__Host- prefixed, Secure, Path=/ and without Domain' : 'plain on http'}`, async () => {
      const { setCookies } = await signedIn('alice@example.com');
      const names = setCookies.map((c) => c.split('=')[0]);
      assert.deepEqual(names, [`${prefix}rnr_session`]);
      for (const c of setCookies) {
        const attrs = c.split(';').map((x) => x.trim().toLowerCase());
        assert.ok(attrs.includes('httponly'), c);
        assert.equal(attrs.includes('secure'), https, c);
        if (https) {
          assert.ok(attrs.includes('path=/'), c);
          assert.ok(!attrs.some((a) => a.startsWith('domain=')), c);
        }
      }
    });
  });
}

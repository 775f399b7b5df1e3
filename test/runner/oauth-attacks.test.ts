import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/db.js';
import { startRunner, type TestRunner, SETUP_TOKEN } from './helpers.js';
import { Browser, consent, hiddenFields, PASSWORD } from './oauth-helpers.js';

const RUNNER_URL = 'http://runner.test';
const EMAIL = 'owner@example.com';
const REDIRECT = 'http://127.0.0.1:5555/cb';

/** fetch() over app.inject, so the attack suite needs no port. */
function injectFetch(r: TestRunner) {
  return async (url: string, init: RequestInit = {}): Promise<Response> => {
    const u = new URL(url, RUNNER_URL);
    const res = await r.service.app.inject({
      method: (init.method ?? 'GET') as 'GET',
      url: u.pathname + u.search,
      headers: Object.fromEntries(new Headers(init.headers)),
      ...(init.body ? { payload: String(init.body) } : {}),
    });
    const headers = new Headers();
    for (const [k, v] of Object.entries(res.headers)) for (const one of [v].flat()) if (one !== undefined) headers.append(k, String(one));
    return new Response(res.statusCode === 204 || res.statusCode === 304 ? null : res.body, { status: res.statusCode, headers });
  };
}

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

for (const target of dialects()) {
  describe(`OAuth attack suite (${target.name})`, () => {
    let r: TestRunner;
    let drop: () => Promise<void>;
    let fetcher: ReturnType<typeof injectFetch>;
    let browser: Browser;

    before(async () => {
      const db = await target.create();
      drop = db.drop;
      r = await startRunner({ databaseUrl: db.url });
      fetcher = injectFetch(r);
      const setup = await r.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: EMAIL, password: PASSWORD } });
      assert.equal(setup.statusCode, 201);
      browser = new Browser(fetcher);
    });
    after(async () => {
      await r.close();
      await drop();
    });

    async function register(extra: Record<string, unknown> = {}): Promise<{ client_id: string; client_secret?: string }> {
      const res = await r.service.app.inject({
        method: 'POST',
        url: '/oauth/register',
        payload: { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', client_name: 'Test app', ...extra },
      });
      assert.equal(res.statusCode, 201, res.body);
      return res.json();
    }

    function authorizeUrl(params: Record<string, string | undefined>): string {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v);
      return `${RUNNER_URL}/oauth/authorize?${q}`;
    }

    const token = (form: Record<string, string>, headers: Record<string, string> = {}) =>
      r.service.app.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        payload: new URLSearchParams(form).toString(),
      });
    const me = (accessToken: string) => r.service.app.inject({ method: 'GET', url: '/api/me', headers: { authorization: `Bearer ${accessToken}` } });

    /** Consent approved; returns the code and what is needed to redeem it. */
    async function code(clientId: string, opts: { scope?: string; redirect?: string } = {}) {
      const p = pkce();
      const location = new URL(
        await consent(browser, RUNNER_URL, authorizeUrl({
          client_id: clientId, redirect_uri: opts.redirect ?? REDIRECT, response_type: 'code', state: 's1',
          code_challenge: p.challenge, code_challenge_method: 'S256', scope: opts.scope,
        }), { email: EMAIL }),
      );
      assert.equal(location.searchParams.get('iss'), RUNNER_URL);
      assert.equal(location.searchParams.get('state'), 's1');
      const c = location.searchParams.get('code');
      assert.ok(c, location.href);
      return { code: c, verifier: p.verifier };
    }

    async function tokens(clientId: string, scope?: string) {
      const c = await code(clientId, { scope });
      const res = await token({ grant_type: 'authorization_code', code: c.code, code_verifier: c.verifier, redirect_uri: REDIRECT, client_id: clientId });
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as { access_token: string; refresh_token: string; scope: string };
    }

    async function authorizeRedirect(params: Record<string, string | undefined>) {
      const res = await browser.request(authorizeUrl(params));
      return res;
    }

    test('PKCE: missing or plain challenges are refused, never redirected automatically; a wrong verifier gets invalid_grant', async () => {
      const { client_id } = await register();
      const base = { client_id, redirect_uri: REDIRECT, response_type: 'code', state: 'xyz' };
      for (const extra of [{}, { code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' }, { code_challenge: 'a'.repeat(43) }]) {
        const res = await authorizeRedirect({ ...base, ...extra });
        // An error page with the error response as a link: a self-registered redirect URI must
        // not turn this server into an open redirector (RFC 9700 §4.11.2).
        assert.equal(res.status, 400);
        assert.equal(res.headers.get('location'), null);
        const href = /<a href="([^"]+)"/.exec(await res.text())?.[1]?.replaceAll('&amp;', '&');
        assert.ok(href, 'a link back to the application');
        const loc = new URL(href);
        assert.equal(loc.origin + loc.pathname, REDIRECT);
        assert.equal(loc.searchParams.get('error'), 'invalid_request');
        assert.equal(loc.searchParams.get('state'), 'xyz');
        assert.equal(loc.searchParams.get('iss'), RUNNER_URL);
      }
      const c = await code(client_id);
      const wrong = await token({ grant_type: 'authorization_code', code: c.code, code_verifier: pkce().verifier, redirect_uri: REDIRECT, client_id });
      assert.equal(wrong.statusCode, 400);
      assert.equal(wrong.json().error, 'invalid_grant');
      assert.equal(wrong.headers['cache-control'], 'no-store');
      const none = await token({ grant_type: 'authorization_code', code: c.code, redirect_uri: REDIRECT, client_id });
      assert.equal(none.json().error, 'invalid_request');
    });

    test('code replay fails and revokes the tokens the first use issued', async () => {
      const { client_id } = await register();
      const c = await code(client_id);
      const form = { grant_type: 'authorization_code', code: c.code, code_verifier: c.verifier, redirect_uri: REDIRECT, client_id };
      const first = await token(form);
      assert.equal(first.statusCode, 200);
      assert.equal((await me(first.json().access_token)).statusCode, 200);
      const replay = await token(form);
      assert.equal(replay.statusCode, 400);
      assert.equal(replay.json().error, 'invalid_grant');
      assert.equal((await me(first.json().access_token)).statusCode, 401, 'the first access token is revoked');
      const refresh = await token({ grant_type: 'refresh_token', refresh_token: first.json().refresh_token, client_id });
      assert.equal(refresh.json().error, 'invalid_grant', 'and its refresh token');
    });

    test('redirect URI mismatch and open-redirect attempts get an error page, never a redirect', async () => {
      const { client_id } = await register({ redirect_uris: [REDIRECT, 'https://app.example/cb'] });
      const p = pkce();
      const base = { client_id, response_type: 'code', code_challenge: p.challenge, code_challenge_method: 'S256' };
      for (const redirect_uri of ['https://evil.example/cb', 'https://app.example/cb/../evil', 'https://app.example/cb?x=1', 'http://127.0.0.1:5555/other', 'https://app.example/cb#x', undefined]) {
        const res = await authorizeRedirect({ ...base, redirect_uri });
        assert.equal(res.status, 400, String(redirect_uri));
        assert.equal(res.headers.get('location'), null);
        assert.match(await res.text(), /cannot be processed/);
      }
      const unknown = await authorizeRedirect({ ...base, client_id: 'rnr_cid_unknown', redirect_uri: REDIRECT });
      assert.equal(unknown.status, 400);
      // RFC 8252 §7.3: a loopback redirect may change its port.
      const otherPort = await code(client_id, { redirect: 'http://127.0.0.1:6001/cb' });
      const ok = await token({ grant_type: 'authorization_code', code: otherPort.code, code_verifier: otherPort.verifier, redirect_uri: 'http://127.0.0.1:6001/cb', client_id });
      assert.equal(ok.statusCode, 200);
      // The old login address sends to the web UI's sign-in, and only with a return to our own pages.
      const anon = new Browser(fetcher);
      for (const evil of ['//evil.example/x', 'https://evil.example/', '/\\evil.example']) {
        const login = await anon.request(`${RUNNER_URL}/oauth/login?return_to=${encodeURIComponent(evil)}`);
        assert.equal(login.status, 303);
        assert.equal(login.headers.get('location'), '/login?return_to=%2Fconnected-apps');
      }
    });

    test('a code for a different redirect_uri or client is refused', async () => {
      const a = await register();
      const b = await register();
      const c = await code(a.client_id);
      const mismatch = await token({ grant_type: 'authorization_code', code: c.code, code_verifier: c.verifier, redirect_uri: 'http://127.0.0.1:5555/other', client_id: a.client_id });
      assert.equal(mismatch.json().error, 'invalid_grant');
      const other = await token({ grant_type: 'authorization_code', code: c.code, code_verifier: c.verifier, redirect_uri: REDIRECT, client_id: b.client_id });
      assert.equal(other.json().error, 'invalid_grant');
      const t = await tokens(a.client_id);
      const stolen = await token({ grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id: b.client_id });
      assert.equal(stolen.json().error, 'invalid_grant');
      const conf = await register({ token_endpoint_auth_method: 'client_secret_basic' });
      const basic = (secret: string) => ({ authorization: `Basic ${Buffer.from(`${conf.client_id}:${secret}`).toString('base64')}` });
      const bad = await token({ grant_type: 'refresh_token', refresh_token: t.refresh_token }, basic('wrong'));
      assert.equal(bad.statusCode, 401);
      assert.equal(bad.json().error, 'invalid_client');
      assert.match(String(bad.headers['www-authenticate']), /^Basic /);
      const asPublic = await token({ grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id: conf.client_id });
      assert.equal(asPublic.json().error, 'invalid_client', 'a confidential client must authenticate');
    });

    test('refresh token reuse after the grace window revokes the whole grant; concurrent reuse within it is served', async () => {
      const { client_id } = await register();
      const t = await tokens(client_id);
      const first = await token({ grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id });
      assert.equal(first.statusCode, 200);
      r.clock.advance(2_000);
      const concurrent = await token({ grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id });
      assert.equal(concurrent.statusCode, 200, 'within the grace window');
      r.clock.advance(10_000);
      const reuse = await token({ grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id });
      assert.equal(reuse.statusCode, 400);
      assert.equal(reuse.json().error, 'invalid_grant');
      for (const tok of [first.json(), concurrent.json()]) {
        assert.equal((await me(tok.access_token)).statusCode, 401, 'access tokens of the grant are revoked');
        assert.equal((await token({ grant_type: 'refresh_token', refresh_token: tok.refresh_token, client_id })).json().error, 'invalid_grant');
      }
    });

    test('two processes refreshing with one token inside the grace window both keep a working chain; stale reuse still revokes', async () => {
      const { client_id } = await register();
      const t = await tokens(client_id);
      const refresh = (rt: string) => token({ grant_type: 'refresh_token', refresh_token: rt, client_id });
      // Both processes hold the same refresh token and refresh at (almost) the same time.
      const [a0, b0] = await Promise.all([refresh(t.refresh_token), refresh(t.refresh_token)]);
      assert.deepEqual([a0.statusCode, b0.statusCode], [200, 200]);
      let a = a0.json();
      let b = b0.json();
      const rotated: string[] = [t.refresh_token];
      for (let round = 0; round < 3; round++) {
        r.clock.advance(60_000); // each chain moves on long after the grace window
        for (const chain of ['a', 'b'] as const) {
          const held = chain === 'a' ? a : b;
          const next = await refresh(held.refresh_token);
          assert.equal(next.statusCode, 200, `chain ${chain}, round ${round}: ${next.body}`);
          rotated.push(held.refresh_token);
          if (chain === 'a') a = next.json();
          else b = next.json();
        }
        assert.equal((await me(a.access_token)).statusCode, 200, 'chain a works');
        assert.equal((await me(b.access_token)).statusCode, 200, 'chain b works');
      }
      r.clock.advance(60_000);
      const stale = await refresh(rotated[2]!);
      assert.equal(stale.json().error, 'invalid_grant', 'a rotated token used after the grace window is reuse');
      for (const x of [a, b]) {
        assert.equal((await me(x.access_token)).statusCode, 401, 'the whole grant is revoked');
        assert.equal((await refresh(x.refresh_token)).json().error, 'invalid_grant');
      }
    });

    test('a used code presented by another client is refused without touching the owner\'s grant', async () => {
      const a = await register();
      const b = await register();
      const c = await code(a.client_id);
      const first = await token({ grant_type: 'authorization_code', code: c.code, code_verifier: c.verifier, redirect_uri: REDIRECT, client_id: a.client_id });
      assert.equal(first.statusCode, 200);
      const other = await token({ grant_type: 'authorization_code', code: c.code, code_verifier: c.verifier, redirect_uri: REDIRECT, client_id: b.client_id });
      assert.equal(other.json().error, 'invalid_grant');
      assert.equal((await me(first.json().access_token)).statusCode, 200, "another client's replay does not revoke");
    });

    test('a client registered without the refresh_token grant gets no refresh token and cannot refresh', async () => {
      const { client_id } = await register({ grant_types: ['authorization_code'] });
      const c = await code(client_id);
      const res = await token({ grant_type: 'authorization_code', code: c.code, code_verifier: c.verifier, redirect_uri: REDIRECT, client_id });
      assert.equal(res.statusCode, 200);
      assert.equal(res.json().refresh_token, undefined);
      const refresh = await token({ grant_type: 'refresh_token', refresh_token: 'rnr_ort_x', client_id });
      assert.equal(refresh.json().error, 'unauthorized_client');
    });

    test('races: one of two simultaneous code redemptions wins and the loser revokes it; simultaneous refreshes are both served', async () => {
      const { client_id } = await register();
      const c = await code(client_id);
      const form = { grant_type: 'authorization_code', code: c.code, code_verifier: c.verifier, redirect_uri: REDIRECT, client_id };
      const both = await Promise.all([token(form), token(form)]);
      assert.deepEqual(both.map((x) => x.statusCode).sort(), [200, 400]);
      const winner = both.find((x) => x.statusCode === 200)!.json();
      assert.equal((await me(winner.access_token)).statusCode, 401, 'the replay revoked the winner\'s tokens');
      const t = await tokens(client_id);
      const refreshes = await Promise.all([1, 2, 3].map(() => token({ grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id })));
      assert.deepEqual(refreshes.map((x) => x.statusCode), [200, 200, 200], 'within the grace window');
      for (const x of refreshes) assert.equal((await me(x.json().access_token)).statusCode, 200);
    });

    test('expired codes and access tokens are refused', async () => {
      const { client_id } = await register();
      const c = await code(client_id);
      r.clock.advance(10 * 60_000 + 1_000);
      const late = await token({ grant_type: 'authorization_code', code: c.code, code_verifier: c.verifier, redirect_uri: REDIRECT, client_id });
      assert.equal(late.json().error, 'invalid_grant');
      assert.match(late.json().error_description, /expired/);
      const t = await tokens(client_id);
      assert.equal((await me(t.access_token)).statusCode, 200);
      r.clock.advance(3600_000 + 1_000);
      assert.equal((await me(t.access_token)).statusCode, 401, 'after 1 hour');
      const renewed = await token({ grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id });
      assert.equal(renewed.statusCode, 200, 'the refresh token still works');
      assert.equal((await me(renewed.json().access_token)).statusCode, 200);
    });

    test('scope can only narrow on refresh; a narrowed token has read rights only', async () => {
      const { client_id } = await register();
      const read = await tokens(client_id, 'read');
      const up = await token({ grant_type: 'refresh_token', refresh_token: read.refresh_token, client_id, scope: 'write' });
      assert.equal(up.statusCode, 400);
      assert.equal(up.json().error, 'invalid_scope');
      const write = await tokens(client_id, 'write');
      const narrowed = await token({ grant_type: 'refresh_token', refresh_token: write.refresh_token, client_id, scope: 'read' });
      assert.equal(narrowed.json().scope, 'read');
      const post = await r.service.app.inject({ method: 'POST', url: '/api/projects', headers: { authorization: `ApiKey ${narrowed.json().access_token}` }, payload: { name: 'p' } });
      assert.equal(post.statusCode, 403);
      assert.equal(post.json().code, 'insufficient_scope');
      const again = await token({ grant_type: 'refresh_token', refresh_token: narrowed.json().refresh_token, client_id, scope: 'write' });
      assert.equal(again.statusCode, 200, 'the refresh token keeps the granted scope (RFC 6749 §6)');
      const restricted = await register({ scope: 'read' });
      const res = await authorizeRedirect({ client_id: restricted.client_id, redirect_uri: REDIRECT, response_type: 'code', code_challenge: pkce().challenge, code_challenge_method: 'S256', scope: 'write' });
      assert.equal(res.status, 400);
      assert.match(await res.text(), /error=invalid_scope/);
    });

    test('consent: CSRF token required, not frameable, deny returns access_denied', async () => {
      const { client_id } = await register({ client_name: '<script>alert(1)</script>' });
      const p = pkce();
      const url = authorizeUrl({ client_id, redirect_uri: REDIRECT, response_type: 'code', state: 'st', code_challenge: p.challenge, code_challenge_method: 'S256' });
      const page = await browser.request(url);
      assert.equal(page.status, 200);
      assert.equal(page.headers.get('x-frame-options'), 'DENY');
      assert.match(String(page.headers.get('content-security-policy')), /frame-ancestors 'none'/);
      const html = await page.text();
      assert.ok(!html.includes('<script>alert(1)'), 'the client name is escaped');
      assert.match(html, /not verified/);
      assert.match(html, /127\.0\.0\.1:5555/);
      const fields = hiddenFields(html);
      const { csrf, ...withoutCsrf } = fields;
      assert.ok(csrf);
      for (const form of [withoutCsrf, { ...withoutCsrf, csrf: 'f'.repeat(64) }]) {
        const forged = await browser.post(`${RUNNER_URL}/oauth/authorize`, { ...form, decision: 'approve' });
        assert.equal(forged.status, 403);
        assert.equal(forged.headers.get('location'), null);
      }
      const noCookie = await new Browser(fetcher).post(`${RUNNER_URL}/oauth/authorize`, { ...fields, decision: 'approve' });
      assert.equal(noCookie.status, 403, 'the token alone, without the cookie, is not enough');
      const denied = await browser.post(`${RUNNER_URL}/oauth/authorize`, { ...fields, decision: 'deny' });
      const loc = new URL(denied.headers.get('location')!);
      assert.equal(loc.searchParams.get('error'), 'access_denied');
      assert.equal(loc.searchParams.get('state'), 'st');
      assert.equal(loc.searchParams.get('iss'), RUNNER_URL);
      assert.equal(loc.searchParams.get('code'), null);
    });

    test('token endpoint: form-encoded only, RFC 6749 errors, unknown tokens revoke with 200', async () => {
      const json = await r.service.app.inject({ method: 'POST', url: '/oauth/token', payload: { grant_type: 'refresh_token' } });
      assert.equal(json.statusCode, 400);
      assert.equal(json.json().error, 'invalid_request');
      const { client_id } = await register();
      assert.equal((await token({ grant_type: 'password', client_id })).json().error, 'unsupported_grant_type');
      assert.equal((await token({ grant_type: 'refresh_token', client_id, refresh_token: 'rnr_ort_nope' })).json().error, 'invalid_grant');
      const revoke = await r.service.app.inject({
        method: 'POST', url: '/oauth/revoke', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ token: 'rnr_oat_unknown', client_id }).toString(),
      });
      assert.equal(revoke.statusCode, 200);
      const t = await tokens(client_id);
      const revokeAccess = await r.service.app.inject({
        method: 'POST', url: '/oauth/revoke', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ token: t.access_token, client_id }).toString(),
      });
      assert.equal(revokeAccess.statusCode, 200);
      assert.equal((await me(t.access_token)).statusCode, 401);
    });

    test('connected apps: listed for the web session only; revoking stops the tokens at once', async () => {
      const { client_id } = await register({ client_name: 'Connected' });
      const t = await tokens(client_id, 'write');
      const login = await r.service.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: EMAIL, password: PASSWORD } });
      const session = { authorization: `Bearer ${login.json().token}` };
      const list = await r.service.app.inject({ method: 'GET', url: '/api/connected-apps', headers: session });
      assert.equal(list.statusCode, 200, list.body);
      const app = list.json().items.find((a: { id: string }) => a.id === client_id);
      assert.equal(app.name, 'Connected');
      assert.equal(app.scope, 'write');
      assert.ok(app.firstAuthorizedAt && app.lastUsedAt);
      // Last use follows API calls made with the token (written at most every 30 s).
      r.clock.advance(60_000);
      assert.equal((await me(t.access_token)).statusCode, 200);
      const used = (await r.service.app.inject({ method: 'GET', url: '/api/connected-apps', headers: session })).json().items.find((a: { id: string }) => a.id === client_id);
      assert.equal(used.lastUsedAt, r.clock.now().toISOString());
      assert.equal(used.firstAuthorizedAt, app.firstAuthorizedAt);
      const withToken = await r.service.app.inject({ method: 'GET', url: '/api/connected-apps', headers: { authorization: `Bearer ${t.access_token}` } });
      assert.equal(withToken.statusCode, 403, 'an OAuth token cannot see or revoke connected apps');
      assert.equal((await me(t.access_token)).statusCode, 200);
      const del = await r.service.app.inject({ method: 'DELETE', url: `/api/connected-apps/${client_id}`, headers: session });
      assert.equal(del.statusCode, 204);
      assert.equal((await me(t.access_token)).statusCode, 401, 'effective at once');
      assert.equal((await token({ grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id })).json().error, 'invalid_grant');
      const again = await r.service.app.inject({ method: 'DELETE', url: `/api/connected-apps/${client_id}`, headers: session });
      assert.equal(again.statusCode, 404);
      // The page is the web UI's (a client of these two operations): the server sends it no data.
      const page = await browser.request(`${RUNNER_URL}/connected-apps`);
      assert.equal(page.status, 200);
      assert.ok(!(await page.text()).includes(client_id));
      assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    });
  });
}

import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import type { TestRunner } from './helpers.js';

export const PASSWORD = 'a long enough password';

/** A tiny browser: follows nothing by itself, keeps cookies, reads hidden form fields. */
export class Browser {
  readonly cookies = new Map<string, string>();
  constructor(private readonly fetcher: (url: string, init?: RequestInit) => Promise<Response>) {}

  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size) headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await this.fetcher(url, { ...init, headers, redirect: 'manual' });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return res;
  }

  post(url: string, form: Record<string, string>): Promise<Response> {
    return this.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });
  }
}

export function hiddenFields(html: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) {
    out[m[1]!] = m[2]!.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#39;/g, "'");
  }
  return out;
}

/**
 * Drives the authorization endpoint as a user would over HTTP: login page when needed, then
 * the consent screen, then the decision. Returns the Location the browser is sent to.
 */
export async function consent(
  browser: Browser,
  origin: string,
  authorizationUrl: string,
  opts: { email: string; password?: string; decision?: 'approve' | 'approve-read' | 'deny' },
): Promise<string> {
  const u = new URL(authorizationUrl);
  let res = await browser.request(`${origin}${u.pathname}${u.search}`);
  if (res.status === 303 && res.headers.get('location')!.startsWith('/login?')) {
    // The web UI's sign-in page: it signs in through the API and asks for the session cookie too.
    const returnTo = new URL(res.headers.get('location')!, origin).searchParams.get('return_to')!;
    await signIn(browser, origin, opts.email, opts.password ?? PASSWORD);
    res = await browser.request(origin + returnTo);
  }
  assert.equal(res.status, 200, 'the consent screen is shown');
  const fields = hiddenFields(await res.text());
  const decided = await browser.post(`${origin}/oauth/authorize`, { ...fields, decision: opts.decision ?? 'approve' });
  assert.equal(decided.status, 303);
  return decided.headers.get('location')!;
}

/** What the web UI's sign-in page does: POST /api/auth/login with `browserSession`, keeping the cookie. */
export async function signIn(browser: Browser, origin: string, email: string, password = PASSWORD): Promise<Response> {
  const res = await browser.request(`${origin}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password, browserSession: true }),
  });
  assert.equal(res.status, 200, 'signed in');
  return res;
}

/** fetch() over app.inject, so a test of one instance needs no port. */
export function injectFetch(r: TestRunner, origin = 'http://runner.test') {
  return async (url: string, init: RequestInit = {}): Promise<Response> => {
    const u = new URL(url, origin);
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

export interface OAuthTokens {
  clientId: string;
  access_token: string;
  refresh_token: string;
}

/**
 * A registered public client and its first tokens, through the real endpoints: registration,
 * login and consent pages (as `email`, whose password is PASSWORD), code exchange with PKCE.
 */
export async function authorizeClient(r: TestRunner, email: string, scope = 'read'): Promise<OAuthTokens> {
  const origin = r.config.runner.url;
  const redirect = 'http://127.0.0.1:5555/cb';
  const reg = await r.service.app.inject({
    method: 'POST', url: '/oauth/register', payload: { redirect_uris: [redirect], token_endpoint_auth_method: 'none', client_name: 'Test app' },
  });
  assert.equal(reg.statusCode, 201, reg.body);
  const clientId = reg.json().client_id as string;
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const q = new URLSearchParams({
    client_id: clientId, redirect_uri: redirect, response_type: 'code', state: 's', code_challenge: challenge, code_challenge_method: 'S256', scope,
  });
  const location = new URL(await consent(new Browser(injectFetch(r, origin)), origin, `${origin}/oauth/authorize?${q}`, { email }));
  const code = location.searchParams.get('code');
  assert.ok(code, location.href);
  const res = await r.service.app.inject({
    method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: redirect, client_id: clientId }).toString(),
  });
  assert.equal(res.statusCode, 200, res.body);
  return { clientId, ...(res.json() as { access_token: string; refresh_token: string }) };
}

/** A refresh at the token endpoint of `r` (RFC 6749 §6). */
export function refreshAt(r: TestRunner, clientId: string, refreshToken: string) {
  return r.service.app.inject({
    method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId }).toString(),
  });
}

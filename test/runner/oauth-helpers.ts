import assert from 'node:assert/strict';

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
  opts: { email: string; password?: string; decision?: 'approve' | 'deny' },
): Promise<string> {
  const u = new URL(authorizationUrl);
  let res = await browser.request(`${origin}${u.pathname}${u.search}`);
  if (res.status === 303 && res.headers.get('location')!.startsWith('/oauth/login')) {
    const login = await browser.request(origin + res.headers.get('location')!);
    assert.equal(login.status, 200);
    const fields = hiddenFields(await login.text());
    res = await browser.post(`${origin}/oauth/login`, { ...fields, email: opts.email, password: opts.password ?? PASSWORD });
    assert.equal(res.status, 303, 'login succeeds');
    res = await browser.request(origin + res.headers.get('location')!);
  }
  assert.equal(res.status, 200, 'the consent screen is shown');
  const fields = hiddenFields(await res.text());
  const decided = await browser.post(`${origin}/oauth/authorize`, { ...fields, decision: opts.decision ?? 'approve' });
  assert.equal(decided.status, 303);
  return decided.headers.get('location')!;
}

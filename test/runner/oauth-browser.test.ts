import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { type Browser as Chromium, chromium } from 'playwright-core';
import { dialects } from '../helpers/db.js';
import { needsTool } from '../helpers/tools.js';
import { startRunner, type TestRunner, SETUP_TOKEN } from './helpers.js';
import { PASSWORD } from './oauth-helpers.js';
import { axeViolations, screenshot } from './ui/harness.js';

const EMAIL = 'owner@example.com';

/** A free port for RUNNER_URL: the issuer must be the origin the browser talks to. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

for (const target of dialects()) describe(`OAuth through the real pages in headless Chromium (${target.name})`, { skip: needsTool('chromium').skip }, () => {
  let r: TestRunner;
  let base: string;
  let browser: Chromium;
  let db: { url: string; drop(): Promise<void> };

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    db = await target.create();
    r = await startRunner({ databaseUrl: db.url, env: { RUNNER_URL: base } });
    await r.service.app.listen({ host: '127.0.0.1', port });
    const setup = await r.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: EMAIL, password: PASSWORD } });
    assert.equal(setup.statusCode, 201);
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
  });
  after(async () => {
    await browser?.close();
    await r.close();
    await db.drop();
  });

  test('login page, consent screen, approve: the code reaches the client and redeems', async () => {
    const redirectUri = 'http://127.0.0.1:1/callback';
    const reg = await r.service.app.inject({
      method: 'POST', url: '/oauth/register',
      payload: { redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', client_name: 'Browser test app' },
    });
    const clientId = reg.json().client_id as string;
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const page = await browser.newPage();
    let landed: URL | null = null;
    // The client's loopback listener, played by the browser itself.
    await page.route('http://127.0.0.1:1/**', (route) => {
      landed = new URL(route.request().url());
      return route.fulfill({ status: 200, contentType: 'text/html', body: '<p>done</p>' });
    });
    const q = new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri, response_type: 'code', state: 'b1', code_challenge: challenge, code_challenge_method: 'S256', scope: 'write' });
    await page.goto(`${base}/oauth/authorize?${q}`);
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Authorize “Browser test app”?').waitFor();
    assert.match(await page.locator('body').innerText(), /has not verified this name/);
    // The consent screen wears the web UI's stylesheet (no inline style, no script) and passes axe.
    assert.equal(await page.evaluate(() => document.styleSheets.length), 1);
    assert.equal(await page.evaluate(() => getComputedStyle(document.querySelector('.card')!).borderStyle), 'solid');
    await screenshot(page, `oauth-consent-${target.name}`);
    assert.deepEqual(await axeViolations(page), []);
    // At phone width, in the dark: still readable, nothing wider than the window.
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, `oauth-consent-phone-dark-${target.name}`);
    assert.deepEqual(await axeViolations(page), []);
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth));
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByText('done').waitFor();
    const url = landed as URL | null;
    assert.ok(url);
    assert.equal(url.searchParams.get('state'), 'b1');
    assert.equal(url.searchParams.get('iss'), base);
    const res = await r.service.app.inject({
      method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ grant_type: 'authorization_code', code: url.searchParams.get('code')!, code_verifier: verifier, redirect_uri: redirectUri, client_id: clientId }).toString(),
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().scope, 'write');
    await page.close();
  });

  test('the interactive docs authorize with the oauth2 scheme (PKCE) and get a token', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/api/docs`);
    await page.locator('button.authorize').first().click();
    const popupPromise = page.waitForEvent('popup');
    await page.locator('.auth-container').filter({ hasText: 'oauthAccessToken' }).locator('button.authorize').click();
    const popup = await popupPromise;
    await popup.getByLabel('Email').fill(EMAIL);
    await popup.getByLabel('Password').fill(PASSWORD);
    await popup.getByRole('button', { name: 'Sign in' }).click();
    // Swagger UI redeems the code itself (PKCE verifier in the page) once the popup returns.
    const tokenResponse = page.waitForResponse((res) => res.url() === `${base}/oauth/token`);
    await popup.getByRole('button', { name: 'Approve', exact: true }).click();
    const res = await tokenResponse;
    assert.equal(res.status(), 200);
    const body = (await res.json()) as { access_token: string; scope: string };
    assert.match(body.access_token, /^rnr_oat_/);
    assert.equal(body.scope, 'read');
    const me = await r.service.app.inject({ method: 'GET', url: '/api/me', headers: { authorization: `Bearer ${body.access_token}` } });
    assert.equal(me.statusCode, 200);
    await context.close();
  });
});

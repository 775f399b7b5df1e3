import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { dialects } from '../../helpers/db.js';
import { needsTool } from '../../helpers/tools.js';
import { ADMIN, axeViolations, launchChromium, PASSWORD, RequestRecorder, screenshot, startUiRunner } from './harness.js';

const WIDTHS = [
  { name: 'wide', width: 1280, height: 900 },
  { name: 'phone', width: 390, height: 844 },
] as const;

describe('runner web UI: first start, sign-in, account and sign-out in Chromium', { skip: needsTool('chromium').skip }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(() => browser?.close());

  test('a fresh instance: the setup link creates the first administrator; without it nobody can', async () => {
    const ui = await startUiRunner({ setup: false, env: { RUNNER_SETUP_TOKEN: '' } });
    try {
      const link = ui.runner.service.setupLink;
      assert.ok(link);
      const context = await browser.newContext();
      const recorder = new RequestRecorder(ui);
      recorder.attach(context);
      const page = await context.newPage();
      // Without the token: the page says where to find the link and offers no form.
      await page.goto(`${ui.base}/setup`);
      await page.getByText('Open the one-time setup link').waitFor();
      assert.equal(await page.getByRole('button', { name: 'Create administrator' }).count(), 0);
      // A wrong token: the API refuses, and the page says why.
      await page.goto(`${ui.base}/setup#token=rnr_setup_guess`);
      await page.getByLabel('Email').fill('mallory@example.com');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Create administrator' }).click();
      await page.getByRole('alert').getByText('the setup token is wrong').waitFor();
      // The printed link.
      await page.goto(link);
      await page.getByLabel('Name').fill('Ada Admin');
      await page.getByLabel('Email').fill(ADMIN);
      await page.getByLabel('Password').fill(PASSWORD);
      await screenshot(page, 'setup');
      await page.getByRole('button', { name: 'Create administrator' }).click();
      await page.getByRole('heading', { name: 'Projects' }).waitFor();
      assert.ok(!page.url().includes('token='), 'the token left the address bar');
      const users = await ui.api('GET', '/api/users', undefined, (await ui.api('POST', '/api/auth/login', { email: ADMIN, password: PASSWORD })).json.token);
      assert.deepEqual(
        users.json.items.map((u: { email: string; role: string }) => [u.email, u.role]),
        [[ADMIN, 'admin']],
      );
      assert.deepEqual(recorder.undocumented(), []);
      await context.close();
    } finally {
      await ui.close();
    }
  });

  // Every width and scheme on SQLite; one run on PostgreSQL (the API under the page is the same).
  const runs = [
    ...(['light', 'dark'] as const).flatMap((scheme) => WIDTHS.map((size) => ({ scheme, size, target: dialects()[0]! }))),
    ...dialects()
      .slice(1)
      .map((target) => ({ scheme: 'light' as const, size: WIDTHS[0], target })),
  ];
  for (const { scheme, size, target } of runs) {
    test(`account: tokens shown once, revoked; sign-out; an ended session returns to login and back (${size.name}, ${scheme}, ${target.name})`, async () => {
      const db = await target.create();
      const ui = await startUiRunner({ databaseUrl: db.url });
      try {
        const context = await browser.newContext({ viewport: { width: size.width, height: size.height }, colorScheme: scheme });
        await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: ui.base });
        const recorder = new RequestRecorder(ui);
        recorder.attach(context);
        const page = await context.newPage();
        const scripts: string[] = [];
        page.on('console', (m) => {
          if (m.type() === 'error') scripts.push(m.text());
        });
        // Signed out, a deep link goes to login and, once signed in, back to it.
        await page.goto(`${ui.base}/account`);
        await page.waitForURL(/\/login\?return_to=%2Faccount$/);
        await page.getByLabel('Email').fill(ADMIN);
        await page.getByLabel('Password').fill('wrong password!!');
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('alert').getByText('wrong email or password').waitFor();
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('heading', { name: 'Account' }).waitFor();
        assert.equal(new URL(page.url()).pathname, '/account');
        // The JWT never appears in a URL the browser loaded.
        const session = await page.evaluate(() => localStorage.getItem('pier.runner.session'));
        const token = JSON.parse(session ?? '{}').token as string;
        assert.ok(token);
        // A token: created with scope and expiry, shown once with a copy button.
        const tokens = page.getByRole('region', { name: 'Personal access tokens' });
        await tokens.getByLabel('Name').fill('CI <b>deploy</b>');
        await tokens.getByLabel('Scope').selectOption('write');
        await tokens.getByRole('button', { name: 'Create token' }).click();
        const secret = (await tokens.locator('.secret code').innerText()).trim();
        assert.match(secret, /^rnr_pat_/);
        await tokens.getByRole('button', { name: 'Copy', exact: true }).click();
        await tokens.getByRole('button', { name: 'Copied', exact: true }).waitFor();
        assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);
        assert.equal((await ui.api('GET', '/api/me', undefined, secret)).status, 200);
        await tokens.getByRole('cell', { name: 'CI <b>deploy</b>', exact: true }).waitFor();
        await screenshot(page, `account-${size.name}-${scheme}`);
        assert.deepEqual(await axeViolations(page), []);
        await tokens.getByRole('button', { name: 'I have copied it' }).click();
        assert.equal(await page.getByText(secret).count(), 0, 'shown once');
        page.once('dialog', (d) => void d.accept());
        await tokens.getByRole('button', { name: 'Revoke CI <b>deploy</b>' }).click();
        await tokens.getByText('No tokens.').waitFor();
        assert.equal((await ui.api('GET', '/api/me', undefined, secret)).status, 401);
        // Connected applications.
        await page.getByRole('link', { name: 'Connected applications' }).click();
        await page.getByText('No application is connected.').waitFor();
        assert.deepEqual(await axeViolations(page), []);
        // Ended elsewhere (a password change in another browser ends every other session):
        // the next request returns to login, then back to the page.
        const other = (await ui.api('POST', '/api/auth/login', { email: ADMIN, password: PASSWORD })).json.token;
        assert.equal((await ui.api('PUT', '/api/me/password', { currentPassword: PASSWORD, newPassword: PASSWORD }, other)).status, 200);
        await page.goto(`${ui.base}/account`);
        await page.waitForURL(/\/login\?return_to=%2Faccount$/);
        await page.getByLabel('Email').fill(ADMIN);
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('heading', { name: 'Account' }).waitFor();
        // Sign-out forgets the JWT and ends it on the server.
        const current = JSON.parse((await page.evaluate(() => localStorage.getItem('pier.runner.session'))) ?? '{}').token as string;
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.waitForURL(/\/login$/);
        assert.equal(await page.evaluate(() => localStorage.getItem('pier.runner.session')), null);
        assert.equal((await ui.api('GET', '/api/me', undefined, current)).status, 401);
        assert.equal((await context.cookies()).filter((c) => c.name === 'rnr_session' && c.value).length, 0, 'the consent cookie is gone too');
        assert.deepEqual(recorder.undocumented(), []);
        assert.ok(!recorder.seen.some((s) => s.includes(token) || s.includes(current)), 'no JWT in a URL');
        assert.deepEqual(scripts.filter((s) => !/401|Unauthorized/.test(s)), [], 'no script errors');
        await context.close();
      } finally {
        await ui.close();
        await db.drop();
      }
    });
  }
});

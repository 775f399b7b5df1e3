import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { dialects } from '../../helpers/db.js';
import { needsTool } from '../../helpers/tools.js';
import { API_KEY } from '../helpers.js';
import { ADMIN, checkScreen, launchChromium, PASSWORD, RequestRecorder, signIn, startUiRunner, type UiRunner } from './harness.js';

const XSS = '<img src=x onerror="window.__xss=1">';

describe('runner web UI: users and executors (administrators) in Chromium', { skip: needsTool('chromium').skip }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(() => browser?.close());

  for (const target of dialects()) {
    test(`users: create, make administrator, the last-administrator rule shown, delete; executors: live status, drain, remove (${target.name})`, async () => {
      const db = await target.create();
      let ui: UiRunner | null = null;
      try {
        ui = await startUiRunner({ databaseUrl: db.url, env: { API_KEY } });
        const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
        const recorder = new RequestRecorder(ui);
        recorder.attach(context);
        const page = await context.newPage();
        page.on('dialog', (d) => void d.accept());
        await signIn(page, ui.base);

        await page.getByRole('link', { name: 'Users' }).click();
        const table = page.getByRole('region', { name: 'All users' });
        // The only administrator cannot step down or be deleted, and the page says why.
        await table.getByText('The last administrator keeps the role').waitFor();
        assert.equal(await table.getByRole('button', { name: `Make member ${ADMIN}` }).isDisabled(), true);
        // A user whose name is markup; the same email again is refused in words.
        const form = page.getByRole('form', { name: 'New user' });
        await form.getByLabel('Email').fill('bo@example.com');
        await form.getByLabel('Name').fill(`Bo ${XSS}`);
        await form.getByLabel('Initial password').fill(PASSWORD);
        await form.getByRole('button', { name: 'Create user' }).click();
        await form.getByText('Created bo@example.com.').waitFor();
        await table.getByRole('cell', { name: `Bo ${XSS}` }).waitFor();
        await form.getByLabel('Email').fill('bo@example.com');
        await form.getByLabel('Initial password').fill(PASSWORD);
        await form.getByRole('button', { name: 'Create user' }).click();
        await form.getByRole('alert').waitFor();
        // Two administrators: either may step down.
        await table.getByRole('button', { name: 'Make administrator bo@example.com' }).click();
        await table.getByRole('button', { name: 'Make member bo@example.com' }).waitFor();
        assert.equal(await table.getByRole('button', { name: `Make member ${ADMIN}` }).isDisabled(), false);
        // Disabled and enabled again: the account says so while disabled, and cannot sign in.
        await table.getByRole('button', { name: 'Disable bo@example.com' }).click();
        await table.getByText('Disabled', { exact: true }).waitFor();
        assert.equal((await ui.api('POST', '/api/auth/login', { email: 'bo@example.com', password: PASSWORD })).status, 401);
        await table.getByRole('button', { name: 'Enable bo@example.com' }).click();
        await table.getByText('Disabled', { exact: true }).waitFor({ state: 'detached' });
        await table.getByRole('button', { name: 'Lift login locks of bo@example.com' }).click();
        await page.getByText('bo@example.com can sign in again').waitFor();
        await checkScreen(page, 'users-wide');
        // Administrators set addresses: at once, a taken one refused in words.
        await table.getByRole('button', { name: 'Change email of bo@example.com' }).click();
        const emailForm = page.getByRole('form', { name: `Email of Bo ${XSS}` });
        await emailForm.getByLabel('Email').fill(ADMIN);
        await emailForm.getByRole('button', { name: 'Save email' }).click();
        await emailForm.getByText('another user has this email').waitFor();
        await emailForm.getByLabel('Email').fill('bo.new@example.com');
        await emailForm.getByRole('button', { name: 'Save email' }).click();
        await emailForm.waitFor({ state: 'detached' });
        await table.getByRole('button', { name: 'Change email of bo.new@example.com' }).waitFor();
        await table.getByRole('button', { name: 'Delete bo.new@example.com' }).click();
        await table.getByRole('cell', { name: `Bo ${XSS}` }).waitFor({ state: 'detached' });
        const users = (await ui.api('GET', '/api/users', undefined, ui.adminToken)).json.items;
        assert.deepEqual(users.map((u: { email: string }) => u.email), [ADMIN]);

        // Executors: one registers; the page shows it online with its labels and capacity.
        await page.getByRole('link', { name: 'Executors' }).click();
        await page.getByText('No executor has registered').waitFor();
        const reg = await ui.api('POST', '/api/executors/register', { name: `gpu-1 ${XSS}`, labels: ['gpu', 'big-memory'], capacity: 4 }, API_KEY);
        assert.equal(reg.status, 201, JSON.stringify(reg.json));
        const executors = page.getByRole('region', { name: 'All executors' });
        await executors.getByRole('cell', { name: 'gpu, big-memory' }).waitFor({ timeout: 15_000 });
        await executors.getByText('Online').waitFor();
        await executors.getByText('0 of 4').waitFor();
        await checkScreen(page, 'executors-wide');
        await executors.getByRole('button', { name: `Drain gpu-1 ${XSS}` }).click();
        await executors.getByText('Draining').waitFor();
        await executors.getByRole('button', { name: `Remove gpu-1 ${XSS}` }).click();
        await page.getByText('No executor has registered').waitFor();

        assert.equal(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined, 'no markup ran');
        assert.deepEqual(recorder.undocumented(), []);
        await context.close();
      } finally {
        await ui?.close();
        await db.drop();
      }
    });
  }

  test('users and executors at phone width, light and dark; members see no administration', async () => {
    const ui = await startUiRunner({ env: { API_KEY } });
    try {
      await ui.api('POST', '/api/users', { email: 'm@example.com', password: PASSWORD }, ui.adminToken);
      await ui.api('POST', '/api/executors/register', { name: 'worker-1', labels: ['knime'] }, API_KEY);
      for (const scheme of ['light', 'dark'] as const) {
        const context = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: scheme });
        const page = await context.newPage();
        await signIn(page, ui.base);
        await page.goto(`${ui.base}/users`);
        await page.getByRole('region', { name: 'All users' }).waitFor();
        await checkScreen(page, `users-phone-${scheme}`);
        await page.goto(`${ui.base}/executors`);
        await page.getByRole('cell', { name: 'knime' }).waitFor();
        await checkScreen(page, `executors-phone-${scheme}`);
        await context.close();
      }
      const context = await browser.newContext();
      const page = await context.newPage();
      await signIn(page, ui.base, 'm@example.com');
      assert.equal(await page.getByRole('link', { name: 'Users' }).count(), 0);
      await page.goto(`${ui.base}/users`);
      await page.getByText('Only administrators manage users.').waitFor();
      await context.close();
    } finally {
      await ui.close();
    }
  });
});

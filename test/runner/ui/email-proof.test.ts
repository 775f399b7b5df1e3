import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { needsTool } from '../../helpers/tools.js';
import { checkScreen, launchChromium, PASSWORD, RequestRecorder, signIn, startUiRunner } from './harness.js';

/**
 * A runner that mails: the link sent to a new address opens the web UI's confirmation page, which
 * makes the address the signed-in account's and takes the token out of the address bar.
 */
describe('runner web UI: proving a new address in Chromium', { skip: needsTool('chromium').skip }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(() => browser?.close());

  test('the mailed link confirms the address for the account that asked', async () => {
    const mail: { to: string; text: string }[] = [];
    const ui = await startUiRunner({ emailSender: { send: async (m) => void mail.push(m) } });
    try {
      assert.equal((await ui.api('POST', '/api/users', { email: 'dora@example.com', name: 'Dora', password: PASSWORD }, ui.adminToken)).status, 201);
      const session = (await ui.api('POST', '/api/auth/login', { email: 'dora@example.com', password: PASSWORD })).json.token;
      const asked = await ui.api('PATCH', '/api/me', { email: 'dora@new.example.com' }, session);
      assert.equal(asked.json.pendingEmail, 'dora@new.example.com');
      const link = /(http\S+\/account\/email#token=\S+)/.exec(mail[0]!.text)?.[1];
      assert.ok(link, mail[0]!.text);

      const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
      const recorder = new RequestRecorder(ui);
      recorder.attach(context);
      const page = await context.newPage();
      await signIn(page, ui.base, 'dora@example.com');
      await page.goto(link);
      await page.getByRole('status').getByText('Your address is now dora@new.example.com.').waitFor();
      assert.ok(!page.url().includes('token='), 'the token left the address bar');
      await checkScreen(page, 'email-confirmed-phone');
      assert.equal((await ui.api('GET', '/api/me', undefined, session)).json.email, 'dora@new.example.com');
      // Used once: opening it again (a fresh load, as from the mail) says so in words.
      await page.goto(`${ui.base}/projects`);
      await page.goto(link);
      await page.getByRole('alert').getByText('this link is not valid for your account').waitFor();
      assert.deepEqual(recorder.undocumented(), []);
      await context.close();
    } finally {
      await ui.close();
    }
  });
});

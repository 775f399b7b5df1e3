import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { needsTool } from '../../helpers/tools.js';
import { ADMIN, launchChromium, PASSWORD, startUiRunner } from './harness.js';

/** Presses Tab until the focused element's text or label is `name` (at most 80 presses); fails otherwise. */
async function tabTo(page: Page, name: string | RegExp): Promise<void> {
  for (let i = 0; i < 80; i++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      if (!el) return '';
      const label = el.id ? document.querySelector(`label[for="${el.id}"]`)?.textContent : null;
      return (label ?? el.getAttribute('aria-label') ?? el.textContent ?? '').trim();
    });
    if (typeof name === 'string' ? focused === name : name.test(focused)) return;
  }
  assert.fail(`Tab never reached ${name}`);
}

/** The focused element shows where it is (an outline or a box shadow). */
async function focusVisible(page: Page): Promise<boolean> {
  return page.evaluate(() => {
    const s = getComputedStyle(document.activeElement as Element);
    return (s.outlineStyle !== 'none' && s.outlineWidth !== '0px') || s.boxShadow !== 'none';
  });
}

describe('runner web UI: keyboard only', { skip: needsTool('chromium').skip }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(() => browser?.close());

  test('sign in, skip to content, create a project, open its members and invite one, sign out: without a mouse, focus always visible', async () => {
    const ui = await startUiRunner();
    try {
      await ui.api('POST', '/api/users', { email: 'kim@example.com', name: 'Kim', password: PASSWORD }, ui.adminToken);
      const page = await (await browser.newContext()).newPage();
      await page.goto(`${ui.base}/login`);
      await tabTo(page, 'Email');
      await page.keyboard.type(ADMIN);
      await tabTo(page, 'Password');
      await page.keyboard.type(PASSWORD);
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'Projects' }).waitFor();
      // The first Tab offers the skip link, which moves focus to the page's content.
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement?.textContent?.trim()), 'Skip to content');
      assert.ok(await focusVisible(page), 'the skip link shows focus');
      await page.keyboard.press('Enter');
      await tabTo(page, 'New project');
      assert.ok(await focusVisible(page), 'buttons show focus');
      await page.keyboard.press('Enter');
      await tabTo(page, 'Name');
      await page.keyboard.type('Keyboard project');
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'Keyboard project' }).waitFor();
      await tabTo(page, 'Members');
      await page.keyboard.press('Enter');
      await tabTo(page, 'Email of the person to invite');
      await page.keyboard.type('kim@example.com');
      await page.keyboard.press('Enter');
      // An address that is not yet a member is invited: the invitation lists it masked, with a way to withdraw it.
      await page.getByRole('status').filter({ hasText: 'Invited kim@example.com as viewer' }).waitFor();
      await tabTo(page, /^Withdraw the invitation of /);
      assert.ok(await focusVisible(page), 'row actions show focus');
      await tabTo(page, 'Sign out');
      await page.keyboard.press('Enter');
      await page.waitForURL(/\/login$/);
    } finally {
      await ui.close();
    }
  });
});

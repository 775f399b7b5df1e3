import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { dialects } from '../../helpers/db.js';
import { needsTool } from '../../helpers/tools.js';
import { makeZip, multipart } from '../helpers.js';
import { checkScreen, launchChromium, PASSWORD, RequestRecorder, signIn, startUiRunner, type UiRunner } from './harness.js';

const XSS = '<img src=x onerror="window.__xss=1">';

async function seedWorkflow(ui: UiRunner, name: string): Promise<{ projectId: string; workflowId: string }> {
  const project = (await ui.api('POST', '/api/projects', { name: 'Reports' }, ui.adminToken)).json;
  const body = multipart([{ name: 'file', file: makeZip() }, { name: 'name', value: name }]);
  const res = await fetch(`${ui.base}/api/projects/${project.id}/workflows`, { method: 'POST', headers: { authorization: `Bearer ${ui.adminToken}`, ...body.headers }, body: new Uint8Array(body.payload) });
  assert.equal(res.status, 201);
  return { projectId: project.id, workflowId: ((await res.json()) as { id: string }).id };
}

describe('runner web UI: schedules and the run filters in Chromium', { skip: needsTool('chromium').skip }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(() => browser?.close());

  for (const target of dialects()) {
    test(`a schedule is written with its words and next fires shown as typed, disabled, changed, its runs listed, deleted (${target.name})`, async () => {
      const db = await target.create();
      let ui: UiRunner | null = null;
      try {
        ui = await startUiRunner({ databaseUrl: db.url });
        const { workflowId } = await seedWorkflow(ui, `Daily ${XSS}`);
        const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'Europe/Berlin' });
        const recorder = new RequestRecorder(ui);
        recorder.attach(context);
        const page = await context.newPage();
        page.on('dialog', (d) => void d.accept());
        await signIn(page, ui.base);
        await page.goto(`${ui.base}/workflows/${workflowId}`);
        const card = page.getByRole('region', { name: 'Schedules' });
        await card.getByText('No schedules.').waitFor();
        await card.getByRole('button', { name: 'New schedule' }).click();
        const form = page.getByRole('form', { name: 'New schedule' });
        // The zone defaults to the user's own.
        assert.equal(await form.getByLabel('Time zone').inputValue(), 'Europe/Berlin');
        await form.getByLabel('Cron expression').fill('61 * * * *');
        await form.locator('#cron-preview .field-error').waitFor();
        await form.getByLabel('Cron expression').fill('30 6 * * MON-FRI');
        await form.getByText('At 06:30, on Monday through Friday').waitFor();
        assert.equal(await form.locator('#cron-preview ol li').count(), 5);
        await form.getByLabel('Name').fill(`Morning ${XSS}`);
        await form.getByLabel('If the previous run is still queued or running').selectOption('queue');
        await form.getByRole('button', { name: 'Add a parameter' }).click();
        await form.getByLabel('Name 1').fill('rows');
        await form.getByLabel('Value 1').fill('100');
        await checkScreen(page, 'schedule-new-wide');
        await form.getByRole('button', { name: 'Create schedule' }).click();
        await card.getByRole('cell', { name: /30 6 \* \* MON-FRI/ }).waitFor();
        const stored = (await ui.api('GET', `/api/workflows/${workflowId}/schedules`, undefined, ui.adminToken)).json.items;
        assert.deepEqual(
          stored.map((s: { name: string; cron: string; timeZone: string; overlap: string; parameters: object }) => [s.name, s.cron, s.timeZone, s.overlap, s.parameters]),
          [[`Morning ${XSS}`, '30 6 * * MON-FRI', 'Europe/Berlin', 'queue', { rows: 100 }]],
        );
        const label = `Morning ${XSS}`;
        await card.getByRole('button', { name: `Disable ${label}` }).click();
        await card.getByText('disabled').waitFor();
        await card.getByRole('button', { name: `Change ${label}` }).click();
        const edit = page.getByRole('form', { name: `Change the schedule ${label}` });
        await edit.getByLabel('Cron expression').fill('0 7 * * *');
        await edit.getByText('At 07:00').waitFor();
        await edit.getByLabel('Enabled').check();
        await edit.getByRole('button', { name: 'Save schedule' }).click();
        await card.getByRole('cell', { name: /0 7 \* \* \*/ }).waitFor();

        // The schedules page lists it under its workflow; its runs open the filtered run list.
        await page.getByRole('link', { name: 'Schedules', exact: true }).click();
        const all = page.getByRole('region', { name: 'All schedules' });
        await all.getByRole('link', { name: `Daily ${XSS}` }).waitFor();
        await checkScreen(page, 'schedules-wide');
        await all.getByRole('link', { name: 'Its runs' }).click();
        await page.waitForURL(/\/runs\?schedule=/);
        // The filter shows the schedule once the list of schedules has arrived.
        await page.waitForFunction((id) => [...document.querySelectorAll('select')].some((s) => s.value === id), stored[0].id);
        await page.getByText('No runs').first().waitFor();
        await page.goBack();
        await all.getByRole('button', { name: `Delete ${label}` }).click();
        await all.getByText('No schedules.').waitFor();

        assert.equal(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined, 'no markup ran');
        assert.deepEqual(recorder.undocumented(), []);
        await context.close();
      } finally {
        await ui?.close();
        await db.drop();
      }
    });
  }

  test("the Schedules page and a workflow's page show a page of 50 schedules, Load more the rest; a change keeps them listed", async () => {
    const ui = await startUiRunner();
    try {
      const { workflowId } = await seedWorkflow(ui, 'Many');
      const names = Array.from({ length: 55 }, (_, i) => `S${String(i + 1).padStart(2, '0')}`);
      for (const name of names) await ui.api('POST', `/api/workflows/${workflowId}/schedules`, { cron: '@daily', name }, ui.adminToken);
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const recorder = new RequestRecorder(ui);
      recorder.attach(context);
      const page = await context.newPage();
      await signIn(page, ui.base);
      const rowNames = (region: ReturnType<typeof page.getByRole>) => region.locator('tbody tr td:first-child p').allTextContents();
      const row = (region: ReturnType<typeof page.getByRole>, name: string) => region.locator('tbody tr td:first-child p').filter({ hasText: new RegExp(`^${name}$`) });
      for (const [url, regionName] of [['/schedules', 'All schedules'], [`/workflows/${workflowId}`, 'Schedules']] as const) {
        await page.goto(`${ui.base}${url}`);
        const region = page.getByRole('region', { name: regionName, exact: true });
        await row(region, 'S50').waitFor();
        assert.deepEqual(await rowNames(region), names.slice(0, 50), `${url}: the first page, oldest first`);
        await region.getByRole('button', { name: 'Load more schedules' }).click();
        await row(region, 'S55').waitFor();
        assert.deepEqual(await rowNames(region), names, `${url}: then the next page`);
        assert.equal(await region.getByRole('button', { name: 'Load more' }).count(), 0, `${url}: no more pages`);
        // A change reads the list again as far as it was shown: the later rows stay.
        await region.getByRole('button', { name: url === '/schedules' ? 'Disable S53' : 'Enable S53' }).click();
        await region.getByRole('button', { name: url === '/schedules' ? 'Enable S53' : 'Disable S53' }).waitFor();
        assert.deepEqual(await rowNames(region), names, `${url}: still all shown after the change`);
      }
      assert.deepEqual(recorder.undocumented(), []);
      await context.close();
    } finally {
      await ui.close();
    }
  });

  test('the run list filters by who started a run and by day; the schedule page at phone width, light and dark', async () => {
    const ui = await startUiRunner();
    try {
      const { workflowId } = await seedWorkflow(ui, 'Flow');
      await ui.api('POST', '/api/users', { email: 'eve@example.com', password: PASSWORD }, ui.adminToken);
      const eve = (await ui.api('POST', '/api/auth/login', { email: 'eve@example.com', password: PASSWORD })).json.token;
      const project = (await ui.api('GET', `/api/workflows/${workflowId}`, undefined, ui.adminToken)).json.projectId;
      const eveId = (await ui.api('GET', '/api/me', undefined, eve)).json.id;
      await ui.api('PUT', `/api/projects/${project}/members/${eveId}`, { role: 'editor' }, ui.adminToken);
      const mine = (await ui.api('POST', `/api/workflows/${workflowId}/runs`, { parameters: { who: 'admin' } }, ui.adminToken)).json;
      await ui.api('POST', `/api/workflows/${workflowId}/runs`, { parameters: { who: 'eve' } }, eve);
      await ui.api('POST', `/api/workflows/${workflowId}/schedules`, { cron: '@daily' }, ui.adminToken);
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      await signIn(page, ui.base);
      await page.goto(`${ui.base}/runs`);
      await page.getByText('who=eve').waitFor();
      await page.getByLabel('Started by').selectOption('me');
      await page.getByText('who=eve').waitFor({ state: 'detached' });
      await page.getByText('who=admin').waitFor();
      assert.match(page.url(), /startedBy=me/);
      // A day after today: nothing; the run page says who started a run.
      const tomorrow = new Date(Date.now() + 86_400_000);
      const day = `${tomorrow.getFullYear()}-${String(tomorrow.getMonth() + 1).padStart(2, '0')}-${String(tomorrow.getDate()).padStart(2, '0')}`;
      await page.getByLabel('Queued from').fill(day);
      await page.getByText('who=admin').waitFor({ state: 'detached' });
      await page.goto(`${ui.base}/runs/${mine.id}`);
      await page.getByText('you', { exact: true }).waitFor();
      await context.close();
      for (const scheme of ['light', 'dark'] as const) {
        const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: scheme });
        const p = await phone.newPage();
        await signIn(p, ui.base);
        await p.goto(`${ui.base}/schedules`);
        await p.getByRole('region', { name: 'All schedules' }).getByRole('link', { name: 'Flow' }).waitFor();
        await checkScreen(p, `schedules-phone-${scheme}`);
        await p.goto(`${ui.base}/workflows/${workflowId}`);
        await p.getByRole('button', { name: 'New schedule' }).click();
        await p.getByText('At 06:00, on Monday through Friday').waitFor();
        await checkScreen(p, `schedule-new-phone-${scheme}`);
        await phone.close();
      }
    } finally {
      await ui.close();
    }
  });
});

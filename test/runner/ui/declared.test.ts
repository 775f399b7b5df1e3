import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { needsTool } from '../../helpers/tools.js';
import { knwfWithConfigurationNodes } from '../helpers.js';
import { axeViolations, launchChromium, RequestRecorder, screenshot, signIn, startUiRunner } from './harness.js';

describe('runner web UI: a run form made from the parameters the workflow declares', { skip: needsTool('chromium').skip }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(() => browser?.close());

  for (const size of [
    { name: 'wide', width: 1280, height: 900 },
    { name: 'phone', width: 390, height: 844 },
  ]) {
    test(`typed inputs with defaults and descriptions, checked before sending (${size.name})`, async () => {
      const ui = await startUiRunner();
      try {
        const project = (await ui.api('POST', '/api/projects', { name: 'Reports' }, ui.adminToken)).json;
        const form = new FormData();
        form.append('file', new Blob([new Uint8Array(knwfWithConfigurationNodes())]), 'Monthly report.knwf');
        const res = await fetch(`${ui.base}/api/projects/${project.id}/workflows`, { method: 'POST', headers: { authorization: `Bearer ${ui.adminToken}` }, body: form });
        const workflowId = ((await res.json()) as { id: string }).id;
        const context = await browser.newContext({ viewport: { width: size.width, height: size.height } });
        const recorder = new RequestRecorder(ui);
        recorder.attach(context);
        const page = await context.newPage();
        await signIn(page, ui.base);
        await page.goto(`${ui.base}/workflows/${workflowId}`);
        const start = page.getByRole('form', { name: 'Start a run' });
        const rows = start.getByLabel('Rows to read');
        assert.equal(await rows.inputValue(), '100');
        await start.getByText('How many rows the reader takes <at most>').waitFor();
        assert.equal(await start.getByLabel('ratio').inputValue(), '0.25');
        assert.equal(await start.getByLabel('dry').isChecked(), true);
        assert.equal(await start.getByLabel('mode').inputValue(), 'fast');
        assert.equal(await start.getByLabel('title').inputValue(), 'Monthly <b>report</b>');
        await screenshot(page, `declared-${size.name}`);
        assert.deepEqual(await axeViolations(page), []);
        // Checked before sending, next to the field.
        await rows.fill('a lot');
        await start.getByRole('button', { name: 'Start run' }).click();
        await start.getByText('enter a whole number').waitFor();
        // The node's Java int: its range is shown and checked before sending.
        await start.getByText('from -2147483648 to 2147483647').waitFor();
        await rows.fill('99999999999');
        await start.getByRole('button', { name: 'Start run' }).click();
        await start.getByText('enter a whole number from -2147483648 to 2147483647').waitFor();
        await rows.fill('250');
        await start.getByLabel('mode').selectOption('thorough');
        await start.getByLabel('dry').uncheck();
        await start.getByRole('button', { name: 'Start run' }).click();
        await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
        const run = (await ui.api('GET', `/api/runs/${new URL(page.url()).pathname.split('/')[2]}`, undefined, ui.adminToken)).json;
        assert.deepEqual(run.parameters, { rows: 250, ratio: 0.25, dry: false, mode: 'thorough', title: 'Monthly <b>report</b>' });
        assert.deepEqual(recorder.undocumented(), []);
        await context.close();
      } finally {
        await ui.close();
      }
    });
  }

  test('the schedule form offers the same typed fields, on the workflow page and on the Schedules page', async () => {
    const ui = await startUiRunner();
    try {
      const project = (await ui.api('POST', '/api/projects', { name: 'Reports' }, ui.adminToken)).json;
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(knwfWithConfigurationNodes())]), 'Monthly report.knwf');
      const res = await fetch(`${ui.base}/api/projects/${project.id}/workflows`, { method: 'POST', headers: { authorization: `Bearer ${ui.adminToken}` }, body: form });
      const workflowId = ((await res.json()) as { id: string }).id;
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const recorder = new RequestRecorder(ui);
      recorder.attach(context);
      const page = await context.newPage();
      await signIn(page, ui.base);
      await page.goto(`${ui.base}/workflows/${workflowId}`);
      await page.getByRole('region', { name: 'Schedules' }).getByRole('button', { name: 'New schedule' }).click();
      const create = page.getByRole('form', { name: 'New schedule' });
      const rows = create.getByLabel('Rows to read');
      assert.equal(await rows.inputValue(), '100');
      assert.equal(await create.getByLabel('dry').isChecked(), true);
      assert.equal(await create.getByLabel('mode').inputValue(), 'fast');
      await rows.fill('many');
      await create.getByRole('button', { name: 'Create schedule' }).click();
      await create.getByText('enter a whole number').waitFor();
      await rows.fill('7');
      await create.getByLabel('dry').uncheck();
      await create.getByLabel('mode').selectOption('thorough');
      await create.getByRole('button', { name: 'Create schedule' }).click();
      await create.waitFor({ state: 'detached' });
      const [schedule] = (await ui.api('GET', `/api/workflows/${workflowId}/schedules`, undefined, ui.adminToken)).json.items;
      assert.deepEqual(schedule.parameters, { rows: 7, ratio: 0.25, dry: false, mode: 'thorough', title: 'Monthly <b>report</b>' });
      // Changed from the Schedules page (which lists schedules without their workflow's versions).
      await page.goto(`${ui.base}/schedules`);
      await page.getByRole('region', { name: 'All schedules' }).getByRole('button', { name: /^Change/ }).click();
      const edit = page.getByRole('form', { name: /^Change the schedule/ });
      assert.equal(await edit.getByLabel('Rows to read').inputValue(), '7');
      assert.equal(await edit.getByLabel('dry').isChecked(), false);
      await edit.getByLabel('Rows to read').fill('8');
      await edit.getByRole('button', { name: 'Save schedule' }).click();
      await edit.waitFor({ state: 'detached' });
      assert.equal((await ui.api('GET', `/api/schedules/${schedule.id}`, undefined, ui.adminToken)).json.parameters.rows, 8);
      assert.deepEqual(await axeViolations(page), []);
      assert.deepEqual(recorder.undocumented(), []);
      await context.close();
    } finally {
      await ui.close();
    }
  });
});

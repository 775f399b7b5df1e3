import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { needsTool } from '../../helpers/tools.js';
import { API_KEY, makeZip, multipart } from '../helpers.js';
import { checkScreen, launchChromium, PASSWORD, signIn, startUiRunner } from './harness.js';

/**
 * Every table on the page: whether any cell reaches past the window or past its table's box (a
 * part of the row hidden beyond the edge of the screen), and the column name each cell shows.
 */
async function tables(page: Page): Promise<{ hidden: string[]; labels: string[][] }> {
  return page.evaluate(() => {
    const hidden: string[] = [];
    const labels: string[][] = [];
    for (const wrap of document.querySelectorAll<HTMLElement>('.table-wrap')) {
      const box = wrap.getBoundingClientRect();
      if (wrap.scrollWidth > wrap.clientWidth + 1) hidden.push(`a table scrolls: ${wrap.scrollWidth} > ${wrap.clientWidth}`);
      for (const cell of wrap.querySelectorAll<HTMLElement>('tbody td')) {
        const r = cell.getBoundingClientRect();
        if (r.right > Math.min(window.innerWidth, box.right) + 1 || r.left < box.left - 1) hidden.push(`${cell.dataset.label}: ${cell.innerText.slice(0, 40)}`);
      }
      labels.push([...wrap.querySelectorAll<HTMLElement>('tbody tr:first-child td')].map((c) => getComputedStyle(c, '::before').content));
    }
    return { hidden, labels };
  });
}

describe('runner web UI: tables on a phone show every column', { skip: needsTool('chromium').skip }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(() => browser?.close());

  test('versions, tokens, users, members, executors, workflows and schedules reflow at 390 px: no cell beyond the edge, each with its column name', async () => {
    const ui = await startUiRunner();
    try {
      const project = (await ui.api('POST', '/api/projects', { name: 'Reports' }, ui.adminToken)).json;
      const body = multipart([{ name: 'file', file: makeZip(), filename: 'A monthly report with a long file name.knwf' }]);
      const res = await fetch(`${ui.base}/api/projects/${project.id}/workflows`, { method: 'POST', headers: { authorization: `Bearer ${ui.adminToken}`, ...body.headers }, body: new Uint8Array(body.payload) });
      const workflowId = ((await res.json()) as { id: string }).id;
      await ui.api('POST', `/api/workflows/${workflowId}/schedules`, { cron: '0 6 * * MON-FRI', name: 'Mornings' }, ui.adminToken);
      await ui.api('POST', '/api/tokens', { name: 'ci token', scope: 'read' }, ui.adminToken);
      const bob = (await ui.api('POST', '/api/users', { email: 'bob@example.com', password: PASSWORD }, ui.adminToken)).json;
      await ui.api('PUT', `/api/projects/${project.id}/members/${bob.id}`, { role: 'editor' }, ui.adminToken);
      await ui.api('POST', '/api/executors/register', { name: 'worker-1', labels: ['knime', 'linux'] }, API_KEY);

      const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
      const page = await context.newPage();
      await signIn(page, ui.base);
      const pages: [string, string, string[]][] = [
        [`/workflows/${workflowId}`, 'A monthly report with a long file name.knwf', ['Version', 'File', 'Uploaded', 'By', '']],
        ['/account', 'ci token', ['Name', 'Scope', 'Token', 'Created', 'Expires', 'Last used', '']],
        ['/users', 'bob@example.com', ['Person', 'Role', 'Since', '']],
        [`/projects/${project.id}/members`, 'bob@example.com', ['Person', 'Role', 'Added', '']],
        ['/executors', 'worker-1', ['Executor', 'Status', 'Runs', 'Labels', 'Last heartbeat', '']],
        [`/projects/${project.id}`, 'A monthly report with a long file name', ['Workflow', 'Latest version', 'Changed']],
        ['/schedules', 'Mornings', ['Schedule', 'When', 'Next', 'Last', '']],
      ];
      for (const [path, text, columns] of pages) {
        await page.goto(ui.base + path);
        await page.locator('.table-wrap').getByText(text).first().waitFor();
        const found = await tables(page);
        assert.deepEqual(found.hidden, [], path);
        const shown = found.labels.find((l) => l.length === columns.length);
        assert.deepEqual(
          // The generated text, before its alternative text for screen readers (`"Name" / ""`).
          shown?.map((c) => /^"((?:[^"\\]|\\.)*)"/.exec(c)?.[1] ?? ''),
          columns,
          path,
        );
        await checkScreen(page, `table-phone${path.replace(/\/[0-9a-f-]{36}/g, '').replaceAll('/', '-')}`);
      }
      // The column names are for the eye: a cell's accessible name is its value alone.
      await page.goto(`${ui.base}/account`);
      await page.getByRole('cell', { name: 'ci token', exact: true }).waitFor();
      // At a desk the same tables stay tables.
      await page.setViewportSize({ width: 1280, height: 900 });
      await page.goto(`${ui.base}/account`);
      await page.locator('.table-wrap').getByText('ci token').first().waitFor();
      assert.equal(await page.locator('.table-wrap thead').evaluate((t) => getComputedStyle(t).display), 'table-header-group');
      assert.equal(await page.getByRole('columnheader', { name: 'Last used' }).count(), 1);
      await context.close();
    } finally {
      await ui.close();
    }
  });
});

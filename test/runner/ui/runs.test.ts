import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { dialects } from '../../helpers/db.js';
import { needsTool } from '../../helpers/tools.js';
import { axeViolations, launchChromium, RequestRecorder, screenshot, signIn, startUiRunner, type UiRunner } from './harness.js';
import { knwfWithConfigurationNodes } from '../helpers.js';
import { Seeder, XSS_IMG, XSS_SCRIPT } from './runs-seed.js';

const WIDE = { name: 'wide', width: 1280, height: 900 } as const;
const PHONE = { name: 'phone', width: 390, height: 844 } as const;

interface Session {
  context: BrowserContext;
  page: Page;
  recorder: RequestRecorder;
  scriptErrors: string[];
}

async function open(browser: Browser, ui: UiRunner, size: { width: number; height: number }, colorScheme: 'light' | 'dark' = 'light'): Promise<Session> {
  const context = await browser.newContext({ viewport: { width: size.width, height: size.height }, colorScheme, acceptDownloads: true });
  context.setDefaultTimeout(20_000);
  const recorder = new RequestRecorder(ui);
  recorder.attach(context);
  const page = await context.newPage();
  const scriptErrors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') scriptErrors.push(m.text());
  });
  page.on('pageerror', (e) => scriptErrors.push(e.message));
  await signIn(page, ui.base);
  return { context, page, recorder, scriptErrors };
}

async function close(s: Session): Promise<void> {
  assert.deepEqual(s.recorder.undocumented(), []);
  assert.equal(await s.page.evaluate(() => (window as unknown as { __xss?: unknown }).__xss), undefined, 'no injected script ran');
  // The refusals the tests provoke (a re-run refused, a cancel of an ended run) are logged by the browser.
  assert.deepEqual(s.scriptErrors.filter((e) => !/the server responded with a status of (?:400|409)/.test(e)), [], 'no script errors');
  await s.context.close();
}

const runRows = (page: Page) => page.getByRole('list', { name: 'Runs' }).getByRole('listitem');

for (const dialect of dialects()) {
  describe(`runner web UI: runs list, run page and live log in Chromium (${dialect.name})`, { skip: needsTool('chromium').skip }, () => {
    let browser: Browser;
    let ui: UiRunner;
    let drop: () => Promise<void>;
    before(async () => {
      browser = await launchChromium();
    });
    after(() => browser?.close());
    const fresh = async () => {
      const db = await dialect.create();
      drop = db.drop;
      ui = await startUiRunner({ databaseUrl: db.url });
      return new Seeder(ui).init();
    };
    const stop = async () => {
      await Promise.all(browser.contexts().map((c) => c.close()));
      await ui?.close();
      await drop?.();
    };

    test('runs list: filter by status (kept on reload), load more, re-run failed runs with their parameters', { timeout: 240_000 }, async () => {
      const seed = await fresh();
      try {
        for (let i = 0; i < 50; i++) await seed.done('succeeded', { i });
        const failedA = await seed.done('failed', { rows: 5, note: XSS_SCRIPT }, `node "Writer" failed: ${XSS_IMG}`);
        const failedB = await seed.done('failed', { rows: 7 }, 'out of memory');
        await seed.done('failed', { rows: 9 }, 'disk full');
        await seed.start({ waiting: true });
        for (const size of [WIDE, PHONE]) {
          const s = await open(browser, ui, size);
          const { page } = s;
          await page.getByRole('link', { name: 'Runs' }).click();
          await page.getByRole('heading', { name: 'Runs' }).waitFor();
          await runRows(page).first().waitFor();
          assert.equal(await runRows(page).count(), 50);
          await page.getByText(`node "Writer" failed: ${XSS_IMG}`).waitFor();
          await page.getByText(`note=${XSS_SCRIPT}`).first().waitFor();
          await screenshot(page, `runs-${size.name}`);
          assert.deepEqual(await axeViolations(page), []);
          const total = (await seed.runs()).length;
          await page.getByRole('button', { name: 'Load more' }).click();
          await page.waitForFunction((n) => document.querySelectorAll('.run-row').length === n, total);
          assert.equal(await page.getByRole('button', { name: 'Load more' }).count(), 0);
          // Filter: kept in the address, so a reload keeps it.
          await page.getByLabel('Status').selectOption('failed');
          await page.waitForURL(/\/runs\?status=failed$/);
          await page.waitForFunction(() => document.querySelectorAll('.run-row').length === 3);
          await page.reload();
          await page.waitForFunction(() => document.querySelectorAll('.run-row').length === 3);
          assert.equal(await page.getByLabel('Status').inputValue(), 'failed');
          if (size === WIDE) {
            // Re-run two failed runs: the same parameters, the version they ran.
            const before = (await seed.runs('&status=queued')).length;
            await page.getByLabel(`Select the run ${failedA} of Sales report`).check();
            await page.getByLabel(`Select the run ${failedB} of Sales report`).check();
            await page.getByRole('button', { name: 'Re-run selected (2)' }).click();
            const form = page.getByRole('form', { name: 'Re-run 2 runs' });
            await form.getByLabel('Replace parameters (optional)').fill('{"rows": ');
            await form.getByRole('button', { name: 'Start 2 runs again' }).click();
            await form.getByText('not valid JSON').waitFor();
            await form.getByLabel('Replace parameters (optional)').fill('');
            await screenshot(page, 'runs-rerun-wide');
            assert.deepEqual(await axeViolations(page), []);
            await form.getByRole('button', { name: 'Start 2 runs again' }).click();
            await page.getByRole('status').getByText('Started 2 runs').waitFor();
            const queued = await seed.runs('&status=queued');
            assert.equal(queued.length, before + 2);
            const params = queued.map((r) => JSON.stringify(r.parameters)).sort();
            assert.ok(params.includes(JSON.stringify({ rows: 5, note: XSS_SCRIPT })), params.join());
            assert.ok(params.includes(JSON.stringify({ rows: 7 })), params.join());
            // The new run is one click away, and shows in the list without the filter.
            const newId = await page.getByRole('status').getByRole('link').first().innerText();
            await page.getByLabel('Status').selectOption('queued');
            await page.getByRole('link', { name: `Run ${newId} of Sales report` }).waitFor();
          }
          await close(s);
        }
      } finally {
        await stop();
      }
    });

    const looks = dialect.name === 'sqlite' ? ([[WIDE, 'light'], [WIDE, 'dark'], [PHONE, 'light'], [PHONE, 'dark']] as const) : ([[WIDE, 'light']] as const);
    for (const [size, scheme] of looks) {
      test(`run page: cancel a queued run; outputs download; the log live, errors only, search; re-run (${size.name}, ${scheme})`, async () => {
        const seed = await fresh();
        try {
          const queued = await seed.start({ rows: 1 });
          const s = await open(browser, ui, size, scheme);
          const { page } = s;
          // Cancel a queued run.
          await page.goto(`${ui.base}/runs/${queued.id}`);
          await page.getByRole('heading', { name: 'Run of Sales report' }).waitFor();
          await page.getByRole('button', { name: 'Cancel run' }).click();
          await page.locator('.page-header').getByText('Cancelled').waitFor();
          assert.equal((await ui.api('GET', `/api/runs/${queued.id}`, undefined, ui.adminToken)).json.status, 'cancelled');
          assert.equal(await page.getByRole('button', { name: 'Cancel run' }).count(), 0);

          // A running run with outputs and a log that grows while the page is open.
          const run = await seed.startRunning({ rows: 5, note: XSS_SCRIPT });
          await seed.output(run.id, run.lease, 'result.csv', 'a,b\n1,2\n');
          await seed.output(run.id, run.lease, `${XSS_IMG}.txt`, 'x');
          await seed.log(run.id, run.lease, ['starting\nreading the ta', 'ble\n', `ERROR in node ${XSS_IMG}\n${XSS_SCRIPT}\n`], 1);
          await page.goto(`${ui.base}/runs/${run.id}`);
          await page.locator('.log-line', { hasText: 'reading the table' }).waitFor();
          // The executor by its name; each line with the time its chunk arrived.
          await page.locator('dl.facts dd', { hasText: /^ex-1$/ }).waitFor();
          const stamp = page.locator('.log-line', { hasText: 'reading the table' }).locator('time');
          assert.match(await stamp.innerText(), /^\d{2}:\d{2}:\d{2}$/);
          assert.ok(Date.parse((await stamp.getAttribute('datetime')) ?? '') > 0);
          await page.getByText(`note`, { exact: true }).waitFor();
          await page.locator('.log-line', { hasText: XSS_SCRIPT }).waitFor();
          await seed.log(run.id, run.lease, ['live line one\nlive line two\n'], 4);
          await page.locator('.log-line', { hasText: 'live line two' }).waitFor();
          await page.getByRole('button', { name: 'Pause' }).waitFor();
          // Outputs: listed by name as text, downloaded through the API.
          await page.locator('.out-name', { hasText: `${XSS_IMG}.txt` }).waitFor();
          const [file] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download result.csv' }).click()]);
          assert.equal(file.suggestedFilename(), 'result.csv');
          assert.equal(fs.readFileSync(await file.path(), 'utf8'), 'a,b\n1,2\n');
          // Errors only; search.
          await page.getByLabel('Errors only').check();
          await page.getByText('1 of 6 lines').waitFor();
          assert.equal(await page.locator('.log-line').count(), 1);
          await page.getByLabel('Errors only').uncheck();
          await page.getByLabel('Search the log').fill('LIVE line');
          await page.getByText('2 of 6 lines').waitFor();
          assert.equal(await page.locator('.log-line mark').count(), 2);
          await screenshot(page, `run-${size.name}-${scheme}`);
          assert.deepEqual(await axeViolations(page), []);
          await page.getByLabel('Search the log').fill('');
          // The whole log as a file.
          const [whole] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download the whole log' }).click()]);
          assert.match(fs.readFileSync(await whole.path(), 'utf8'), /reading the table\n[\s\S]*live line two\n$/);
          // The run fails: the page shows it without a reload.
          await seed.log(run.id, run.lease, ['last words\n'], 5);
          await seed.finish(run.id, run.lease, 'failed', `exit 3 ${XSS_IMG}`, 3);
          await page.locator('.page-header').getByText('Failed').waitFor();
          await page.locator('.log-line', { hasText: 'last words' }).waitFor();
          await page.getByText('Complete', { exact: true }).waitFor();
          // Nothing more to follow in a complete log.
          assert.equal(await page.getByRole('button', { name: 'Pause' }).count(), 0);
          await page.locator('pre.error-text', { hasText: `exit 3 ${XSS_IMG}` }).waitFor();
          await screenshot(page, `run-failed-${size.name}-${scheme}`);
          assert.deepEqual(await axeViolations(page), []);
          // Re-run on the latest version, which declares rows as an integer: a refusal says so once.
          const v2 = new FormData();
          v2.append('file', new Blob([new Uint8Array(knwfWithConfigurationNodes())]), 'v2.knwf');
          assert.equal((await fetch(`${ui.base}/api/workflows/${seed.workflowId}/versions`, { method: 'POST', headers: { authorization: `Bearer ${ui.adminToken}` }, body: v2 })).status, 201);
          await page.getByRole('button', { name: 'Re-run' }).click();
          const rerun = page.getByRole('form', { name: 'Re-run' });
          await rerun.getByLabel('The latest version').check();
          await rerun.getByLabel('Replace parameters (optional)').fill('{"rows": "many"}');
          await rerun.getByRole('button', { name: 'Start the run again' }).click();
          await rerun.getByRole('alert').waitFor();
          assert.equal((await rerun.getByRole('alert').innerText()).match(/must be an integer/g)?.length, 1, await rerun.getByRole('alert').innerText());
          await rerun.getByLabel('Replace parameters (optional)').fill('');
          await rerun.getByRole('button', { name: 'Start the run again' }).click();
          await page.waitForURL((u) => u.pathname.startsWith('/runs/') && !u.pathname.endsWith(run.id));
          const newId = new URL(page.url()).pathname.split('/')[2]!;
          const again = (await ui.api('GET', `/api/runs/${newId}`, undefined, ui.adminToken)).json;
          // Its own values, and the defaults the new version declares.
          assert.deepEqual(again.parameters, { rows: 5, note: XSS_SCRIPT, dry: true, mode: 'fast', ratio: 0.25, title: 'Monthly <b>report</b>' });
          await page.locator('.page-header').getByText('Queued').waitFor();
          // The new run's page opens without the re-run form.
          await page.getByRole('button', { name: 'Re-run' }).waitFor();
          assert.equal(await page.getByRole('form', { name: 'Re-run' }).count(), 0);
          await close(s);
        } finally {
          await stop();
        }
      });
    }

    test('a 200,000-line log opens and shows its last line', async () => {
      const seed = await fresh();
      try {
        const run = await seed.startRunning();
        const lines = Array.from({ length: 200_000 }, (_, i) => `line ${i + 1} of the big log: some text to make it look real`);
        const text = `${lines.join('\n')}\n`;
        const chunks: string[] = [];
        for (let i = 0; i < text.length; i += 16_384) chunks.push(text.slice(i, i + 16_384));
        for (let i = 0; i < chunks.length; i += 200) await seed.log(run.id, run.lease, chunks.slice(i, i + 200), i + 1);
        await seed.finish(run.id, run.lease, 'succeeded');
        const s = await open(browser, ui, WIDE);
        const started = Date.now();
        await s.page.goto(`${ui.base}/runs/${run.id}`);
        await s.page.locator('.log-line', { hasText: 'line 200000 of the big log' }).waitFor({ timeout: 120_000 });
        console.log(`a 200,000-line log (${chunks.length} chunks) showed its last line after ${Date.now() - started} ms (${dialect.name})`);
        await s.page.getByText('200,000 lines').waitFor();
        assert.ok((await s.page.locator('.log-line').count()) < 200, 'only the rows in view are in the page');
        // Scrolling up leaves the end; "Go to the end" goes back there.
        const log = s.page.getByRole('region', { name: 'Log lines' });
        await log.focus();
        await s.page.keyboard.press('Home');
        // A complete log: a way back to its end, nothing to pause or follow.
        await s.page.getByRole('button', { name: 'Go to the end' }).waitFor();
        assert.equal(await s.page.getByRole('button', { name: /^(?:Follow|Pause)$/ }).count(), 0);
        await s.page.locator('.log-line', { hasText: /^\s*1\s*\d{2}:\d{2}:\d{2}\s*line 1 of the big log/ }).waitFor();
        await s.page.getByRole('button', { name: 'Go to the end' }).click();
        await s.page.locator('.log-line', { hasText: 'line 200000 of the big log' }).waitFor();
        await s.page.getByRole('button', { name: 'Go to the end' }).waitFor({ state: 'detached' });
        await close(s);
      } finally {
        await stop();
      }
    });
  });
}

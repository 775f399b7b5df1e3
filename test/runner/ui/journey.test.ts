import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { dialects, tempDir } from '../../helpers/db.js';
import { needsTool } from '../../helpers/tools.js';
import { API_KEY, makeZip } from '../helpers.js';
import { launchChromium, PASSWORD, RequestRecorder, screenshot, startUiRunner, type UiRunner } from './harness.js';

/** What the executor runs: lines a second apart (so the log is watched live) and one output file. */
const COMMAND = "echo \"rows={param.rows}\"; for i in 1 2 3; do echo \"step $i\"; sleep 1; done; printf '%s' {param.rows} > {out}/result.txt; echo done";

function executor(base: string, workDir: string): ChildProcess {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PIER_EXECUTOR_') && k !== 'API_KEY'));
  return spawn(process.execPath, ['bin/pier.js', 'runner', 'executor', '--url', base, '--name', 'journey', '--work-dir', workDir, '--command', COMMAND], {
    env: { ...env, PIER_EXECUTOR_API_KEY: API_KEY },
    stdio: 'ignore',
  });
}

describe('runner web UI: a new user\'s first hour, in the browser only, with a real executor', { skip: needsTool('chromium').skip }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(() => browser?.close());

  for (const target of dialects()) {
    test(`setup link, project, upload, run with a parameter watched live, output download, schedule, token (${target.name})`, { timeout: 180_000 }, async () => {
      const db = await target.create();
      let ui: UiRunner | null = null;
      let ex: ChildProcess | null = null;
      const files = tempDir('pier-journey-');
      try {
        ui = await startUiRunner({ databaseUrl: db.url, setup: false, env: { RUNNER_SETUP_TOKEN: '', API_KEY } });
        const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
        const recorder = new RequestRecorder(ui);
        recorder.attach(context);
        const page = await context.newPage();

        // The first administrator, through the link `pier serve` prints.
        await page.goto(ui.runner.service.setupLink!);
        await page.getByLabel('Name').fill('Nia New');
        await page.getByLabel('Email').fill('nia@example.com');
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Create administrator' }).click();
        await page.getByRole('heading', { name: 'Projects' }).waitFor();

        await page.getByRole('button', { name: 'New project' }).click();
        await page.getByLabel('Name').fill('Churn');
        await page.getByRole('button', { name: 'Create project' }).click();
        await page.getByRole('button', { name: 'Upload a workflow' }).click();
        const archive = path.join(files, 'Churn scoring.knwf');
        fs.writeFileSync(archive, makeZip('Churn scoring/workflow.knime'));
        await page.getByLabel('Workflow archive (.knwf)').setInputFiles(archive);
        await page.getByRole('button', { name: 'Upload', exact: true }).click();
        await page.getByRole('heading', { name: 'Churn scoring' }).waitFor();

        // An executor comes up (as an operator would start it) and the run is started in the page.
        ex = executor(ui.base, path.join(files, 'work'));
        const form = page.getByRole('form', { name: 'Start a run' });
        await form.getByRole('button', { name: 'Add a parameter' }).click();
        await form.getByLabel('Name 1').fill('rows');
        await form.getByLabel('Value 1').fill('42');
        await form.getByRole('button', { name: 'Start run' }).click();
        await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
        // The log arrives while the run runs.
        await page.getByText('step 1').waitFor({ timeout: 60_000 });
        assert.equal(await page.getByText('Succeeded').count(), 0, 'seen before the run ended');
        await screenshot(page, 'journey-live-log');
        await page.getByText('done', { exact: true }).waitFor({ timeout: 30_000 });
        await page.getByText('Succeeded').first().waitFor({ timeout: 30_000 });
        await page.getByText('rows=42').waitFor();
        const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: /Download.*result\.txt|^Download$/ }).first().click()]);
        assert.equal(fs.readFileSync((await download.path())!, 'utf8'), '42');

        // Scheduled from its workflow's page.
        await page.getByRole('link', { name: 'Churn scoring' }).first().click();
        await page.getByRole('button', { name: 'New schedule' }).click();
        await page.getByText('At 06:00, on Monday through Friday').waitFor();
        await page.getByRole('button', { name: 'Create schedule' }).click();
        await page.getByRole('region', { name: 'Schedules' }).getByRole('button', { name: 'Disable 0 6 * * MON-FRI' }).waitFor();

        // A token for scripts, shown once.
        await page.getByRole('link', { name: 'Nia New' }).click();
        const tokens = page.getByRole('region', { name: 'Personal access tokens' });
        await tokens.getByLabel('Name').fill('laptop');
        await tokens.getByRole('button', { name: 'Create token' }).click();
        const secret = (await tokens.locator('.secret code').innerText()).trim();
        assert.equal((await ui.api('GET', '/api/runs', undefined, secret)).json.items[0].parameters.rows, 42);

        assert.deepEqual(recorder.undocumented(), []);
        await context.close();
      } finally {
        ex?.kill('SIGTERM');
        await ui?.close();
        await db.drop();
      }
    });
  }
});

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { dialects, tempDir } from '../../helpers/db.js';
import { needsTool } from '../../helpers/tools.js';
import { makeZip } from '../helpers.js';
import { launchChromium, signIn, startUiRunner, type UiRunner } from './harness.js';

/** The project's page shows what its workflow archives take of RUNNER_PROJECT_STORAGE_BYTES, and an upload past it says why it was refused. */
describe('runner web UI: a project\'s storage in Chromium', { skip: needsTool('chromium').skip }, () => {
  let browser: Browser;
  const files = tempDir('pier-ui-knwf-');
  const archive = makeZip('flow/workflow.knime', '<workflow marker="the same in every upload"/>');
  const S = archive.length;
  const file = path.join(files, 'Churn.knwf');
  fs.writeFileSync(file, archive);
  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    fs.rmSync(files, { recursive: true, force: true });
  });

  for (const target of dialects()) {
    test(`"Storage: … of …" on the project's page; an upload past the limit is refused with the reason (${target.name})`, async () => {
      const db = await target.create();
      let ui: UiRunner | null = null;
      try {
        // Room for one archive and a little: with one stored the project is nearly full, and a
        // second upload does not fit.
        const limit = S + Math.floor(S / 20);
        ui = await startUiRunner({ databaseUrl: db.url, env: { RUNNER_PROJECT_STORAGE_BYTES: String(limit) } });
        const project = (await ui.api('POST', '/api/projects', { name: 'Sales' }, ui.adminToken)).json as { id: string };
        const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
        await signIn(page, ui.base);
        await page.goto(`${ui.base}/projects/${project.id}`);
        await page.getByText(`Storage: 0 B of ${limit} B`, { exact: true }).waitFor();

        await page.getByRole('button', { name: 'Upload a workflow' }).click();
        await page.getByLabel('Workflow archive (.knwf)').setInputFiles(file);
        await page.getByRole('button', { name: 'Upload', exact: true }).click();
        await page.getByRole('heading', { name: 'Churn' }).waitFor();

        await page.goto(`${ui.base}/projects/${project.id}`);
        await page
          .getByText(`Storage: ${S} B of ${limit} B — nearly full: delete workflows that are no longer needed to make room for uploads`, { exact: true })
          .waitFor();
        await page.getByRole('button', { name: 'Upload a workflow' }).click();
        await page.getByLabel('Workflow archive (.knwf)').setInputFiles(file);
        await page.getByRole('button', { name: 'Upload', exact: true }).click();
        await page.getByText(`the project's workflow versions take ${S} of its ${limit} bytes of storage`, { exact: false }).waitFor();
        const listed = (await ui.api('GET', `/api/projects/${project.id}/workflows`, undefined, ui.adminToken)).json as { items: unknown[] };
        assert.equal(listed.items.length, 1);
      } finally {
        await ui?.close();
        await db.drop();
      }
    });
  }
});

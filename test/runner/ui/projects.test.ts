import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { dialects, tempDir } from '../../helpers/db.js';
import { needsTool } from '../../helpers/tools.js';
import { makeZip } from '../helpers.js';
import { ADMIN, checkScreen, launchChromium, PASSWORD, RequestRecorder, signIn, startUiRunner, type UiRunner } from './harness.js';

const XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=1</script>';
const VIEWER = 'viewer@example.com';

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100 && !(await check()); i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(await check(), 'the change reached the server');
}

/** Accepts the next confirm() the page shows. */
const acceptNextDialog = (page: Page) => page.once('dialog', (d) => void d.accept());

describe('runner web UI: projects, members, workflows and starting a run in Chromium', { skip: needsTool('chromium').skip }, () => {
  let browser: Browser;
  const files = tempDir('pier-ui-knwf-');
  const knwf = (name: string, marker: string) => {
    const file = path.join(files, name);
    fs.writeFileSync(file, makeZip('flow/workflow.knime', `<workflow marker="${marker}"/>`));
    return file;
  };
  before(async () => {
    browser = await launchChromium();
  });
  after(() => browser?.close());

  for (const target of dialects()) {
    test(`an owner creates a project, uploads a workflow and a version, adds a member, starts a run, deletes when empty (${target.name})`, async () => {
      const db = await target.create();
      let ui: UiRunner | null = null;
      try {
        ui = await startUiRunner({ databaseUrl: db.url });
        assert.equal((await ui.api('POST', '/api/users', { email: VIEWER, name: 'Vic Viewer', password: PASSWORD }, ui.adminToken)).status, 201);
        const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
        const recorder = new RequestRecorder(ui);
        recorder.attach(context);
        const page = await context.newPage();
        const scripts: string[] = [];
        page.on('console', (m) => {
          if (m.type() === 'error') scripts.push(m.text());
        });
        page.on('pageerror', (e) => scripts.push(e.message));
        await signIn(page, ui.base);

        // A project whose name is markup: shown as text.
        await page.getByRole('button', { name: 'New project' }).click();
        await page.getByLabel('Name').fill(`Sales ${XSS}`);
        await page.getByLabel('Description').fill('Monthly <b>reports</b>');
        await page.getByRole('button', { name: 'Create project' }).click();
        await page.getByRole('heading', { name: `Sales ${XSS}` }).waitFor();
        await page.getByText('No workflows yet.').waitFor();
        const projectId = new URL(page.url()).pathname.split('/')[2]!;

        // Upload: the name defaults to the file's; the page of the new workflow opens.
        await page.getByRole('button', { name: 'Upload a workflow' }).click();
        await page.getByLabel('Workflow archive (.knwf)').setInputFiles(knwf('Churn model.knwf', 'one'));
        await page.getByRole('button', { name: 'Upload', exact: true }).click();
        await page.getByRole('heading', { name: 'Churn model' }).waitFor();
        const versions = page.getByRole('region', { name: 'Versions' });
        await versions.getByRole('cell', { name: 'Ada Admin' }).waitFor();
        // A new version; then v1 downloads with the bytes uploaded.
        await page.getByRole('button', { name: 'Upload a new version' }).click();
        await page.getByLabel('Workflow archive (.knwf)').setInputFiles(knwf('Churn model v2.knwf', 'two'));
        await page.getByRole('button', { name: 'Upload version' }).click();
        await versions.getByRole('cell', { name: 'v2', exact: true }).waitFor();
        const [saved] = await Promise.all([page.waitForEvent('download'), versions.getByRole('button', { name: 'Download v1' }).click()]);
        assert.equal(saved.suggestedFilename(), 'Churn model.knwf');
        assert.deepEqual(fs.readFileSync((await saved.path())!), fs.readFileSync(path.join(files, 'Churn model.knwf')));
        await checkScreen(page, 'workflow-wide');

        // Start a run of v1 with typed parameters and a label: the run's page opens.
        const form = page.getByRole('form', { name: 'Start a run' });
        await form.getByLabel('Version').selectOption('1');
        await form.getByRole('button', { name: 'Add a parameter' }).click();
        await form.getByLabel('Name 1').fill('rows');
        await form.getByLabel('Value 1').fill('10');
        await form.getByRole('button', { name: 'Add a parameter' }).click();
        await form.getByLabel('Name 2').fill('note');
        await form.getByLabel('Value 2').fill(XSS);
        await form.getByLabel('Required executor labels').fill('knime, big-memory');
        await form.getByRole('button', { name: 'Start run' }).click();
        await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
        const runId = new URL(page.url()).pathname.split('/')[2]!;
        const run = (await ui.api('GET', `/api/runs/${runId}`, undefined, ui.adminToken)).json;
        assert.deepEqual([run.workflowVersion, run.parameters, run.requiredLabels], [1, { rows: 10, note: XSS }, ['knime', 'big-memory']]);

        // Members: an address is invited alike whether or not an account has it; the owner sees
        // the pending invitations (addresses masked) and withdraws one.
        await page.goto(`${ui.base}/projects/${projectId}/members`);
        const members = page.getByRole('region', { name: 'Members' });
        for (const email of ['nobody@example.com', VIEWER]) {
          await members.getByLabel('Email of the person to invite').fill(email);
          await members.getByRole('button', { name: 'Invite', exact: true }).click();
          await members.getByRole('status').getByText(`Invited ${email} as viewer`).waitFor();
        }
        const pending = members.getByRole('region', { name: 'Pending invitations' });
        await pending.getByRole('cell', { name: /^v…@example\.com/ }).waitFor();
        await pending.getByRole('button', { name: 'Withdraw the invitation of n…@example.com' }).click();
        await pending.getByRole('cell', { name: /^n…@example\.com/ }).waitFor({ state: 'detached' });
        assert.equal(await members.getByRole('cell', { name: /Vic Viewer/ }).count(), 0, 'an invitation is no membership');

        // The viewer signs in (a phone, dark) and accepts the invitation where they land.
        const viewerContext = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: 'dark' });
        recorder.attach(viewerContext);
        const viewerPage = await viewerContext.newPage();
        await signIn(viewerPage, ui.base, VIEWER);
        const invitations = viewerPage.getByRole('region', { name: 'Invitations' });
        await invitations.getByText('from Ada Admin (admin@example.com)').waitFor();
        await checkScreen(viewerPage, 'invitations-phone-dark');
        await invitations.getByRole('button', { name: `Accept the invitation to Sales ${XSS}` }).click();
        await invitations.getByRole('status').getByText('You joined').waitFor();
        await page.reload();
        await members.getByRole('cell', { name: /Vic Viewer/ }).waitFor();
        await members.getByText('No invitation waits.').waitFor();
        await checkScreen(page, 'project-members-wide');
        // The last owner cannot step down: the API's reason is shown.
        await members.getByLabel(`Role of ${ADMIN}`).selectOption('viewer');
        await members.getByRole('alert').getByText('a project needs at least one owner').waitFor();
        await page.waitForFunction((label) => (document.querySelector(`select[aria-label="${label}"]`) as HTMLSelectElement | null)?.value === 'owner', `Role of ${ADMIN}`);
        // Roles change in place: editor, then back to viewer.
        const roleOf = async (email: string) => (await ui!.api('GET', `/api/projects/${projectId}/members`, undefined, ui!.adminToken)).json.items.find((m: { email: string }) => m.email === email)?.role;
        await members.getByLabel(`Role of ${VIEWER}`).selectOption('editor');
        await page.waitForFunction(() => document.querySelectorAll('[role="alert"]').length === 0);
        await until(async () => (await roleOf(VIEWER)) === 'editor');
        await members.getByLabel(`Role of ${VIEWER}`).selectOption('viewer');
        await until(async () => (await roleOf(VIEWER)) === 'viewer');

        // The viewer sees the project with their role, and no controls to change it.
        await viewerPage.goto(`${ui.base}/projects`);
        await viewerPage.getByText('You are a viewer').waitFor();
        await viewerPage.getByText('1 workflow · 1 run · 2 members').waitFor();
        await viewerPage.getByRole('link', { name: `Sales ${XSS}` }).click();
        await viewerPage.getByRole('link', { name: 'Churn model' }).click();
        await viewerPage.getByRole('region', { name: 'Versions' }).waitFor();
        assert.equal(await viewerPage.getByRole('button', { name: 'Start run' }).count(), 0);
        assert.equal(await viewerPage.getByRole('button', { name: 'Delete workflow' }).count(), 0);
        await checkScreen(viewerPage, 'workflow-phone-dark-viewer');
        // Their own address is read-only: an administrator changes it.
        await viewerPage.goto(`${ui.base}/account`);
        await viewerPage.getByText('Ask an administrator to change your address').waitFor();
        assert.equal(await viewerPage.getByLabel('Email').getAttribute('readonly'), '');
        await viewerContext.close();

        // Settings: a project with a workflow cannot be deleted, and the page says why.
        await page.goto(`${ui.base}/projects/${projectId}/settings`);
        await page.getByText('The project still holds one workflow').waitFor();
        assert.equal(await page.getByRole('button', { name: 'Delete project' }).isDisabled(), true);
        await checkScreen(page, 'project-settings-wide');
        await page.goto(`${ui.base}/projects/${projectId}`);
        await page.getByRole('link', { name: 'Churn model' }).click();
        acceptNextDialog(page);
        await page.getByRole('button', { name: 'Delete workflow' }).click();
        await page.getByText('No workflows yet.').waitFor();
        await page.getByRole('link', { name: 'Settings' }).click();
        acceptNextDialog(page);
        await page.getByRole('button', { name: 'Delete project' }).click();
        await page.getByRole('heading', { name: 'Projects' }).waitFor();
        assert.equal((await ui.api('GET', `/api/projects/${projectId}`, undefined, ui.adminToken)).status, 404);

        assert.equal(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined, 'no markup ran');
        assert.deepEqual(recorder.undocumented(), []);
        // The browser logs the refusals the test provoked (404 unknown email, 409 last owner).
        assert.deepEqual(scripts.filter((s) => !/status of (404|409)/.test(s)), [], 'no script errors');
        await context.close();
      } finally {
        await ui?.close();
        await db.drop();
      }
    });
  }

  test('the project list and a workflow page at phone width, light and dark, with no serious accessibility violation', async () => {
    const ui = await startUiRunner();
    try {
      const project = (await ui.api('POST', '/api/projects', { name: 'Forecasts', description: 'Weekly demand forecasts' }, ui.adminToken)).json;
      for (const scheme of ['light', 'dark'] as const) {
        const context = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: scheme });
        const page = await context.newPage();
        await signIn(page, ui.base);
        await page.getByText('0 workflows · 0 runs · 1 member').waitFor();
        await checkScreen(page, `projects-phone-${scheme}`);
        await page.goto(`${ui.base}/projects/${project.id}`);
        await page.getByRole('button', { name: 'Upload a workflow' }).click();
        await checkScreen(page, `project-upload-phone-${scheme}`);
        await context.close();
      }
    } finally {
      await ui.close();
    }
  });
});

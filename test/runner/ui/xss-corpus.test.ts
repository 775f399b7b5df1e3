import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { needsTool } from '../../helpers/tools.js';
import { API_KEY, makeZip } from '../helpers.js';
import { launchChromium, PASSWORD, RequestRecorder, signIn, startUiRunner } from './harness.js';
import { Seeder } from './runs-seed.js';

/** Markup that runs `window.__xss=1` (or opens a dialog) wherever it is parsed as HTML or followed as a link. */
export const XSS_CORPUS = [
  '<script>window.__xss=1</script>',
  '<img src=x onerror=window.__xss=1>',
  '<svg onload=window.__xss=1>',
  '<svg><script>window.__xss=1</script></svg>',
  '"><img src=x onerror=window.__xss=1>',
  "'><img src=x onerror=window.__xss=1>",
  'javascript:window.__xss=1',
  '<iframe src="javascript:window.top.__xss=1"></iframe>',
  '<body onload=window.__xss=1>',
  '<details open ontoggle=window.__xss=1>',
  '<input autofocus onfocus=window.__xss=1>',
  '<a href="javascript:window.__xss=1">click</a>',
  '<math><mtext><table><mglyph><style><img src=x onerror=window.__xss=1>',
  '<noscript><p title="</noscript><img src=x onerror=window.__xss=1>">',
  "<style>@import 'javascript:window.__xss=1'</style>",
  "{{constructor.constructor('window.__xss=1')()}}",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection payload, on purpose
  '${window.__xss=1}',
  '<object data="javascript:window.__xss=1"></object>',
  '<embed src="javascript:window.__xss=1">',
  '<video><source onerror=window.__xss=1></video>',
  '<audio src=x onerror=window.__xss=1>',
  '<marquee onstart=window.__xss=1>',
  '<form><button formaction=javascript:window.__xss=1>x</button></form>',
  '<textarea onfocus=window.__xss=1 autofocus>',
  '<select onfocus=window.__xss=1 autofocus>',
  '<div style="background:url(javascript:window.__xss=1)">',
  '<base href="javascript:window.__xss=1//">',
  '<meta http-equiv="refresh" content="0;url=javascript:window.__xss=1">',
  '<img src="x:x" onerror="window.__xss=1">',
  '<img src=x onerror=&#x77;indow.__xss=1>',
  '<scr<script>ipt>window.__xss=1</scr</script>ipt>',
  '</title><script>window.__xss=1</script>',
  '</textarea><script>window.__xss=1</script>',
  '<!--<img src="--><img src=x onerror=window.__xss=1//">',
  '<svg><animate onbegin=window.__xss=1 attributeName=x dur=1s>',
  '<img srcset=x onerror=window.__xss=1>',
  '<xss onpointerover=window.__xss=1 style=display:block>hover',
  'data:text/html;base64,PHNjcmlwdD53aW5kb3cuX194c3M9MTwvc2NyaXB0Pg==',
  '<img src=x onerror=alert(1)>',
  '<svg/onload=alert`1`>',
  '"onmouseover="window.__xss=1" x="',
  '<a href=" &#14; javascript:window.__xss=1">x</a>',
];

describe('runner web UI: an XSS corpus through every field a user or vendor types, in Chromium', { skip: needsTool('chromium').skip }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(() => browser?.close());

  test(`${XSS_CORPUS.length} payloads in names, descriptions, parameters, log lines, errors, output names, schedules, executors, users and tokens: none runs`, { timeout: 300_000 }, async () => {
    assert.ok(XSS_CORPUS.length >= 40);
    const ui = await startUiRunner({ env: { API_KEY } });
    try {
      const { api, adminToken: admin } = ui;
      const ok = async (res: Promise<{ status: number; json: unknown }>) => {
        const r = await res;
        assert.ok(r.status < 300, `${r.status} ${JSON.stringify(r.json)}`);
        return r.json as { id: string };
      };
      const seed = await new Seeder(ui).init(XSS_CORPUS[1]);
      const projectId = seed.projectId;
      await ok(api('PATCH', `/api/projects/${projectId}`, { description: XSS_CORPUS.join(' ') }, admin));
      for (const [i, x] of XSS_CORPUS.entries()) {
        await ok(api('POST', '/api/projects', { name: `P${i} ${x}`, description: x }, admin));
        const user = await ok(api('POST', '/api/users', { email: `u${i}@example.com`, name: x, password: PASSWORD }, admin));
        await ok(api('PUT', `/api/projects/${projectId}/members/${user.id}`, { role: 'viewer' }, admin));
        await ok(api('POST', `/api/workflows/${seed.workflowId}/schedules`, { cron: '0 6 * * *', name: x }, admin));
        await ok(api('POST', '/api/executors/register', { name: x }, API_KEY));
        await ok(api('POST', '/api/tokens', { name: x, scope: 'read' }, admin));
      }
      for (const x of XSS_CORPUS.slice(0, 10)) {
        const form = new FormData();
        form.append('file', new Blob([new Uint8Array(makeZip())]), 'w.knwf');
        form.append('name', x);
        form.append('description', x);
        const res = await fetch(`${ui.base}/api/projects/${projectId}/workflows`, { method: 'POST', headers: { authorization: `Bearer ${admin}` }, body: form });
        assert.equal(res.status, 201, await res.text());
      }
      const parameters = Object.fromEntries(XSS_CORPUS.map((x, i) => [i % 2 ? `k${i}` : x.slice(0, 200), x]));
      const run = await seed.startRunning(parameters);
      await seed.log(run.id, run.lease, [XSS_CORPUS.join('\n')], 1);
      let outputs = 0;
      for (const x of XSS_CORPUS) {
        const form = new FormData();
        form.append('leaseToken', run.lease.leaseToken);
        form.append('attempt', String(run.lease.attempt));
        form.append('sha256', crypto.createHash('sha256').update('x').digest('hex'));
        form.append('file', new Blob(['x']), 'file');
        const res = await fetch(`${ui.base}/api/runs/${run.id}/outputs/${encodeURIComponent(x)}`, { method: 'PUT', headers: { authorization: `ApiKey ${API_KEY}` }, body: form });
        if (res.status === 200) outputs++;
        else assert.equal(res.status, 400, await res.text());
      }
      assert.ok(outputs >= 20, `only ${outputs} payloads were accepted as output names`);
      await seed.finish(run.id, run.lease, 'failed', XSS_CORPUS.join('\n'));

      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const recorder = new RequestRecorder(ui);
      recorder.attach(context);
      const page = await context.newPage();
      const dialogs: string[] = [];
      page.on('dialog', (d) => {
        dialogs.push(d.message());
        void d.dismiss();
      });
      await signIn(page, ui.base);
      const screens: [string, string][] = [
        ['/projects', `P0 ${XSS_CORPUS[0]}`],
        [`/projects/${projectId}`, XSS_CORPUS[3]!],
        [`/projects/${projectId}/members`, XSS_CORPUS[5]!],
        [`/projects/${projectId}/settings`, 'Delete the project'],
        [`/workflows/${seed.workflowId}`, 'Versions'],
        ['/runs', 'Select failed runs'],
        [`/runs/${run.id}`, `${XSS_CORPUS.length} lines`],
        ['/schedules', XSS_CORPUS[7]!],
        ['/executors', XSS_CORPUS[9]!],
        ['/users', XSS_CORPUS[11]!],
        ['/account', XSS_CORPUS[13]!],
      ];
      for (const [path, shown] of screens) {
        await page.goto(`${ui.base}${path}`);
        await page.getByText(shown, { exact: false }).first().waitFor();
        // Hover and focus everything once: handlers bound to those events must not exist either.
        await page.mouse.move(300, 300);
        await page.mouse.move(600, 500);
        await page.keyboard.press('Tab');
        assert.equal(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined, `markup ran on ${path}`);
        assert.equal(await page.locator('main img, main svg script, main iframe, main object, main embed, main script').count(), 0, `markup became elements on ${path}`);
      }
      assert.deepEqual(dialogs, []);
      assert.deepEqual(recorder.undocumented(), []);
      await context.close();
    } finally {
      await ui.close();
    }
  });
});

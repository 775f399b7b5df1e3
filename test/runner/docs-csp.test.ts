import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { type Browser as Chromium, chromium } from 'playwright-core';
import { needsTool } from '../helpers/tools.js';
import { startRunner, type TestRunner } from './helpers.js';

/**
 * The docs UI over plain HTTP. CSP `upgrade-insecure-requests` (W3C Upgrade Insecure Requests §3)
 * makes a browser fetch every subresource over https, so on a runner served over http by any
 * name but localhost the docs page stayed blank. The directive is sent only when RUNNER_URL is https.
 */

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const cspOf = async (r: TestRunner, url: string) => String((await r.service.app.inject({ method: 'GET', url })).headers['content-security-policy']);

describe('Content-Security-Policy upgrade-insecure-requests follows the scheme of RUNNER_URL', () => {
  test('https: sent on the API and on the docs pages; http: sent nowhere', async () => {
    const secure = await startRunner({ env: { RUNNER_URL: 'https://runner.example' } });
    const plain = await startRunner({ env: { RUNNER_URL: 'http://runner.example:8090' } });
    try {
      for (const url of ['/healthz', '/api/docs', '/api/docs/static/index.html', '/api/docs/json']) {
        assert.match(await cspOf(secure, url), /upgrade-insecure-requests/, url);
        const csp = await cspOf(plain, url);
        assert.doesNotMatch(csp, /upgrade-insecure-requests/, url);
        assert.match(csp, /default-src 'self'/, `${url}: the rest of the policy stays: ${csp}`);
      }
    } finally {
      await secure.close();
      await plain.close();
    }
  });
});

for (const host of ['127.0.0.1', 'pier.test']) {
  describe(`the docs UI renders in Chromium at http://${host}:<port> (RUNNER_URL http://${host}:<port>)`, { skip: needsTool('chromium').skip }, () => {
    let r: TestRunner;
    let base: string;
    let browser: Chromium;

    before(async () => {
      const port = await freePort();
      base = `http://${host}:${port}`;
      r = await startRunner({ env: { RUNNER_URL: base } });
      await r.service.app.listen({ host: '127.0.0.1', port });
      browser = await chromium.launch({
        executablePath: '/usr/bin/chromium',
        // A name that is not localhost, resolved to this machine without touching /etc/hosts.
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--host-resolver-rules=MAP pier.test 127.0.0.1'],
      });
    });
    after(async () => {
      await browser?.close();
      await r.close();
    });

    test('operations of the API are listed', async () => {
      const page = await browser.newPage();
      const failed: string[] = [];
      // Whichever comes first: a rendered operation, or an asset the browser could not load
      // (no wait with a deadline, so a slow machine cannot fail it).
      const assetFailed = new Promise<void>((resolve) =>
        page.on('requestfailed', (req) => {
          failed.push(req.url());
          resolve();
        }),
      );
      await page.goto(`${base}/api/docs`);
      const operation = page.locator('.opblock-summary', { hasText: '/api/projects/{id}/workflows' }).first();
      await Promise.race([operation.waitFor({ state: 'visible', timeout: 0 }), assetFailed]);
      assert.deepEqual(failed, [], 'every asset of the docs page loads');
      assert.ok(await operation.isVisible());
      await page.close();
    });
  });
}

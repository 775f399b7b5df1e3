import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { compileErrors, validate } from '@readme/openapi-parser';
import { chromium } from 'playwright-core';
import pkg from '../../package.json' with { type: 'json' };
import { needsTool } from '../helpers/tools.js';
import { startRunner, type TestRunner } from './helpers.js';

type Operation = {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: unknown[];
  responses: Record<string, { content?: Record<string, unknown> }>;
  'x-pier-access'?: unknown;
};

describe('OpenAPI document', () => {
  let r: TestRunner;
  let doc: { openapi: string; info: { version: string }; paths: Record<string, Record<string, Operation>>; components: { securitySchemes: Record<string, unknown> } };

  before(async () => {
    r = await startRunner();
    const res = await r.service.app.inject({ method: 'GET', url: '/api/docs/json' });
    assert.equal(res.statusCode, 200);
    doc = res.json();
  });
  after(() => r.close());

  test('validates with an independent OpenAPI validator', async () => {
    const result = await validate(structuredClone(doc) as never);
    assert.ok(result.valid, result.valid ? '' : compileErrors(result));
  });

  test('is OpenAPI 3.1 with the deployed version and the four schemes', () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.version, pkg.version);
    assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['adminApiKey', 'jwt', 'oauthAccessToken', 'personalAccessToken']);
  });

  test('every operation has an id, summary, tags, access and problem responses', () => {
    const ids = new Set<string>();
    let count = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        count++;
        const where = `${method} ${path}`;
        assert.ok(op.operationId && !ids.has(op.operationId), `${where}: unique operationId`);
        ids.add(op.operationId);
        assert.ok(op.summary, `${where}: summary`);
        assert.ok(op.tags?.length, `${where}: tags`);
        assert.ok(op['x-pier-access'], `${where}: x-pier-access`);
        assert.ok(Array.isArray(op.security), `${where}: security`);
        const statuses = Object.keys(op.responses);
        assert.ok(statuses.some((s) => s.startsWith('2')), `${where}: a success response`);
        if ((op.security as unknown[]).length > 0) {
          for (const s of ['401', '403', '429']) {
            assert.ok(op.responses[s]?.content?.['application/problem+json'], `${where}: ${s} problem+json`);
          }
        }
      }
    }
    assert.ok(count >= 45, `expected all operations, got ${count}`);
  });

  test('multipart uploads document their file part', () => {
    const op = doc.paths['/api/projects/{id}/workflows']?.post as unknown as {
      requestBody: { content: Record<string, { schema: { properties: Record<string, { format?: string }> } }> };
    };
    assert.equal(op.requestBody.content['multipart/form-data']?.schema.properties.file?.format, 'binary');
  });
});

describe('docs page', () => {
  let r: TestRunner;
  let base: string;
  before(async () => {
    r = await startRunner();
    base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(() => r.close());

  test('renders in headless Chromium without network', needsTool('chromium'), async () => {
    const browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    const external: string[] = [];
    const failed: string[] = [];
    try {
      const page = await browser.newPage();
      await page.route('**/*', (route) => {
        const host = new URL(route.request().url()).hostname;
        if (host === '127.0.0.1' || host === 'localhost') return route.continue();
        external.push(route.request().url());
        return route.abort();
      });
      page.on('requestfailed', (req) => failed.push(req.url()));
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto(`${base}/api/docs`, { waitUntil: 'load' });
      await page.getByText('Pier workflow runner API').first().waitFor({ timeout: 15_000 });
      for (const summary of ['Create a personal access token', 'Claim the next queued run', 'Upload a workflow']) {
        await page.getByText(summary, { exact: true }).first().waitFor({ timeout: 5_000 });
      }
      const text = (await page.locator('#swagger-ui').textContent()) ?? '';
      assert.match(text, /\/api\/tokens/);
      assert.match(text, new RegExp(pkg.version.replace(/\./g, '\\.')));
      assert.deepEqual(external, [], 'no request leaves the machine');
      assert.deepEqual(failed, []);
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
    }
  });
});

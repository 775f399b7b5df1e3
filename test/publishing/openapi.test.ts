// The publishing REST API's OpenAPI document and docs page: the document is valid,
// lists every /api/ route the app registered with every status it answers (checked by asking each
// route the questions that produce them), answers keep every field the services return, the
// docs page renders in Chromium under the pages' own Content-Security-Policy, and a route that
// does not document itself stops start-up.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { compileErrors, validate } from '@readme/openapi-parser';
import { Type } from 'typebox';
import pkg from '../../package.json' with { type: 'json' };
import { createHttpApp, registeredRoutes } from '../../src/infra/http.js';
import { isDocumentedApiRoute } from '../../src/infra/openapi.js';
import { crawlsRepository } from '../../src/publishing/crawler/repository.js';
import { openPublishingDatabase } from '../../src/publishing/db.js';
import { problems, registerPublishingOpenApi, undocumented, VENDOR_SECURITY } from '../../src/publishing/openapi.js';
import { PAGE_CSP } from '../../src/publishing/web/routes.js';
import { dialects } from '../helpers/db.js';
import { type RunningPublishing, startPublishing } from '../helpers/publishing.js';
import { needsTool } from '../helpers/tools.js';
import { launchChromium } from './web/browser.js';

type Operation = {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: { in: string; name: string }[];
  requestBody?: { content: Record<string, unknown> };
  responses: Record<string, { content?: Record<string, unknown>; headers?: Record<string, unknown> }>;
};
type Doc = {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, { type: string; scheme?: string; bearerFormat?: string }> };
};

/** `/api/products/:id` as the document names it. */
const openApiPath = (url: string) => url.replace(/:(\w+)/g, '{$1}');
const methodsOf = (method: string | string[]) => [method].flat().map((m) => m.toLowerCase());

async function documentOf(web: RunningPublishing): Promise<Doc> {
  const res = await fetch(`${web.url}/api/docs/json`);
  assert.equal(res.status, 200);
  return (await res.json()) as Doc;
}

describe('the publishing OpenAPI document', () => {
  let db: { url: string; drop(): Promise<void> };
  let web: RunningPublishing;
  let doc: Doc;
  before(async () => {
    db = await dialects()[0]!.create();
    web = await startPublishing(db.url, {}, { PIER_CRAWL_SETTLE_SECONDS: '0' });
    doc = await documentOf(web);
  });
  after(async () => {
    await web?.close();
    await db?.drop();
  });

  test('validates with an independent OpenAPI validator', async () => {
    const result = await validate(structuredClone(doc) as never);
    assert.ok(result.valid, result.valid ? '' : compileErrors(result));
  });

  test('is OpenAPI 3.1 of this version, with the edit token and the trusted-publishing credential as bearer schemes', () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.title, 'Pier publishing API');
    assert.equal(doc.info.version, pkg.version);
    const schemes = doc.components.securitySchemes;
    assert.deepEqual(Object.keys(schemes).sort(), ['editToken', 'trustedPublishing']);
    assert.deepEqual([schemes.editToken?.type, schemes.editToken?.scheme, schemes.editToken?.bearerFormat], ['http', 'bearer', 'pier_et_…']);
    assert.deepEqual([schemes.trustedPublishing?.type, schemes.trustedPublishing?.scheme, schemes.trustedPublishing?.bearerFormat], ['http', 'bearer', 'pier_tp_…']);
  });

  test('every /api/ route the app registered is in it, fully described; nothing else is', () => {
    const routes = registeredRoutes(web.service.app).filter(isDocumentedApiRoute);
    const expected = new Set<string>();
    const ids = new Set<string>();
    for (const route of routes) {
      for (const method of methodsOf(route.method)) {
        const where = `${method.toUpperCase()} ${route.url}`;
        expected.add(`${method} ${openApiPath(route.url)}`);
        const op = doc.paths[openApiPath(route.url)]?.[method];
        assert.ok(op, `${where} is in the document`);
        assert.ok(op.operationId && !ids.has(op.operationId), `${where}: a unique operationId`);
        ids.add(op.operationId);
        assert.ok(op.summary, `${where}: summary`);
        assert.ok(op.tags?.length, `${where}: tags`);
        assert.ok(Array.isArray(op.security), `${where}: security (empty when public)`);
        for (const name of route.url.match(/:(\w+)/g) ?? []) {
          assert.ok(op.parameters?.some((p) => p.in === 'path' && p.name === name.slice(1)), `${where}: path parameter ${name}`);
        }
        if (['put', 'patch'].includes(method) || (route.schema as { body?: unknown } | undefined)?.body) {
          assert.ok(op.requestBody?.content['application/json'], `${where}: a JSON body`);
        }
        const statuses = Object.keys(op.responses);
        assert.ok(statuses.some((s) => s.startsWith('2')), `${where}: a success response`);
        for (const s of statuses.filter((x) => Number(x) >= 400)) {
          assert.ok(op.responses[s]?.content?.['application/problem+json'], `${where}: ${s} is problem+json`);
        }
        if (op.security.length > 0) {
          // The product's routes take either credential (contracts: pier_tp_ works as the edit token).
          assert.deepEqual(op.security, VENDOR_SECURITY, `${where}: edit token or trusted-publishing credential`);
          for (const s of ['401', '429']) assert.ok(op.responses[s], `${where}: ${s}`);
          assert.ok(op.responses['401']?.headers?.['WWW-Authenticate'], `${where}: 401 documents its challenge`);
        }
      }
    }
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`));
    assert.deepEqual(documented.sort(), [...expected].sort(), 'the document lists exactly the registered /api/ routes');
    for (const op of ['get /api/products/{id}', 'patch /api/products/{id}', 'get /api/products/{id}/crawl']) {
      assert.ok(expected.has(op), op);
    }
  });

  test('the PATCH body is the product patch schema, with the dry run in the query', () => {
    const op = doc.paths['/api/products/{id}']?.patch;
    const body = op?.requestBody?.content['application/json'] as { schema: { properties: Record<string, unknown>; additionalProperties: boolean } };
    assert.deepEqual(Object.keys(body.schema.properties).sort(), ['changelog', 'contact', 'description', 'faq', 'icon', 'iconBase64', 'instructions', 'labels', 'license', 'name', 'style', 'text']);
    assert.equal(body.schema.additionalProperties, false);
    assert.ok(op?.parameters?.some((p) => p.in === 'query' && p.name === 'dryRun'));
    assert.deepEqual(Object.keys(op?.responses ?? {}).sort(), ['200', '400', '401', '404', '413', '415', '429', '503']);
  });
});

/** Path parameters of the probes: a product that exists and a label of it. */
const PRODUCT = 'acme';
const VALID: Record<string, string> = { id: PRODUCT, label: 'stable', release: '1' };

for (const target of dialects()) {
  describe(`every status a publishing /api/ route answers is in its documented responses on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let web: RunningPublishing;
    let doc: Doc;
    let token: string;
    /** "PATCH /api/products/{id}" → statuses seen, and the answers that were not documented. */
    const seen = new Map<string, Set<number>>();
    const undocumentedAnswers: string[] = [];

    before(async () => {
      db = await target.create();
      web = await startPublishing(db.url, {}, { PIER_CRAWL_SETTLE_SECONDS: '0' });
      token = (await web.service.products.register(PRODUCT, { name: 'Acme' })).editToken;
      doc = await documentOf(web);
    });
    after(async () => {
      await web?.close();
      await db?.drop();
    });

    const op = (method: string, url: string) => doc.paths[openApiPath(url)]?.[method.toLowerCase()];

    async function probe(
      method: string,
      url: string,
      init: { params?: Record<string, string>; authorization?: string | null; contentType?: string; body?: string; query?: string } = {},
    ): Promise<void> {
      const params = { ...VALID, ...init.params };
      const path = url.replace(/:(\w+)/g, (_m, name: string) => encodeURIComponent(params[name] ?? 'a'));
      const headers: Record<string, string> = {};
      const authorization = init.authorization === undefined ? `Bearer ${token}` : init.authorization;
      if (authorization !== null) headers.authorization = authorization;
      // A body only where the route takes one (a POST may be an action without).
      const hasBody = op(method, url)?.requestBody !== undefined;
      if (hasBody) headers['content-type'] = init.contentType ?? 'application/json';
      const res = await fetch(`${web.url}${path}${init.query ?? ''}`, { method, headers, body: hasBody ? (init.body ?? '{}') : undefined });
      const text = await res.text();
      const name = `${method} ${openApiPath(url)}`;
      const documented = op(method, url)?.responses[String(res.status)];
      const type = (res.headers.get('content-type') ?? '').split(';')[0]!;
      if (!documented) undocumentedAnswers.push(`${name} answered ${res.status}, not documented: ${text.slice(0, 200)}`);
      else if (documented.content && !documented.content[type]) undocumentedAnswers.push(`${name} answered ${res.status} as ${type}, documented as ${Object.keys(documented.content)}`);
      seen.set(name, (seen.get(name) ?? new Set()).add(res.status));
    }

    test('asked every question that yields an answer of its own, each route answers only documented statuses', async () => {
      const routes = registeredRoutes(web.service.app).filter(isDocumentedApiRoute);
      const calls = routes.flatMap((r) => [r.method].flat().map((m) => ({ method: String(m), url: r.url })));
      // First with the right credential (no failed attempt counts against this address yet).
      for (const { method, url } of calls) {
        await probe(method, url);
        await probe(method, url, { query: '?x=%00' });
        if (url.includes(':id')) await probe(method, url, { params: { id: 'no-such-product' } });
        if (url.includes(':label')) await probe(method, url, { params: { label: '..' } });
        if (op(method, url)?.requestBody) {
          await probe(method, url, { contentType: 'text/plain' });
          await probe(method, url, { body: '{"name": ' });
          await probe(method, url, { body: JSON.stringify({ name: 'x'.repeat(3 * 1024 * 1024) }) });
          await probe(method, url, { body: JSON.stringify({ unknownField: 1 }) });
        }
      }
      // Then without and with a wrong credential, until the address is refused for a while.
      for (let round = 0; round < 4; round++) {
        for (const { method, url } of calls) {
          await probe(method, url, { authorization: null });
          await probe(method, url, { authorization: 'Bearer pier_et_not-the-token' });
        }
      }
      assert.deepEqual(undocumentedAnswers, []);
      // The probes reached every answer of the product routes (so the check above could fail).
      const statuses = (name: string) => [...(seen.get(name) ?? [])].sort();
      assert.deepEqual(statuses('GET /api/products/{id}'), [200, 400, 401, 404, 429]);
      assert.deepEqual(statuses('GET /api/products/{id}/crawl'), [200, 400, 401, 404, 429]);
      assert.deepEqual(statuses('PATCH /api/products/{id}'), [200, 400, 401, 404, 413, 415, 429]);
    });
  });

  describe(`answers keep every field the services return on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let web: RunningPublishing;
    let token: string;
    before(async () => {
      db = await target.create();
      web = await startPublishing(db.url, {}, { PIER_CRAWL_SETTLE_SECONDS: '0' });
      token = (await web.service.products.register(PRODUCT, { name: 'Acme' })).editToken;
    });
    after(async () => {
      await web?.close();
      await db?.drop();
    });

    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${web.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    };

    test('GET and PATCH of a product with every field set answer the whole product view', async () => {
      const all = {
        name: 'Acme Nodes',
        description: 'Tagline',
        text: '# Text\n\n{{platformRelease}} and {{ unknown }}',
        changelog: '# Changelog\n\n## [1.0.0] - 2024-01-01\n### Added\n- First\n',
        license: 'MIT',
        faq: '## Q?\n\nA.',
        contact: { name: 'Ada', email: 'ada@example.com' },
        style: { color1: '#123456', color2: '#abc', backgroundImageUrl: 'https://example.com/bg.png', badgeColor: '#ff0000' },
        instructions: 'Restart.',
        icon: '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"><rect width="1" height="1"/></svg>',
      };
      const dry = await call('PATCH', `/api/products/${PRODUCT}?dryRun=true`, all);
      assert.equal(dry.status, 200, JSON.stringify(dry.json));
      assert.equal(dry.json.dryRun, true);
      const patched = await call('PATCH', `/api/products/${PRODUCT}`, all);
      assert.equal(patched.status, 200, JSON.stringify(patched.json));
      const view = await web.service.products.show(PRODUCT);
      // The service's own answer, whole: a property the response schema lacked would be missing.
      const { warnings, changedFields, ...product } = patched.json;
      assert.deepEqual(product, view);
      // Setting the SVG icon clears iconBase64: listed as changed too.
      assert.deepEqual((changedFields as string[]).sort(), [...Object.keys(all), 'iconBase64'].sort());
      assert.ok((warnings as { field: string; message: string }[]).some((w) => w.field === 'text'), JSON.stringify(warnings));
      assert.deepEqual(Object.keys(view.fields).sort(), Object.keys(all).sort());
      const read = await call('GET', `/api/products/${PRODUCT}`);
      // GET also lists the crawled labels with their platform ranges (none crawled here).
      assert.deepEqual(read.json, { ...view, warnings: [], labels: [] });
      // A raster icon replaces the SVG one: iconBase64 is answered too.
      const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
      const raster = await call('PATCH', `/api/products/${PRODUCT}`, { iconBase64: png });
      assert.equal((raster.json.fields as Record<string, unknown>).iconBase64, png);
      assert.deepEqual((await call('GET', `/api/products/${PRODUCT}`)).json.fields, (await web.service.products.show(PRODUCT)).fields);
    });

    test('the crawl report answers every field of each label’s crawl, running and finished, problems with lines', async () => {
      const database = await openPublishingDatabase(db.url);
      try {
        const crawls = crawlsRepository(database.db, database.dialect);
        const summary = { units: 9, features: 2, bundles: 4, categories: 1, nodes: 4, nodeSets: 1, problems: 2, fatal: false };
        const problemsFound = [
          { severity: 'error', code: 'checksum_mismatch', message: 'sha256 differs', where: 'https://dl.example/acme/5.4/plugins/a.jar' },
          { severity: 'warning', code: 'xml_error', message: 'bad tag', where: 'org.example!plugin.xml', line: 12 },
        ];
        await crawls.finish(
          {
            product_id: PRODUCT,
            label: '5.4',
            status: 'finished',
            url: 'https://dl.example/acme/5.4/',
            started_at: '2026-01-01T00:00:00.000Z',
            finished_at: '2026-01-01T00:00:05.000Z',
            files_seq: 0,
            summary: JSON.stringify(summary),
            problems: JSON.stringify(problemsFound),
            units: '[]',
          },
          null,
        );
        await crawls.start({ product_id: PRODUCT, label: 'nightly', url: 'https://dl.example/acme/nightly/', started_at: '2026-01-02T00:00:00.000Z', files_seq: 0 });
      } finally {
        await database.close();
      }
      const res = await call('GET', `/api/products/${PRODUCT}/crawl`);
      assert.equal(res.status, 200);
      const expected = { productId: PRODUCT, state: 'hidden', labels: await web.service.crawler.report(PRODUCT) };
      assert.deepEqual(res.json, JSON.parse(JSON.stringify(expected)));
      const labels = res.json.labels as { label: string; summary: unknown; problems: unknown[]; finishedAt: unknown }[];
      assert.deepEqual(labels.map((l) => l.label).sort(), ['5.4', 'nightly']);
      const finished = labels.find((l) => l.label === '5.4')!;
      assert.deepEqual(finished.summary, { units: 9, features: 2, bundles: 4, categories: 1, nodes: 4, nodeSets: 1, problems: 2, fatal: false });
      assert.equal(finished.problems.length, 2);
      assert.equal((finished.problems[1] as { line?: number }).line, 12);
      const running = labels.find((l) => l.label === 'nightly')!;
      assert.equal(running.summary, null);
      assert.equal(running.finishedAt, null);
    });
  });
}

describe('a publishing /api/ route that does not document itself stops start-up', () => {
  const app = () => createHttpApp({ logLevel: 'silent' });
  const documented = {
    tags: ['products'],
    summary: 'Something',
    operationId: 'something',
    security: VENDOR_SECURITY,
    params: Type.Object({ id: Type.String() }),
    response: { 200: Type.Object({ ok: Type.Boolean() }), ...problems(400, 401, 404, 429) },
  };

  test('a route without a response schema: the error names the route and the missing key', async () => {
    const a = app();
    await registerPublishingOpenApi(a, { baseUrl: 'http://pier.test', pagePolicy: PAGE_CSP });
    const { response: _none, ...withoutResponse } = documented;
    assert.throws(
      () => a.get('/api/products/:id/things', { schema: withoutResponse }, async () => ({ ok: true })),
      /publishing API route GET \/api\/products\/:id\/things is not documented: it lacks schema\.response\b/,
    );
    await a.close();
  });

  test('a fully documented route starts; a page outside /api/ needs nothing', async () => {
    const a = app();
    await registerPublishingOpenApi(a, { baseUrl: 'http://pier.test', pagePolicy: PAGE_CSP });
    a.get('/api/products/:id/things', { schema: documented }, async () => ({ ok: true }));
    a.get('/product/:id/things', async () => 'page');
    await a.ready();
    await a.close();
  });

  test('each missing key and status is named', () => {
    const route = (url: string, method: string, schema: Record<string, unknown>) => undocumented({ url, method, schema });
    assert.deepEqual(route('/api/products/:id/things', 'GET', documented), []);
    for (const key of ['tags', 'summary', 'operationId', 'security', 'response', 'params'] as const) {
      const { [key]: _dropped, ...rest } = documented;
      assert.ok(route('/api/products/:id/things', 'GET', rest).includes(`schema.${key}`), key);
    }
    // A vendor route must document the refusals of its credential and of the failure limiter.
    for (const status of [400, 401, 404, 429]) {
      const response: Record<number, unknown> = { ...documented.response };
      delete response[status];
      assert.deepEqual(route('/api/products/:id/things', 'GET', { ...documented, response }), [`schema.response[${status}]`]);
    }
    // PUT and PATCH take a body; a body comes with the body limit's and the JSON-only parser's answers.
    assert.deepEqual(route('/api/products/:id/things', 'PATCH', documented), ['schema.body']);
    assert.deepEqual(route('/api/products/:id/things', 'PUT', documented), ['schema.body']);
    const body = Type.Object({ n: Type.Integer() });
    assert.deepEqual(route('/api/products/:id/things', 'POST', { ...documented, body }), ['schema.response[413]', 'schema.response[415]']);
    // A POST without a body (an action) needs none of them.
    assert.deepEqual(route('/api/products/:id/things', 'POST', documented), []);
    // A public route without parameters needs only its success and 400.
    assert.deepEqual(route('/api/thing', 'GET', { ...documented, security: [], params: undefined, response: { 200: documented.response[200] } }), ['schema.response[400]']);
    assert.deepEqual(route('/api/thing', 'GET', { ...documented, security: [], response: { ...problems(400) } }), ['schema.response[2xx]']);
    // An error documented as plain JSON: errors are problem+json.
    assert.deepEqual(route('/api/thing', 'GET', { ...documented, security: [], params: undefined, response: { 200: documented.response[200], 400: Type.Object({ code: Type.String() }) } }), [
      "schema.response[400].content['application/problem+json']",
    ]);
  });
});

describe('the docs page', { skip: needsTool('chromium').skip }, () => {
  let db: { url: string; drop(): Promise<void> };
  let web: RunningPublishing;
  before(async () => {
    db = await dialects()[0]!.create();
    web = await startPublishing(db.url, {}, { PIER_CRAWL_SETTLE_SECONDS: '0' });
  });
  after(async () => {
    await web?.close();
    await db?.drop();
  });

  test('is served under the catalog pages’ Content-Security-Policy, which only may fetch from itself too', async () => {
    const catalog = (await fetch(`${web.url}/`)).headers.get('content-security-policy');
    assert.ok(catalog?.includes("default-src 'none'"), String(catalog));
    for (const path of ['/api/docs', '/api/docs/static/index.html', '/api/docs/static/swagger-ui-bundle.js', '/api/docs/json']) {
      const res = await fetch(`${web.url}${path}`);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get('content-security-policy'), `${catalog}; connect-src 'self'`, path);
      await res.arrayBuffer();
    }
  });

  test('renders in headless Chromium with no CSP violation, failed or outside request; the PATCH operation is shown', async () => {
    const browser = await launchChromium();
    const external: string[] = [];
    const failed: string[] = [];
    const errors: string[] = [];
    try {
      const page = await browser.newPage();
      await page.addInitScript(() => {
        const w = window as unknown as { cspViolations: string[] };
        w.cspViolations = [];
        document.addEventListener('securitypolicyviolation', (e) => w.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
      });
      await page.route('**/*', (route) => {
        const url = new URL(route.request().url());
        if (url.origin === new URL(web.url).origin) return route.continue();
        external.push(url.href);
        return route.abort();
      });
      page.on('requestfailed', (req) => failed.push(`${req.url()} ${req.failure()?.errorText}`));
      page.on('response', (res) => {
        if (res.status() >= 400) failed.push(`${res.url()} ${res.status()}`);
      });
      page.on('pageerror', (e) => errors.push(String(e)));
      page.on('console', (m) => {
        if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) errors.push(m.text());
      });
      await page.goto(`${web.url}/api/docs`, { waitUntil: 'load' });
      await page.getByText('Pier publishing API').first().waitFor({ timeout: 20_000 });
      const patch = page.locator('.opblock-patch', { hasText: '/api/products/{id}' }).first();
      await patch.waitFor({ timeout: 10_000 });
      await patch.locator('.opblock-summary').first().click();
      await patch.getByText('Change page fields').first().waitFor({ timeout: 5_000 });
      await patch.locator('.response', { hasText: '415' }).first().waitFor({ timeout: 5_000 });
      const text = (await page.locator('#swagger-ui').textContent()) ?? '';
      for (const summary of ['Read the product and its page fields', 'Read the integrity report of the uploaded update sites']) {
        assert.ok(text.includes(summary), summary);
      }
      assert.match(text, new RegExp(pkg.version.replace(/\./g, '\\.')));
      const violations = await page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations);
      assert.deepEqual(violations, [], 'no Content-Security-Policy violation');
      assert.deepEqual(external, [], 'no request leaves the machine');
      assert.deepEqual(failed, []);
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
    }
  });

  test('the catalog footer links the API docs', async () => {
    const html = await (await fetch(`${web.url}/`)).text();
    assert.match(html, /<footer[\s\S]*href="\/api\/docs"[\s\S]*<\/footer>/);
  });
});

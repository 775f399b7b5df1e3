// One rule for every route of the publishing web app: a NUL (%00) in any path parameter or query
// field is a clear 4xx problem, never a 500 — on PostgreSQL `text` cannot hold NUL, so a value
// reaching a statement failed it (invalid byte sequence 0x00). The walk takes the app's own
// route list, so a route added later is covered without editing this test.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { registeredRoutes } from '../../../src/infra/http.js';
import { dialects } from '../../helpers/db.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';

/** A valid value for each path parameter: the walk puts NUL into one at a time. */
const VALID: Record<string, string> = { id: 'gamma', factory: 'org.example.GammaNodeFactory' };

for (const target of dialects()) {
  describe(`NUL in path parameters and query fields of every publishing route on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let web: RunningPublishing;
    let token: string;
    before(async () => {
      db = await target.create();
      web = await startPublishing(db.url, {}, { PIER_CRAWL_SETTLE_SECONDS: '0' });
      token = (await web.service.products.register('gamma', { name: 'Gamma' })).editToken;
    });
    after(async () => {
      await web?.close();
      await db?.drop();
    });

    async function call(method: string, path: string): Promise<{ status: number; type: string; body: string }> {
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      let body: string | undefined;
      if (method === 'PATCH' || method === 'POST' || method === 'PUT') {
        headers['content-type'] = 'application/json';
        body = '{}';
      }
      const res = await fetch(`${web.url}${path}`, { method, headers, body });
      return { status: res.status, type: res.headers.get('content-type') ?? '', body: method === 'HEAD' ? '' : await res.text() };
    }

    function assertRefused(r: { status: number; type: string; body: string }, what: string) {
      assert.ok(r.status === 400 || r.status === 404, `${what}: ${r.status} ${r.body.slice(0, 200)}`);
      if (r.status === 400) {
        assert.match(r.type, /^application\/problem\+json/, what);
        if (r.body) assert.match(JSON.parse(r.body).detail, /must not contain the NUL character/, what);
      }
    }

    test('the route list is the app’s own and holds the routes the review named', () => {
      const urls = new Set(registeredRoutes(web.service.app).map((r) => r.url));
      for (const u of ['/product/:id', '/product/:id/badge.svg', '/product/:id/icon', '/product/:id/releases.atom', '/product/:id/nodes/:factory', '/product/:id/nodes/:factory/icon', '/api/products/:id', '/api/products/:id/crawl']) {
        assert.ok(urls.has(u), u);
      }
    });

    test('a NUL in each path parameter (alone, and after a valid value) is 400 or 404, never 5xx', async () => {
      let checked = 0;
      for (const route of registeredRoutes(web.service.app)) {
        const params = route.url.split('/').filter((s) => s.startsWith(':')).map((s) => s.slice(1));
        for (const method of [route.method].flat()) {
          for (const p of params) {
            for (const bad of ['%00', `${VALID[p] ?? 'a'}%00`, `a%00b`]) {
              const path = route.url.replace(/:(\w+)/g, (_m, name: string) => (name === p ? bad : encodeURIComponent(VALID[name] ?? 'a')));
              assertRefused(await call(method, path), `${method} ${path}`);
              checked++;
            }
          }
        }
      }
      assert.ok(checked >= 40, `${checked} requests`);
    });

    test('a NUL in each query field (those of the schema and any other) is 400, never 5xx', async () => {
      let checked = 0;
      for (const route of registeredRoutes(web.service.app)) {
        const schema = route.schema as { querystring?: { properties?: Record<string, unknown> } } | undefined;
        const fields = [...Object.keys(schema?.querystring?.properties ?? {}), 'x'];
        const path = route.url.replace(/:(\w+)/g, (_m, name: string) => encodeURIComponent(VALID[name] ?? 'a'));
        if (path.includes('*')) continue;
        for (const method of [route.method].flat()) {
          for (const f of fields) {
            const r = await call(method, `${path}?${f}=a%00`);
            assert.equal(r.status, 400, `${method} ${path}?${f}=a%00: ${r.status} ${r.body.slice(0, 200)}`);
            if (method !== 'HEAD') assert.match(r.type, /^application\/problem\+json/);
            checked++;
          }
        }
      }
      assert.ok(checked >= 20, `${checked} requests`);
    });

    test('the examples of the review, and the product still answers without NUL', async () => {
      for (const [method, path] of [
        ['GET', '/product/a%00'],
        ['GET', '/product/a%00/badge.svg'],
        ['GET', '/product/a%00/icon'],
        ['GET', '/product/a%00/releases.atom'],
        ['GET', '/product/gamma/nodes/%00'],
        ['GET', '/product/gamma/nodes/x%00/icon'],
        ['GET', '/api/products/a%00'],
        ['GET', '/api/products/a%00/crawl'],
        ['GET', '/api/products/gamma%00'],
        ['PATCH', '/api/products/gamma%00'],
      ] as const) {
        const r = await call(method, path);
        assert.equal(r.status, 400, `${method} ${path}: ${r.status} ${r.body.slice(0, 200)}`);
        assert.equal(JSON.parse(r.body).code, 'invalid_field');
      }
      assert.equal((await call('GET', '/api/products/gamma')).status, 200);
      assert.equal((await call('GET', '/product/gamma')).status, 200);
    });
  });
}

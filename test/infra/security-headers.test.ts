import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import helmet, { type HelmetOptions } from 'helmet';
import { UnauthorizedError } from '../../src/infra/errors.js';
import { createHttpApp } from '../../src/infra/http.js';

/** What helmet itself sets on a real response for `options` (its middleware, run per request). */
async function helmetOwnHeaders(options: HelmetOptions): Promise<Record<string, unknown>> {
  const server = http.createServer((req, res) => {
    res.setHeader('x-powered-by', 'someone');
    helmet(options)(req, res, () => res.end(JSON.stringify(res.getHeaders())));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    return JSON.parse(await res.text());
  } finally {
    server.close();
  }
}

const appOptions: { name: string; http: Record<string, unknown>; helmet: HelmetOptions }[] = [
  { name: 'default policy', http: {}, helmet: { contentSecurityPolicy: { useDefaults: true as const, directives: { upgradeInsecureRequests: null } } } },
  {
    name: 'added directives over https',
    http: { contentSecurityPolicy: { 'img-src': ["'self'", 'data:'] }, publicUrl: 'https://pier.example' },
    helmet: { contentSecurityPolicy: { useDefaults: true as const, directives: { 'img-src': ["'self'", 'data:'], upgradeInsecureRequests: [] } } },
  },
  { name: 'no policy', http: { contentSecurityPolicy: false as const }, helmet: { contentSecurityPolicy: false as const } },
];

for (const o of appOptions) {
  test(`security headers (${o.name}) are helmet's own, on answers, 404s and errors raised before any route`, async () => {
    const expected = await helmetOwnHeaders({ ...o.helmet, crossOriginResourcePolicy: { policy: 'same-site' } });
    assert.ok(Object.keys(expected).length >= 10, JSON.stringify(expected));
    assert.equal(expected['x-powered-by'], undefined);
    const app = createHttpApp({ logLevel: 'silent', ...o.http });
    app.addHook('onRequest', async (req) => {
      if (req.headers['x-refuse']) throw new UnauthorizedError('refused here', 'Bearer');
    });
    app.get('/ok', async () => ({ ok: true }));
    await app.ready();
    try {
      for (const [url, headers, status] of [
        ['/ok', {}, 200],
        ['/nowhere', {}, 404],
        ['/ok', { 'x-refuse': '1' }, 401],
      ] as const) {
        const res = await app.inject({ url, headers });
        assert.equal(res.statusCode, status);
        for (const [name, value] of Object.entries(expected)) {
          if (name === 'content-length' || name === 'content-type') continue;
          assert.equal(res.headers[name], value, `${url} ${name}`);
        }
      }
    } finally {
      await app.close();
    }
  });
}

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { bearer, startRunner, type TestRunner, SETUP_TOKEN, UNPACED } from './helpers.js';

describe('random JSON bodies never cause a 5xx', () => {
  let r: TestRunner;
  let session: string;
  before(async () => {
    r = await startRunner({ env: UNPACED });
    const res = await r.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'a@example.com', password: 'a long enough password' } });
    session = res.json().session.token;
  });
  after(() => r.close());

  // Bodies shaped like the real ones half of the time, so validation paths deep inside run too.
  const tokenLike = fc.record(
    { name: fc.oneof(fc.string(), fc.constant('ci'), fc.integer()), scope: fc.oneof(fc.constantFrom('read', 'write', 'admin'), fc.anything()), expiresAt: fc.oneof(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), fc.string(), fc.constant(null)) },
    { requiredKeys: [] },
  );
  const meLike = fc.record({ name: fc.oneof(fc.string(), fc.anything()), email: fc.oneof(fc.emailAddress(), fc.string()) }, { requiredKeys: [] });

  for (const [method, url, shaped] of [
    ['POST', '/api/tokens', tokenLike],
    ['PATCH', '/api/me', meLike],
  ] as const) {
    test(`${method} ${url}`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.oneof(fc.jsonValue(), shaped as fc.Arbitrary<unknown>, fc.object()), async (body) => {
          const res = await r.service.app.inject({
            method,
            url,
            headers: { ...bearer(session), 'content-type': 'application/json' },
            payload: JSON.stringify(body) ?? 'null',
          });
          assert.ok(res.statusCode < 500, `${res.statusCode} for ${JSON.stringify(body)}: ${res.body}`);
          assert.ok([200, 201, 400, 409].includes(res.statusCode), `${res.statusCode} for ${JSON.stringify(body)}`);
          if (res.statusCode >= 400) assert.match(String(res.headers['content-type']), /problem\+json/);
        }),
        { numRuns: 300 },
      );
    });
  }
});

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { dialects } from '../helpers/db.js';
import { API_KEY, apiKey, bearer, makeZip, multipart, startRunner, type TestRunner } from './helpers.js';

/**
 * Every route that takes a JSON body or a query string, fuzzed from its own OpenAPI schema with
 * extreme values mixed in (3e9, 1e20, 2^31, 9999999999…), on SQLite and PostgreSQL: whatever a
 * client sends gets a 2xx or a 4xx problem, never a 5xx (PostgreSQL's int4 overflows used to).
 */

type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  additionalProperties?: Schema | boolean;
  maxItems?: number;
};

const EXTREME_NUMBERS = [0, -1, 1, 2 ** 31 - 1, 2 ** 31, 3e9, -3e9, 9_999_999_999, 1e20, 2 ** 53 - 1, 2 ** 63, 1.5];
const EXTREME_STRINGS = ['0', '1', '999999999', '2147483648', '3000000000', '9999999999', '99999999999999999999', '-1', ''];

function arbitraryOf(s: Schema, depth = 0): fc.Arbitrary<unknown> {
  if (s.enum) return fc.oneof(fc.constantFrom(...s.enum), fc.string());
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : ['object'];
  return fc.oneof(...types.map((t) => arbitraryOfType(t, s, depth)));
}

function arbitraryOfType(t: string, s: Schema, depth: number): fc.Arbitrary<unknown> {
  switch (t) {
    case 'integer':
    case 'number':
      return fc.oneof(
        fc.integer({ min: s.minimum ?? -1_000_000, max: Math.min(s.maximum ?? 1_000_000, 2 ** 31) }),
        fc.constantFrom(...EXTREME_NUMBERS),
      );
    case 'string': {
      const shaped: fc.Arbitrary<string>[] = [fc.string(), fc.constantFrom(...EXTREME_STRINGS)];
      if (s.pattern) shaped.push(fc.stringMatching(new RegExp(s.pattern)));
      if (s.format === 'date-time') shaped.push(fc.date({ noInvalidDate: true, min: new Date(0), max: new Date(Date.UTC(9999, 0)) }).map((d) => d.toISOString()));
      if (s.format === 'email') shaped.push(fc.emailAddress());
      return fc.oneof(...shaped);
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return depth > 3 ? fc.constant([]) : fc.array(arbitraryOf(s.items ?? {}, depth + 1), { maxLength: Math.min(s.maxItems ?? 5, 5) });
    default: {
      if (depth > 3) return fc.constant({});
      const props = s.properties ?? {};
      const known = fc.record(Object.fromEntries(Object.entries(props).map(([k, v]) => [k, arbitraryOf(v, depth + 1)])), {
        requiredKeys: (s.required ?? []).filter((k) => k in props),
      });
      const record =
        typeof s.additionalProperties === 'object' ? fc.dictionary(fc.string({ maxLength: 10 }), arbitraryOf(s.additionalProperties, depth + 1), { maxKeys: 3 }) : known;
      return fc.oneof({ weight: 4, arbitrary: record }, { weight: 1, arbitrary: fc.jsonValue() });
    }
  }
}

interface Operation {
  parameters?: { in: string; name: string; schema: Schema }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
}

for (const target of dialects()) {
  describe(`every route with a body or query answers 2xx/4xx for any input (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let session: string;
    const ids: Record<string, string> = {};
    let doc: { paths: Record<string, Record<string, Operation>> };

    before(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url });
      const app = r.service.app;
      const setup = await app.inject({ method: 'POST', url: '/api/setup', payload: { email: 'admin@example.com', password: 'a long enough password' } });
      session = setup.json().session.token;
      const member = await app.inject({ method: 'POST', url: '/api/users', headers: bearer(session), payload: { email: 'm@example.com', password: 'a long enough password' } });
      ids.userId = member.json().id;
      ids.projectId = (await app.inject({ method: 'POST', url: '/api/projects', headers: bearer(session), payload: { name: 'p' } })).json().id;
      const m = multipart([{ name: 'file', file: makeZip() }]);
      const wf = await app.inject({ method: 'POST', url: `/api/projects/${ids.projectId}/workflows`, headers: { ...bearer(session), ...m.headers }, payload: m.payload });
      ids.workflowId = wf.json().id;
      ids.scheduleId = (
        await app.inject({ method: 'POST', url: `/api/workflows/${ids.workflowId}/schedules`, headers: bearer(session), payload: { cron: '0 * * * *' } })
      ).json().id;
      ids.executorId = (await app.inject({ method: 'POST', url: '/api/executors/register', headers: apiKey(API_KEY), payload: { name: 'x' } })).json().id;
      // A finished run (the log stream ends at once) that still has a (now stale) lease history.
      ids.runId = (await app.inject({ method: 'POST', url: `/api/workflows/${ids.workflowId}/runs`, headers: bearer(session), payload: {} })).json().id;
      const claimed = (await app.inject({ method: 'POST', url: `/api/executors/${ids.executorId}/claim?wait=0`, headers: apiKey(API_KEY) })).json();
      await app.inject({ method: 'POST', url: `/api/runs/${ids.runId}/cancel`, headers: bearer(session) });
      // The executor confirms the cancel: the run has ended.
      const confirmed = await app.inject({
        method: 'POST', url: `/api/runs/${ids.runId}/complete`, headers: apiKey(API_KEY),
        payload: { leaseToken: claimed.lease.token, attempt: claimed.lease.attempt, status: 'cancelled' },
      });
      assert.equal(confirmed.json().status, 'cancelled');
      // Draining: fuzzed claims (`?wait=` up to 30 s) answer at once instead of long-polling.
      await app.inject({ method: 'POST', url: `/api/executors/${ids.executorId}/drain`, headers: apiKey(API_KEY) });
      doc = (await app.inject({ method: 'GET', url: '/api/docs/json' })).json();
    });
    after(async () => {
      await r.close();
      await dbh.drop();
    });

    const resolve = (path: string) =>
      path
        .replace('{userId}', ids.userId!)
        .replace('{version}', '1')
        .replace(/\/api\/(\w+)\/\{id\}/, (_m, kind: string) => {
          const id = {
            projects: ids.projectId, workflows: ids.workflowId, runs: ids.runId, executors: ids.executorId, users: ids.userId, schedules: ids.scheduleId, tokens: 'none',
          }[kind];
          return `/api/${kind}/${id}`;
        });

    test('the fuzzed routes are the documented ones with a JSON body or a query', () => {
      const fuzzed = routes().map(([m, p]) => `${m} ${p}`);
      // A floor, so a documentation change cannot silently empty this suite.
      assert.ok(fuzzed.length >= 17, fuzzed.join(', '));
      assert.ok(fuzzed.includes('POST /api/runs/{id}/complete') && fuzzed.includes('GET /api/runs/{id}/logs'));
      assert.ok(fuzzed.includes('POST /api/workflows/{id}/schedules') && fuzzed.includes('PATCH /api/schedules/{id}'));
    });

    function routes(): [string, string, Operation][] {
      return Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.entries(ops)
          .filter(([, op]) => op.requestBody?.content['application/json'] || op.parameters?.some((p) => p.in === 'query'))
          .map(([m, op]) => [m.toUpperCase(), path, op] as [string, string, Operation]),
      );
    }

    test('no 5xx', async () => {
      for (const [method, path, op] of routes()) {
        const body = op.requestBody?.content['application/json']?.schema;
        const query = (op.parameters ?? []).filter((p) => p.in === 'query');
        const queryArb = fc.record(Object.fromEntries(query.map((q) => [q.name, arbitraryOf(q.schema)])), { requiredKeys: [] });
        await fc.assert(
          fc.asyncProperty(body ? arbitraryOf(body) : fc.constant(undefined), queryArb, async (payload, q) => {
            const search = new URLSearchParams(Object.entries(q).map(([k, v]) => [k, String(v)])).toString();
            const res = await r.service.app.inject({
              method: method as 'GET',
              url: `${resolve(path)}${search ? `?${search}` : ''}`,
              headers: { ...bearer(session), ...(body ? { 'content-type': 'application/json' } : {}) },
              ...(body ? { payload: JSON.stringify(payload) ?? 'null' } : {}),
            });
            assert.ok(res.statusCode < 500, `${method} ${path}: ${res.statusCode} for ${JSON.stringify(payload)} ?${search}: ${res.body}`);
          }),
          { numRuns: 40 },
        );
        // A fuzzed re-registration (`POST /api/executors/{id}/register`) ends the draining set
        // up above; draining again keeps fuzzed claims from long-polling up to 30 s each.
        await r.service.app.inject({ method: 'POST', url: `/api/executors/${ids.executorId}/drain`, headers: apiKey(API_KEY) });
      }
    });

    test('the values that overflowed a PostgreSQL int4 get 400', async () => {
      const app = r.service.app;
      const lease = { leaseToken: 'x', attempt: 1 };
      const cases: [string, string, unknown][] = [
        ['POST', `/api/runs/${ids.runId}/logs`, { ...lease, chunks: [{ seq: 3e9, text: 'x' }] }],
        ['POST', `/api/runs/${ids.runId}/logs`, { ...lease, attempt: 3e9, chunks: [{ seq: 1, text: 'x' }] }],
        ['POST', `/api/workflows/${ids.workflowId}/runs`, { version: 3e9 }],
        ['POST', `/api/runs/${ids.runId}/complete`, { ...lease, status: 'failed', exitCode: 3e9 }],
        ['POST', `/api/runs/${ids.runId}/complete`, { ...lease, status: 'succeeded', outputs: [{ name: 'o', size: 1e20 }] }],
        ['GET', `/api/runs/${ids.runId}/logs?after=9999999999`, undefined],
        ['POST', `/api/workflows/${ids.workflowId}/schedules`, { cron: '0 * * * *', workflowVersion: 3e9 }],
        ['PATCH', `/api/schedules/${ids.scheduleId}`, { workflowVersion: 2 ** 31 }],
      ];
      for (const [method, url, payload] of cases) {
        const res = await app.inject({ method: method as 'GET', url, headers: bearer(session), ...(payload ? { payload: payload as object } : {}) });
        assert.equal(res.statusCode, 400, `${method} ${url} ${JSON.stringify(payload)}: ${res.body}`);
        assert.equal(res.json().code, 'invalid_field');
      }
    });

    test('NUL and other control characters in names, labels and path parameters: 4xx, never a 500 (PostgreSQL text refuses NUL)', async () => {
      const app = r.service.app;
      const cases: [string, string, unknown, number[]][] = [
        ['GET', `/api/runs/${ids.runId}/outputs/a%00b`, undefined, [400, 404]],
        ['GET', `/api/runs/${ids.runId}/outputs/a%0Ab`, undefined, [400, 404]],
        ['POST', '/api/executors/register', { name: 'x\u0000' }, [400]],
        ['POST', '/api/executors/register', { name: 'line\nbreak' }, [400]],
        ['POST', '/api/executors/register', { name: 'ok', labels: ['gpu\u0000'] }, [400]],
        ['POST', '/api/executors/register', { name: 'ok', labels: ['has space'] }, [400]],
        ['POST', '/api/projects', { name: 'p\u0000' }, [400]],
      ];
      for (const [method, url, payload, expected] of cases) {
        const res = await app.inject({ method: method as 'GET', url, headers: bearer(session), ...(payload ? { payload: payload as object } : {}) });
        assert.ok(expected.includes(res.statusCode), `${method} ${url} ${JSON.stringify(payload)}: ${res.statusCode} ${res.body}`);
      }
      // Ordinary names and labels still register.
      const ok = await app.inject({ method: 'POST', url: '/api/executors/register', headers: bearer(session), payload: { name: 'büro 1', labels: ['linux', 'gpu.a100'] } });
      assert.equal(ok.statusCode, 201, ok.body);
    });
  });
}

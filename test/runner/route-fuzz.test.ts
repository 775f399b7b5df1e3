import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { dialects } from '../helpers/db.js';
import { API_KEY, apiKey, bearer, makeZip, multipart, startRunner, type TestRunner, SETUP_TOKEN, UNPACED } from './helpers.js';

/**
 * Every route that takes a JSON body or a query string, fuzzed from its own OpenAPI schema with
 * extreme values mixed in (3e9, 1e20, 2^31, 9999999999…) and hostile strings (NUL, lone
 * surrogates, any code point), on SQLite and PostgreSQL: whatever a client sends gets a 2xx or a
 * 4xx problem, never a 5xx (PostgreSQL's int4 overflows and its refusal of NUL in text used to).
 * Then every string field of every documented route (path, query, JSON body, multipart) gets a
 * NUL on its own and must be refused naming that field.
 */

type Schema = {
  type?: string | string[];
  anyOf?: Schema[];
  description?: string;
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
/** PostgreSQL text refuses NUL; lone surrogates are not UTF-8; the rest probe escaping and parsing. */
const HOSTILE_STRINGS = ['\u0000', 'a\u0000b', 'x\u0000', '\uD800', 'a\uDFFFb', '\uFFFF', '\u202Eevil', '%00', '\\u0000', "' OR 1=1 --", '../../etc/passwd', '\r\nX-Injected: 1'];

function arbitraryOf(s: Schema, depth = 0): fc.Arbitrary<unknown> {
  if (s.enum) return fc.oneof(fc.constantFrom(...s.enum), fc.string());
  if (s.anyOf) return fc.oneof(...s.anyOf.map((b) => arbitraryOf(b, depth)));
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
      const shaped: fc.Arbitrary<string>[] = [
        fc.string(),
        fc.constantFrom(...EXTREME_STRINGS),
        fc.constantFrom(...HOSTILE_STRINGS),
        fc.string({ unit: 'binary', maxLength: 8 }),
        fc.string({ unit: 'binary-ascii', maxLength: 8 }),
      ];
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

const typesOf = (s: Schema): string[] => (Array.isArray(s.type) ? s.type : s.type ? [s.type] : s.properties ? ['object'] : []);

/** Where a schema holds strings: each a path of keys (`0` for array items, `k` for a map's values). */
function stringPaths(s: Schema, at: string[] = [], depth = 0): { at: string[]; schema: Schema }[] {
  if (depth > 6) return [];
  if (s.anyOf) return s.anyOf.flatMap((b) => stringPaths(b, at, depth + 1));
  const out: { at: string[]; schema: Schema }[] = [];
  const types = typesOf(s);
  if (types.includes('string') || s.enum?.some((v) => typeof v === 'string')) out.push({ at, schema: s });
  if (types.includes('array') && s.items) out.push(...stringPaths(s.items, [...at, '0'], depth + 1));
  if (types.includes('object')) {
    for (const [k, v] of Object.entries(s.properties ?? {})) out.push(...stringPaths(v, [...at, k], depth + 1));
    if (typeof s.additionalProperties === 'object') out.push(...stringPaths(s.additionalProperties, [...at, 'k'], depth + 1));
  }
  return out;
}

/** The smallest value of a schema's shape: required properties only, empty arrays. */
function skeleton(s: Schema): unknown {
  if (s.enum) return s.enum[0];
  if (s.anyOf) return skeleton(s.anyOf[0]!);
  const t = typesOf(s)[0];
  if (t === 'string') return 'x';
  if (t === 'integer' || t === 'number') return s.minimum ?? 1;
  if (t === 'boolean') return true;
  if (t === 'null') return null;
  if (t === 'array') return [];
  return Object.fromEntries((s.required ?? []).map((k) => [k, skeleton(s.properties?.[k] ?? {})]));
}

function setAt(root: unknown, at: string[], value: unknown): unknown {
  if (at.length === 0) return value;
  const [k, ...rest] = at as [string, ...string[]];
  const base = (root && typeof root === 'object' ? root : /^\d+$/.test(k) ? [] : {}) as Record<string, unknown>;
  const copy = (Array.isArray(base) ? [...base] : { ...base }) as Record<string, unknown>;
  copy[k] = setAt(copy[k], rest, value);
  return copy;
}

/** Fields whose schema says NUL is kept (as U+FFFD), not refused: command output. */
const replacesNul = (s: Schema) => /NUL \(U\+0000\) is stored as U\+FFFD/.test(s.description ?? '');

for (const target of dialects()) {
  describe(`every route with a body or query answers 2xx/4xx for any input (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let session: string;
    const ids: Record<string, string> = {};
    let doc: { paths: Record<string, Record<string, Operation>> };

    before(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url, env: UNPACED });
      const app = r.service.app;
      const setup = await app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'admin@example.com', password: 'a long enough password' } });
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

    /** Sends with the admin's session, or with the admin key where the route is for executors. */
    async function send(req: { method: string; url: string; headers?: Record<string, string>; payload?: string | Buffer }) {
      const app = r.service.app;
      const asUser = await app.inject({ ...req, method: req.method as 'GET', headers: { ...req.headers, ...bearer(session) } });
      if (asUser.statusCode !== 401 && asUser.statusCode !== 403) return asUser;
      return app.inject({ ...req, method: req.method as 'GET', headers: { ...req.headers, ...apiKey(API_KEY) } });
    }

    test('a NUL in any one string field of any documented route is refused naming that field', async () => {
      const NUL = 'a\u0000b';
      let checked = 0;
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const [m, op] of Object.entries(ops)) {
          const method = m.toUpperCase();
          const params = op.parameters ?? [];
          const query = params.filter((p) => p.in === 'query');
          const expectRefused = async (what: string, field: string, res: { statusCode: number; body: string }) => {
            checked++;
            assert.equal(res.statusCode, 400, `${method} ${path} ${what}: ${res.body}`);
            assert.equal(JSON.parse(res.body).code, 'invalid_field', res.body);
            assert.equal(JSON.parse(res.body).errors[0].field, field, `${method} ${path} ${what}: ${res.body}`);
          };
          for (const p of params.filter((x) => x.in === 'path')) {
            const url = resolve(path.replace(`{${p.name}}`, encodeURIComponent(NUL)));
            await expectRefused(`path ${p.name}`, p.name, await send({ method, url }));
          }
          for (const q of query) {
            const url = `${resolve(path)}?${new URLSearchParams({ [q.name]: NUL })}`;
            await expectRefused(`query ${q.name}`, q.name, await send({ method, url }));
          }
          const json = op.requestBody?.content['application/json']?.schema;
          if (json) {
            const base = skeleton(json);
            for (const { at, schema } of stringPaths(json)) {
              const payload = JSON.stringify(setAt(base, at, NUL));
              const res = await send({ method, url: resolve(path), headers: { 'content-type': 'application/json' }, payload });
              if (replacesNul(schema)) {
                checked++;
                assert.ok(res.statusCode < 500, `${method} ${path} ${at.join('.')}: ${res.body}`);
              } else {
                await expectRefused(`body ${at.join('.')}`, at.join('.'), res);
              }
            }
            // A NUL in the key of a map (run parameters): refused, the key named escaped.
            for (const { at } of stringPaths(json).filter((x) => x.at[x.at.length - 1] === 'k')) {
              const keyAt = [...at.slice(0, -1), 'k\u0000'];
              const payload = JSON.stringify(setAt(base, keyAt, 'v'));
              const res = await send({ method, url: resolve(path), headers: { 'content-type': 'application/json' }, payload });
              await expectRefused(`key ${keyAt.join('.')}`, [...at.slice(0, -1), 'k\\u0000'].join('.'), res);
            }
          }
          const form = op.requestBody?.content['multipart/form-data']?.schema;
          if (form) {
            for (const [name, field] of Object.entries(form.properties ?? {})) {
              // A text field holding NUL, or a file whose RFC 5987 `filename*` decodes to one.
              const parts = Object.keys(form.properties ?? {}).map((k) => {
                const binary = form.properties![k]!.format === 'binary';
                if (binary) {
                  const filename = k === name ? `filename*=UTF-8''a%00b.knwf` : 'filename="w.knwf"';
                  return `Content-Disposition: form-data; name="${k}"; ${filename}\r\nContent-Type: application/octet-stream\r\n\r\n${makeZip().toString('latin1')}`;
                }
                return `Content-Disposition: form-data; name="${k}"\r\n\r\n${k === name ? NUL : 'x'}`;
              });
              const boundary = 'pierfuzzboundary';
              const payload = Buffer.from(`${parts.map((p) => `--${boundary}\r\n${p}\r\n`).join('')}--${boundary}--\r\n`, 'latin1');
              const res = await send({ method, url: resolve(path), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, payload });
              await expectRefused(`multipart ${name}`, field.format === 'binary' ? `${name}.filename` : name, res);
            }
          }
        }
      }
      // A floor, so a documentation change cannot silently empty this test.
      assert.ok(checked >= 100, `only ${checked} fields checked`);
    });

    test('NUL where no schema names it: a run-list cursor, the OAuth endpoints, cookies and Basic credentials', async () => {
      const app = r.service.app;
      const cursor = Buffer.from(JSON.stringify(['2026-01-01T00:00:00.000Z', 'a\u0000b'])).toString('base64url');
      const listed = await app.inject({ method: 'GET', url: `/api/runs?cursor=${cursor}`, headers: bearer(session) });
      assert.equal(listed.statusCode, 400, listed.body);
      assert.equal(listed.json().errors[0].field, 'cursor');

      const login = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'a\u0000@example.com', password: 'x' } });
      assert.equal(login.statusCode, 400, login.body);
      assert.equal(login.json().errors[0].field, 'email');

      const form = { 'content-type': 'application/x-www-form-urlencoded' };
      const oauth: [string, string, Record<string, string>, string | undefined, string][] = [
        ['GET', `/oauth/authorize?client_id=a%00b&response_type=code`, {}, undefined, 'invalid_request'],
        ['POST', '/oauth/token', form, 'grant_type=authorization_code&client_id=a%00b&code=x', 'invalid_request'],
        ['POST', '/oauth/token', form, 'grant_type=refresh_token&refresh_token=rnr_ort_%00', 'invalid_request'],
        ['POST', '/oauth/token', { ...form, authorization: `Basic ${Buffer.from('a\u0000b:secret').toString('base64')}` }, 'grant_type=client_credentials', 'invalid_request'],
        ['POST', '/oauth/revoke', form, 'token=x&client_id=a%00b', 'invalid_request'],
        ['POST', '/oauth/register', { 'content-type': 'application/json' }, JSON.stringify({ redirect_uris: ['http://127.0.0.1/cb'], client_uri: 'https://a\u0000b.example' }), 'invalid_client_metadata'],
        ['GET', '/oauth/authorize?client_id=x&response_type=code', { cookie: 'rnr_csrf=a%00b' }, undefined, 'invalid_request'],
      ];
      for (const [method, url, headers, payload, error] of oauth) {
        const res = await app.inject({ method: method as 'GET', url, headers, ...(payload ? { payload } : {}) });
        assert.equal(res.statusCode, 400, `${method} ${url} ${payload}: ${res.body}`);
        assert.equal(res.json().error, error, res.body);
        assert.match(res.json().error_description, /NUL/);
      }
      // The sign-in the web UI uses answers problem+json naming the field.
      const page = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'a\u0000b', password: 'x', browserSession: true } });
      assert.equal(page.statusCode, 400, page.body);
      assert.match(page.json().errors[0].field, /email/);
      assert.equal(page.headers['set-cookie'], undefined);
    });

    test('log text and a run error keep working with NUL (stored as U+FFFD, as documented)', async () => {
      const app = r.service.app;
      const res = await app.inject({ method: 'POST', url: `/api/runs/${ids.runId}/logs`, headers: apiKey(API_KEY), payload: { leaseToken: 'stale', attempt: 1, chunks: [{ seq: 1, text: 'a\u0000b' }] } });
      // The run has ended: a stale lease, not a NUL, is what is refused.
      assert.equal(res.statusCode, 409, res.body);
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

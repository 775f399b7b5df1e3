import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { Compile } from 'typebox/compile';
import { TOOLS } from '../../src/runner/mcp/server.js';
import type { Tool } from '../../src/runner/mcp/tool.js';
import { dialects } from '../helpers/db.js';
import { API_KEY, apiKey, bearer, knwfWithConfigurationNodes, makeZip, multipart, SETUP_TOKEN, startRunner, type TestRunner, UNPACED } from './helpers.js';

/**
 * Hostile input against the real MCP endpoint (POST /mcp, the SDK's stateless Streamable HTTP
 * transport) on SQLite and PostgreSQL. Every tool gets arguments built from its own input
 * schema with wrong and extreme values (and arbitrary JSON), sent with a write token, a read
 * token and the write token of a project viewer: the answer is never a 5xx nor a JSON-RPC
 * internal error, a result that is not an error carries structured content that fits the tool's
 * output schema, and calls that are refused (read scope, viewer role) change nothing. Then the
 * protocol itself: malformed bodies, batches, content types, Accept, unknown methods and
 * fuzzed resource URIs.
 */

const PASSWORD = 'a long enough password';
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
/** JSON-RPC 2.0 §5.1 */
const INTERNAL_ERROR = -32603;
const INVALID_PARAMS = -32602;

type Who = 'adminWrite' | 'adminRead' | 'viewerWrite';
const WRITE_TOOLS = new Set(['start_run', 'cancel_run', 'rerun_run', 'wait_for_run', 'set_schedule_enabled']);
const MUTATING_TOOLS = new Set(['start_run', 'cancel_run', 'rerun_run', 'set_schedule_enabled']);

interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}
interface RpcMessage {
  jsonrpc: string;
  id?: unknown;
  method?: string;
  result?: Record<string, unknown>;
  error?: RpcError;
}

/** The JSON-RPC messages of a response: a JSON body (one or a batch) or an event stream's data lines. */
function messagesOf(res: LightMyRequestResponse, what: string): RpcMessage[] {
  assert.ok(res.statusCode < 500, `${what}: HTTP ${res.statusCode}: ${res.body.slice(0, 500)}`);
  if (res.statusCode === 202) {
    assert.equal(res.body, '', `${what}: 202 with a body`);
    return [];
  }
  const type = String(res.headers['content-type'] ?? '');
  let messages: RpcMessage[];
  if (type.startsWith('text/event-stream')) {
    assert.equal(res.statusCode, 200, what);
    messages = res.body
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => JSON.parse(l.slice(5)) as RpcMessage);
    assert.ok(messages.length > 0, `${what}: an event stream without messages: ${res.body.slice(0, 300)}`);
  } else {
    assert.match(type, /^application\/json/, `${what}: HTTP ${res.statusCode} as ${type}: ${res.body.slice(0, 300)}`);
    const body = JSON.parse(res.body) as unknown;
    messages = (Array.isArray(body) ? body : [body]) as RpcMessage[];
  }
  for (const m of messages) {
    assert.equal(typeof m, 'object', `${what}: ${res.body.slice(0, 300)}`);
    assert.equal(m.jsonrpc, '2.0', `${what}: not JSON-RPC 2.0: ${JSON.stringify(m).slice(0, 300)}`);
    const kinds = ['result', 'error', 'method'].filter((k) => k in m);
    assert.equal(kinds.length, 1, `${what}: a message with ${kinds.join('+') || 'neither result nor error'}: ${JSON.stringify(m).slice(0, 300)}`);
    if (m.error) {
      assert.ok(Number.isInteger(m.error.code) && typeof m.error.message === 'string', `${what}: malformed error ${JSON.stringify(m.error)}`);
    }
    if (res.statusCode >= 400) assert.ok(m.error, `${what}: HTTP ${res.statusCode} without a JSON-RPC error`);
  }
  return messages;
}

/** No internal error (-32603): a malformed request is the client's error (-32602). */
function assertNoInternalError(messages: RpcMessage[], what: string): void {
  for (const m of messages) {
    if (m.error) assert.notEqual(m.error.code, INTERNAL_ERROR, `${what}: internal error ${JSON.stringify(m.error)}`);
  }
}

const outputChecks = new Map(TOOLS.map((t) => [t.name, Compile(t.output)]));

/** A tools/call answer: an error result the model can read, or structured content of the tool's output schema. */
function assertToolResult(tool: Tool, m: RpcMessage, what: string): void {
  const r = m.result!;
  assert.ok(Array.isArray(r.content) && r.content.length > 0, `${what}: no content: ${JSON.stringify(r).slice(0, 300)}`);
  const first = (r.content as { type: string; text?: string }[])[0]!;
  assert.equal(first.type, 'text');
  assert.ok(typeof first.text === 'string' && first.text.length > 0, `${what}: empty text`);
  if (r.isError === true) {
    assert.equal(r.structuredContent, undefined, `${what}: an error result with structured content`);
    return;
  }
  assert.ok(r.structuredContent && typeof r.structuredContent === 'object', `${what}: a result without structuredContent: ${JSON.stringify(r).slice(0, 300)}`);
  const check = outputChecks.get(tool.name)!;
  const problems = [...check.Errors(r.structuredContent)].slice(0, 3).map((e) => `${e.instancePath} ${e.message}`);
  assert.deepEqual(problems, [], `${what}: structuredContent does not fit the output schema of ${tool.name}: ${JSON.stringify(r.structuredContent).slice(0, 400)}`);
}

// ---- values ---------------------------------------------------------------------------------

const HOSTILE_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\uD800',
  'a\uDFFFb',
  '\uFFFF',
  '\u202Eevil',
  '😀',
  'é',
  'Ω≈ç√∫',
  '%',
  '_',
  '%_%',
  '\\%',
  "' OR '1'='1",
  "'; DROP TABLE runs; --",
  '"',
  '../../etc/passwd',
  '..',
  '..%2F..%2Fetc%2Fpasswd',
  '\\',
  '\r\nX-Injected: 1',
  '__proto__',
  'constructor',
  'prototype',
  'null',
  'undefined',
  'NaN',
  'Infinity',
  '0',
  '-1',
  '1e400',
  '9'.repeat(40),
  'x'.repeat(65),
  'latest',
  'original',
  'true',
  '2026-02-30',
  '2026-11-25T08:00:00Z',
  '9999-12-31T23:59:59.999Z',
  '0000-01-01',
];
const EDGE_NUMBERS = [
  0, -0, -1, 1, 0.5, 1.5, -1.5, 255, 256, 257, 599, 600, 601, 5000, 5001, 262_144, 262_145, 999_999_999, 1_000_000_000, 2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 2 ** 53 + 2,
  Number.MAX_SAFE_INTEGER, 1e20, 1e308, -1e308, 5e-324,
];

const hostileString = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
  { weight: 2, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom('\uD800', '\uDC00', 'a', '\u0000', '%', '_', "'", '😀'), maxLength: 12 }) },
  // Long (and, rarely, past the endpoint's 1 MiB body limit).
  { weight: 1, arbitrary: fc.constantFrom(70, 5_000, 100_000, 1_100_000).map((n) => 'A'.repeat(n)) },
);
const edgeNumber = fc.oneof(fc.constantFrom(...EDGE_NUMBERS), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }));
/** Objects whose keys probe prototype handling and parsing. */
const trickyObject = fc
  .constantFrom('{"__proto__":{"admin":true}}', '{"constructor":{"prototype":{"x":1}}}', '{"constructor":1}', '{"toString":"x","hasOwnProperty":null}', '{"a":{"b":{"c":{"d":[[[[1]]]]}}}}', '{"":""}')
  .map((s) => JSON.parse(s) as unknown);
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 2, arbitrary: hostileString },
  { weight: 2, arbitrary: edgeNumber },
  { weight: 1, arbitrary: trickyObject },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [], {}) },
);

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  patternProperties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  enum?: string[];
  pattern?: string;
  minimum?: number;
  maximum?: number;
};

interface Ids {
  [k: string]: string;
}

/** Which ids a property takes: runs for runId, workflows for workflowId… (the caller's and other users'). */
const ID_KINDS: Record<string, string[]> = {
  runId: ['failedRun', 'queuedRun', 'privateRun'],
  workflowId: ['workflowP', 'workflowQ'],
  projectId: ['projectP', 'projectQ'],
  scheduleId: ['scheduleP', 'scheduleQ'],
};

/** A value the property's schema accepts (edges included): ids of the right kind, numbers in range… */
function validFor(name: string, s: JsonSchema, ids: () => Ids): fc.Arbitrary<unknown> {
  const types = Array.isArray(s.type) ? s.type : [s.type];
  if (s.enum) return fc.constantFrom(...s.enum);
  if (s.pattern === '^[A-Za-z0-9_-]+$') {
    const kinds = ID_KINDS[name];
    const known = fc.constant(null).chain(() => fc.constantFrom(...(kinds ? kinds.map((k) => ids()[k]!) : Object.values(ids()))));
    return fc.oneof({ weight: 6, arbitrary: known }, { weight: 1, arbitrary: fc.constant(null).chain(() => fc.constantFrom(...Object.values(ids()))) }, { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/) });
  }
  if (name === 'since') return fc.oneof(fc.date({ noInvalidDate: true, min: new Date(0), max: new Date(Date.UTC(9999, 0)) }).map((d) => d.toISOString()), fc.constantFrom('2026-11-25', '2030-01-01', '1970-01-01T00:00:00Z', '2029-12-31T23:59:59+14:00'));
  if (name === 'cursor') return fc.tuple(fc.string({ maxLength: 30 }), fc.string({ maxLength: 40 })).map((v) => Buffer.from(JSON.stringify(v)).toString('base64url'));
  if (types.includes('integer')) {
    const min = s.minimum ?? -1000;
    const max = s.maximum ?? 1000;
    return fc.oneof(fc.integer({ min, max: Math.min(max, min + 20) }), fc.integer({ min, max }), fc.constantFrom(min, max));
  }
  if (types.includes('boolean')) return fc.boolean();
  if (s.patternProperties) {
    // Run parameters: the declared ones (rows integer, ratio number, dry boolean, mode choice, title text) and others.
    const key = fc.oneof(fc.constantFrom('rows', 'ratio', 'dry', 'mode', 'title'), fc.string({ minLength: 1, maxLength: 10 }));
    const value = fc.oneof(fc.constantFrom('fast', 'thorough', 'true', 'false', '12', '-3', '0.5', '1e3', ' '), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null), fc.string({ maxLength: 20 }));
    return fc.dictionary(key, value, { maxKeys: 5 });
  }
  if (types.includes('array')) return fc.uniqueArray(fc.oneof(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/), fc.constantFrom('linux', 'gpu')), { maxLength: 16 });
  return fc.string({ maxLength: 20 });
}

/** A wrong or extreme value for the property: of its type but out of range, of another type, or hostile. */
function hostileFor(name: string, s: JsonSchema, ids: () => Ids): fc.Arbitrary<unknown> {
  const types = Array.isArray(s.type) ? s.type : [s.type];
  const own: fc.Arbitrary<unknown>[] = [anyValue, hostileString];
  if (types.includes('integer')) own.push(edgeNumber);
  if (s.pattern) own.push(fc.constant(null).chain(() => fc.constantFrom(...Object.values(ids()))));
  if (s.patternProperties) {
    // Names the declared-parameter rule never sees (empty, with a line break, too long) and values that are not scalars.
    const key = fc.oneof(fc.constantFrom('rows', 'ratio', 'dry', 'mode', 'title', '', 'a\nb', '\n', 'x'.repeat(201), 'constructor', 'toString'), fc.string({ maxLength: 10 }));
    const value = fc.oneof(fc.constantFrom('x'.repeat(10_001), 'thorough ', 'FAST', '1.5', 'yes'), edgeNumber, hostileString, fc.jsonValue({ maxDepth: 2 }));
    own.push(fc.dictionary(key, value, { minKeys: 1, maxKeys: 6 }));
  }
  if (types.includes('array')) own.push(fc.array(fc.oneof(fc.constantFrom('linux', 'linux'), hostileString, anyValue), { minLength: 1, maxLength: 20 }));
  if (name === 'cursor') own.push(fc.tuple(anyValue, anyValue).map((v) => Buffer.from(JSON.stringify(v)).toString('base64url')));
  return fc.oneof(...own);
}

/**
 * Arguments for a tool, from its input schema: all valid (so calls reach the services), valid but
 * for one hostile value, hostile throughout (some keys missing, sometimes an unknown one), or an
 * arbitrary object.
 */
function argumentsFor(tool: Tool, ids: () => Ids): fc.Arbitrary<Record<string, unknown>> {
  const s = tool.input as JsonSchema;
  const props = Object.entries(s.properties ?? {});
  const required = (s.required ?? []) as never[];
  const valid = fc.record(Object.fromEntries(props.map(([k, v]) => [k, validFor(k, v, ids)])), { requiredKeys: required });
  const mixed = fc.record(Object.fromEntries(props.map(([k, v]) => [k, fc.oneof({ weight: 2, arbitrary: validFor(k, v, ids) }, { weight: 1, arbitrary: hostileFor(k, v, ids) })])), { requiredKeys: [] });
  const arbitraries: fc.WeightedArbitrary<Record<string, unknown>>[] = [
    { weight: 3, arbitrary: valid },
    { weight: 2, arbitrary: mixed },
    { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), anyValue, { maxKeys: 4 }) },
    { weight: 1, arbitrary: fc.object({ maxDepth: 2 }).map((o) => JSON.parse(JSON.stringify(o)) as Record<string, unknown>) },
    {
      weight: 1,
      // An own key (even __proto__, as JSON.parse makes it) that the schema does not have.
      arbitrary: fc.tuple(valid, fc.constantFrom('extra', '__proto__', 'constructor', 'prototype', ''), anyValue).map(([r, k, v]) => {
        const out: Record<string, unknown> = { ...r };
        Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
        return out;
      }),
    },
  ];
  if (props.length > 0) {
    arbitraries.push({
      weight: 3,
      arbitrary: fc.tuple(valid, fc.constantFrom(...props)).chain(([r, [k, v]]) => hostileFor(k, v, ids).map((bad) => ({ ...r, [k]: bad }))),
    });
  }
  return fc.oneof(...arbitraries);
}

/** wait_for_run waits at most a second here: a valid (or absent) timeout becomes 1. */
function shortWait(tool: Tool, args: unknown): unknown {
  if (tool.name !== 'wait_for_run' || typeof args !== 'object' || args === null || Array.isArray(args)) return args;
  const a = args as Record<string, unknown>;
  const t = a.timeoutSeconds;
  if (t === undefined || (typeof t === 'number' && Number.isFinite(t) && t >= 1)) return { ...a, timeoutSeconds: 1 };
  return args;
}

// ---- the suite --------------------------------------------------------------------------------

for (const target of dialects()) {
  describe(`MCP endpoint under hostile input (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let admin: string; // the administrator's web session (JWT): snapshots through the REST API
    const tokens = {} as Record<Who, string>;
    const ids: Ids = {};
    const LOG_LINES = ['Starting workflow Report', 'Lese Daten… ✓ 😀', 'ERROR: node "CSV Reader" failed: file not found', '  at org.knime.core.Node.execute(Node.java:42)', 'done'];
    const OUTPUT_NAME = 'résumé 1.csv';
    const inject = (o: InjectOptions) => r.service.app.inject(o);
    let rpcId = 0;
    /** Kept out of `ids` (and so out of the fuzzing): its log is 2 MiB. */
    let twoAttemptRun: string;
    const BIG_LINES = 2048;
    const bigLine = (n: number) => `${String(n).padStart(8, '0')} ${'x'.repeat(1015)}`;

    const post = (body: unknown, token: string, headers: Record<string, string> = {}) =>
      inject({ method: 'POST', url: '/mcp', headers: { ...MCP_HEADERS, ...bearer(token), ...headers }, payload: typeof body === 'string' ? body : JSON.stringify(body) });

    async function callTool(tool: Tool, args: unknown, who: Who) {
      const id = ++rpcId;
      const res = await post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool.name, arguments: args } }, tokens[who]);
      const what = `${tool.name} as ${who} with ${JSON.stringify(args)?.slice(0, 300)}`;
      const messages = messagesOf(res, what);
      assertNoInternalError(messages, what);
      const answer = messages.find((m) => m.id === id) ?? messages.find((m) => m.error && m.id === null);
      assert.ok(answer, `${what}: no answer to request ${id}: ${res.body.slice(0, 300)}`);
      if (answer.result) assertToolResult(tool, answer, what);
      // Scope: a read token never runs a write tool, a non-administrator never lists executors (403 before anything runs).
      const refusedUpFront = (who === 'adminRead' && WRITE_TOOLS.has(tool.name)) || (who === 'viewerWrite' && tool.name === 'list_executors');
      if (refusedUpFront) {
        // 403 with the scope to ask for, unless the body was refused before that (NUL, __proto__: 400; too large: 413).
        assert.ok([400, 403, 413].includes(res.statusCode), `${what}: HTTP ${res.statusCode}: ${res.body.slice(0, 300)}`);
        assert.ok(answer.error && [-32000, -32700].includes(answer.error.code), `${what}: ${res.body.slice(0, 300)}`);
      }
      // The viewer's writes are refused by the project role (or never reach a run it cannot see).
      if (who === 'viewerWrite' && MUTATING_TOOLS.has(tool.name) && answer.result) assert.equal(answer.result.isError, true, `${what}: a viewer's write succeeded`);
      return { res, answer };
    }

    async function fuzzTool(tool: Tool, who: Who, numRuns: number) {
      await fc.assert(
        fc.asyncProperty(argumentsFor(tool, () => ids), async (args) => {
          await callTool(tool, shortWait(tool, args), who);
        }),
        { numRuns, includeErrorInReport: true },
      );
    }

    /** wait_for_run can take a second per call: batches in parallel. */
    async function fuzzWait(who: Who, numRuns: number) {
      const tool = TOOLS.find((t) => t.name === 'wait_for_run')!;
      await fc.assert(
        fc.asyncProperty(fc.array(argumentsFor(tool, () => ids), { minLength: 8, maxLength: 8 }), async (batch) => {
          await Promise.all(batch.map((args) => callTool(tool, shortWait(tool, args), who)));
        }),
        { numRuns, includeErrorInReport: true },
      );
    }

    /** What refused calls must not change: runs (status, attempts, parameters), schedules' state, projects. */
    async function snapshot() {
      const runs: string[] = [];
      let cursor: string | null = null;
      do {
        const page: LightMyRequestResponse = await inject({ method: 'GET', url: `/api/runs?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, headers: bearer(admin) });
        assert.equal(page.statusCode, 200, page.body);
        const body = page.json() as { items: { id: string; status: string; attempt: number; parameters: unknown }[]; nextCursor: string | null };
        runs.push(...body.items.map((x) => `${x.id} ${x.status} ${x.attempt} ${JSON.stringify(x.parameters)}`));
        cursor = body.nextCursor;
      } while (cursor);
      const schedules: string[] = [];
      cursor = null;
      do {
        const page: LightMyRequestResponse = await inject({ method: 'GET', url: `/api/schedules?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, headers: bearer(admin) });
        assert.equal(page.statusCode, 200, page.body);
        const body = page.json() as { items: { id: string; enabled: boolean }[]; nextCursor: string | null };
        schedules.push(...body.items.map((s) => `${s.id} ${s.enabled}`));
        cursor = body.nextCursor;
      } while (cursor);
      const projects = (await inject({ method: 'GET', url: '/api/projects', headers: bearer(admin) })).json().items.map((p: { id: string; name: string }) => `${p.id} ${p.name}`);
      return { runs: runs.sort(), schedules: schedules.sort(), projects: projects.sort() };
    }

    async function toolNames(who: Who): Promise<string[]> {
      const res = await post({ jsonrpc: '2.0', id: ++rpcId, method: 'tools/list' }, tokens[who]);
      assert.equal(res.statusCode, 200, res.body);
      return (res.json().result.tools as { name: string }[]).map((t) => t.name).sort();
    }

    before(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url, backgroundLoops: false, env: UNPACED });
      const setup = await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'admin@example.com', password: PASSWORD } });
      assert.equal(setup.statusCode, 201, setup.body);
      admin = setup.json().session.token;
      ids.adminId = setup.json().user?.id ?? 'none';
      const viewer = await inject({ method: 'POST', url: '/api/users', headers: bearer(admin), payload: { email: 'viewer@example.com', password: PASSWORD } });
      assert.equal(viewer.statusCode, 201, viewer.body);
      ids.viewerId = viewer.json().id;
      const viewerSession = (await inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'viewer@example.com', password: PASSWORD } })).json().token;

      // Project P (the viewer is a viewer there) with a workflow that declares parameters; project Q is the administrator's alone.
      ids.projectP = (await inject({ method: 'POST', url: '/api/projects', headers: bearer(admin), payload: { name: 'Shared' } })).json().id;
      ids.projectQ = (await inject({ method: 'POST', url: '/api/projects', headers: bearer(admin), payload: { name: 'Private' } })).json().id;
      const member = await inject({ method: 'PUT', url: `/api/projects/${ids.projectP}/members/${ids.viewerId}`, headers: bearer(admin), payload: { role: 'viewer' } });
      assert.equal(member.statusCode, 200, member.body);
      const upload = async (project: string, file: Buffer) => {
        const m = multipart([{ name: 'file', file, filename: 'Report.knwf' }]);
        const res = await inject({ method: 'POST', url: `/api/projects/${project}/workflows`, headers: { ...bearer(admin), ...m.headers }, payload: m.payload });
        assert.equal(res.statusCode, 201, res.body);
        return res.json().id as string;
      };
      ids.workflowP = await upload(ids.projectP!, knwfWithConfigurationNodes());
      ids.workflowQ = await upload(ids.projectQ!, makeZip());
      const startRest = async (workflow: string, payload: object) => {
        const res = await inject({ method: 'POST', url: `/api/workflows/${workflow}/runs`, headers: bearer(admin), payload });
        assert.equal(res.statusCode, 201, res.body);
        return res.json().id as string;
      };

      // A failed run of P with a log (multi-byte, an error line) and an output file.
      ids.failedRun = await startRest(ids.workflowP, { parameters: { rows: 5, mode: 'fast' } });
      const executor = (await inject({ method: 'POST', url: '/api/executors/register', headers: apiKey(API_KEY), payload: { name: 'ex-1' } })).json();
      ids.executorId = executor.id;
      const claim = (await inject({ method: 'POST', url: `/api/executors/${executor.id}/claim?wait=0`, headers: apiKey(API_KEY) })).json();
      assert.equal(claim.run.id, ids.failedRun);
      const lease = { leaseToken: claim.lease.token, attempt: claim.lease.attempt };
      const text = LOG_LINES.map((l) => `${l}\n`).join('');
      const logs = await inject({
        method: 'POST',
        url: `/api/runs/${ids.failedRun}/logs`,
        headers: apiKey(API_KEY),
        payload: { ...lease, chunks: [{ seq: 1, text: text.slice(0, 30) }, { seq: 2, text: text.slice(30) }] },
      });
      assert.equal(logs.statusCode, 200, logs.body);
      const file = Buffer.from('a,b\n1,2\n');
      const out = multipart([
        { name: 'leaseToken', value: lease.leaseToken },
        { name: 'attempt', value: String(lease.attempt) },
        { name: 'sha256', value: createHash('sha256').update(file).digest('hex') },
        { name: 'file', file, filename: OUTPUT_NAME },
      ]);
      const put = await inject({ method: 'PUT', url: `/api/runs/${ids.failedRun}/outputs/${encodeURIComponent(OUTPUT_NAME)}`, headers: { ...apiKey(API_KEY), ...out.headers }, payload: out.payload });
      assert.equal(put.statusCode, 200, put.body);
      const done = await inject({ method: 'POST', url: `/api/runs/${ids.failedRun}/complete`, headers: apiKey(API_KEY), payload: { ...lease, status: 'failed', exitCode: 1, error: 'node failed' } });
      assert.equal(done.statusCode, 200, done.body);
      // A run of Q with two attempts: "attempt one" then, after a hand-back, exactly MAX_RESOURCE_BYTES of lines (2048 × 1024 bytes).
      twoAttemptRun = await startRest(ids.workflowQ, {});
      const first = (await inject({ method: 'POST', url: `/api/executors/${executor.id}/claim?wait=0`, headers: apiKey(API_KEY) })).json();
      assert.equal(first.run.id, twoAttemptRun);
      const lease1 = { leaseToken: first.lease.token, attempt: first.lease.attempt };
      assert.equal((await inject({ method: 'POST', url: `/api/runs/${twoAttemptRun}/logs`, headers: apiKey(API_KEY), payload: { ...lease1, chunks: [{ seq: 1, text: 'attempt one\n' }] } })).statusCode, 200);
      const released = await inject({ method: 'POST', url: `/api/runs/${twoAttemptRun}/release`, headers: apiKey(API_KEY), payload: lease1 });
      assert.equal(released.statusCode, 200, released.body);
      const second = (await inject({ method: 'POST', url: `/api/executors/${executor.id}/claim?wait=0`, headers: apiKey(API_KEY) })).json();
      assert.equal(second.run.id, twoAttemptRun);
      assert.equal(second.lease.attempt, 2);
      const lease2 = { leaseToken: second.lease.token, attempt: second.lease.attempt };
      for (let seq = 1; seq <= BIG_LINES; seq += 200) {
        const chunks = Array.from({ length: Math.min(200, BIG_LINES - seq + 1) }, (_, k) => ({ seq: seq + k, text: `${bigLine(seq + k)}\n` }));
        const res = await inject({ method: 'POST', url: `/api/runs/${twoAttemptRun}/logs`, headers: apiKey(API_KEY), payload: { ...lease2, chunks } });
        assert.equal(res.statusCode, 200, res.body);
      }
      assert.equal((await inject({ method: 'POST', url: `/api/runs/${twoAttemptRun}/complete`, headers: apiKey(API_KEY), payload: { ...lease2, status: 'failed' } })).statusCode, 200);

      // Fuzzed claims must not pick up the queued runs below.
      await inject({ method: 'POST', url: `/api/executors/${executor.id}/drain`, headers: apiKey(API_KEY) });

      // A queued run in P, and one in Q (another project: the viewer must not reach it).
      ids.queuedRun = await startRest(ids.workflowP, {});
      ids.privateRun = await startRest(ids.workflowQ, {});
      const schedule = async (workflow: string) => {
        const res = await inject({ method: 'POST', url: `/api/workflows/${workflow}/schedules`, headers: bearer(admin), payload: { cron: '0 * * * *' } });
        assert.equal(res.statusCode, 201, res.body);
        return res.json().id as string;
      };
      ids.scheduleP = await schedule(ids.workflowP);
      ids.scheduleQ = await schedule(ids.workflowQ);

      const token = async (session: string, scope: 'read' | 'write') => {
        const res = await inject({ method: 'POST', url: '/api/tokens', headers: bearer(session), payload: { name: `mcp ${scope}`, scope } });
        assert.equal(res.statusCode, 201, res.body);
        return res.json() as { id: string; token: string };
      };
      const aw = await token(admin, 'write');
      const ar = await token(admin, 'read');
      const vw = await token(viewerSession, 'write');
      tokens.adminWrite = aw.token;
      tokens.adminRead = ar.token;
      tokens.viewerWrite = vw.token;
      ids.tokenId = vw.id;
    });
    after(async () => {
      await r?.close();
      await dbh?.drop();
    });

    test('the endpoint works for well-formed calls (so the fuzzing below can fail)', async () => {
      assert.deepEqual(await toolNames('adminWrite'), TOOLS.map((t) => t.name).sort());
      assert.deepEqual(await toolNames('adminRead'), TOOLS.filter((t) => !WRITE_TOOLS.has(t.name)).map((t) => t.name).sort());
      assert.deepEqual(await toolNames('viewerWrite'), TOOLS.filter((t) => t.name !== 'list_executors').map((t) => t.name).sort());
      const tool = (n: string) => TOOLS.find((t) => t.name === n)!;

      const got = await callTool(tool('get_run'), { runId: ids.failedRun }, 'viewerWrite');
      const run = got.answer.result!.structuredContent as { run: { id: string; status: string }; outputs: { name: string; uri: string }[]; logUri: string };
      assert.equal(run.run.id, ids.failedRun);
      assert.equal(run.run.status, 'failed');
      assert.deepEqual(run.outputs.map((o) => o.name), [OUTPUT_NAME]);

      const log = await callTool(tool('read_run_log'), { runId: ids.failedRun, errorsOnly: true }, 'adminRead');
      assert.deepEqual((log.answer.result!.structuredContent as { lines: string[] }).lines, [LOG_LINES[2]]);
      const tail = await callTool(tool('read_run_log'), { runId: ids.failedRun, tailLines: 2 }, 'adminRead');
      assert.deepEqual((tail.answer.result!.structuredContent as { lines: string[]; truncated: boolean }).lines, LOG_LINES.slice(-2));

      const read = await post({ jsonrpc: '2.0', id: ++rpcId, method: 'resources/read', params: { uri: run.logUri } }, tokens.viewerWrite);
      assert.equal(read.json().result.contents[0].text, LOG_LINES.map((l) => `${l}\n`).join(''));
      const file = await post({ jsonrpc: '2.0', id: ++rpcId, method: 'resources/read', params: { uri: run.outputs[0]!.uri } }, tokens.viewerWrite);
      assert.equal(file.json().result.contents[0].text, 'a,b\n1,2\n');

      // The viewer cannot see project Q's run; the read token cannot write.
      const hidden = await callTool(tool('get_run'), { runId: ids.privateRun }, 'viewerWrite');
      assert.equal(hidden.answer.result!.isError, true);
      assert.match((hidden.answer.result!.content as { text: string }[])[0]!.text, /^404 /);
      const scoped = await callTool(tool('cancel_run'), { runId: ids.queuedRun }, 'adminRead');
      assert.equal(scoped.res.statusCode, 403);
      assert.match(String(scoped.res.headers['www-authenticate']), /insufficient_scope/);
    });

    test('every tool, fuzzed with the read token and the viewer\'s token: no 5xx, no internal error, and nothing changes', async () => {
      const before = await snapshot();
      for (const who of ['adminRead', 'viewerWrite'] as const) {
        for (const tool of TOOLS) {
          if (tool.name === 'wait_for_run') await fuzzWait(who, 4);
          else await fuzzTool(tool, who, 80);
        }
        // Well-formed writes on real ids are refused as well.
        const tool = (n: string) => TOOLS.find((t) => t.name === n)!;
        for (const [name, args] of [
          ['start_run', { workflowId: ids.workflowP, parameters: { rows: 1 } }],
          ['start_run', { workflowId: ids.workflowQ }],
          ['cancel_run', { runId: ids.queuedRun }],
          ['cancel_run', { runId: ids.privateRun }],
          ['rerun_run', { runId: ids.failedRun }],
          ['set_schedule_enabled', { scheduleId: ids.scheduleP, enabled: false }],
          ['set_schedule_enabled', { scheduleId: ids.scheduleQ, enabled: false }],
        ] as const) {
          const { res, answer } = await callTool(tool(name), args, who);
          assert.ok(res.statusCode === 403 || answer.result?.isError === true, `${name} as ${who} was not refused: ${res.body.slice(0, 300)}`);
        }
      }
      assert.deepEqual(await snapshot(), before);
    });

    test('every tool, fuzzed with the administrator\'s write token: no 5xx, no internal error, results fit the output schema', async () => {
      for (const tool of TOOLS) {
        if (tool.name === 'wait_for_run') await fuzzWait('adminWrite', 4);
        else await fuzzTool(tool, 'adminWrite', 100);
      }
    });

    test('arbitrary JSON as the arguments of every tool, with every token', async () => {
      for (const who of ['adminWrite', 'adminRead', 'viewerWrite'] as const) {
        for (const tool of TOOLS) {
          await fc.assert(
            fc.asyncProperty(fc.jsonValue({ maxDepth: 3 }), async (args) => {
              await callTool(tool, shortWait(tool, args), who);
            }),
            { numRuns: tool.name === 'wait_for_run' ? 10 : 40, includeErrorInReport: true },
          );
        }
      }
    });

    test('invalid params of known methods are refused as invalid params (-32602), not as internal errors', async () => {
      // JSON-RPC 2.0 §5.1: -32602 "Invalid method parameter(s)"; -32603 is "Internal JSON-RPC error".
      const cases: [string, unknown][] = [
        ['tools/call', { name: 'get_run', arguments: 'x' }],
        ['tools/call', { name: 'get_run', arguments: [ids.failedRun] }],
        ['tools/call', { name: 'get_run', arguments: null }],
        ['tools/call', { name: 42 }],
        ['resources/read', { uri: 5 }],
        ['resources/read', {}],
        ['tools/list', { cursor: 5 }],
        ['initialize', {}],
      ];
      const answers: string[] = [];
      for (const [method, params] of cases) {
        const res = await post({ jsonrpc: '2.0', id: 1, method, params }, tokens.adminWrite);
        const [m] = messagesOf(res, method);
        answers.push(`${method} ${JSON.stringify(params)} -> ${m?.error?.code ?? 'result'}`);
      }
      assert.deepEqual(answers, cases.map(([method, params]) => `${method} ${JSON.stringify(params)} -> ${INVALID_PARAMS}`));
    });

    test('start_run refuses parameter names that are empty or hold a line break, and values that are not scalars', async () => {
      // RunParameters declares names of 1 to 200 characters and string, number, boolean or null values.
      const tool = TOOLS.find((t) => t.name === 'start_run')!;
      for (const parameters of [{ '': 1 }, { 'a\nb': { x: [1] } }, { '\n': [1, 2] }, { ['x'.repeat(201)]: 1 }]) {
        const { answer } = await callTool(tool, { workflowId: ids.workflowQ, parameters }, 'adminWrite');
        const stored = answer.result?.isError === true ? null : JSON.stringify((answer.result?.structuredContent as { run?: { parameters?: unknown } } | undefined)?.run?.parameters);
        assert.equal(stored, null, `start_run accepted parameters ${JSON.stringify(parameters).slice(0, 80)} and queued a run with ${stored?.slice(0, 80)}`);
      }
    });

    test('a log resource that leaves earlier attempts out says so', async () => {
      // Attempt 2's lines fill the resource's 2 MiB exactly, so attempt 1 ("attempt one") and both headings are not shown.
      assert.equal(bigLine(1).length, 1024);
      const res = await post({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: `pier://runs/${twoAttemptRun}/log` } }, tokens.adminRead);
      const text = res.json().result.contents[0].text as string;
      assert.ok(text.endsWith(`${bigLine(BIG_LINES)}\n`));
      assert.ok(!text.includes('attempt one'));
      assert.match(text.slice(0, 200), /^\[earlier lines left out/, `no truncation note; the text starts ${JSON.stringify(text.slice(0, 60))}`);
    });

    test('resources/read with fuzzed URIs: contents or not-found, never an internal error; the viewer reads only its project', async () => {
      const runIdish = fc.oneof(
        fc.constant(null).chain(() => fc.constantFrom(ids.failedRun!, ids.queuedRun!, ids.privateRun!, ids.workflowP!)),
        fc.stringMatching(/^[A-Za-z0-9_-]{1,70}$/),
        fc.constantFrom('', '..', '%2e%2e', '../..', '%00', 'a'.repeat(65), ' ', '%'),
        fc.string({ maxLength: 10 }),
      );
      const nameish = fc.oneof(
        fc.constantFrom(encodeURIComponent(OUTPUT_NAME), OUTPUT_NAME, 'r%C3%A9sum%C3%A9%201.csv', '%', '%zz', '%E0%A4%A', '%ED%A0%80', '%C0%AF', '%00', '..', '%2E%2E', '..%2F..%2Fetc%2Fpasswd', '%2F', '%5C', 'a%0Ab', 'x'.repeat(5000)),
        fc.string({ unit: 'binary', maxLength: 20 }).map((s) => encodeURIComponent(s)),
        fc.string({ maxLength: 20 }),
      );
      const uri = fc.oneof(
        runIdish.map((x) => `pier://runs/${x}/log`),
        fc.tuple(runIdish, nameish).map(([x, y]) => `pier://runs/${x}/outputs/${y}`),
        fc.constantFrom('pier://runs//log', 'PIER://runs/x/log', 'pier://runs/x/log?x=1', 'pier://runs/x/log#f', 'pier://runs/x/outputs/', 'file:///etc/passwd', 'http://127.0.0.1/', '', 'pier:', 'pier://'),
        fc.string(),
        fc.webUrl(),
      );
      for (const who of ['adminWrite', 'adminRead', 'viewerWrite'] as const) {
        await fc.assert(
          fc.asyncProperty(uri, async (u) => {
            const id = ++rpcId;
            const res = await post({ jsonrpc: '2.0', id, method: 'resources/read', params: { uri: u } }, tokens[who]);
            const what = `resources/read ${JSON.stringify(u).slice(0, 200)} as ${who}`;
            const messages = messagesOf(res, what);
            assertNoInternalError(messages, what);
            const m = messages.find((x) => x.id === id) ?? messages[0]!;
            if (m.result) {
              const contents = m.result.contents as { uri: string; text?: string; blob?: string }[];
              assert.ok(Array.isArray(contents) && contents.length === 1, what);
              assert.ok(typeof contents[0]!.text === 'string' || typeof contents[0]!.blob === 'string', what);
              assert.ok(!(who === 'viewerWrite' && u.includes(ids.privateRun!)), `${what}: the viewer read a run of another project`);
            } else if (res.statusCode === 200) {
              assert.ok([-32002, -32600, INVALID_PARAMS].includes(m.error!.code), `${what}: ${JSON.stringify(m.error)}`);
            }
          }),
          { numRuns: 80, includeErrorInReport: true },
        );
      }
      // Explicitly: another project's run is not found for the viewer, and found for the administrator.
      const hidden = await post({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: `pier://runs/${ids.privateRun}/log` } }, tokens.viewerWrite);
      assert.equal(hidden.json().error.code, -32002);
      const shown = await post({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: `pier://runs/${ids.privateRun}/log` } }, tokens.adminRead);
      assert.equal(shown.json().result.contents[0].text, '');
    });

    test('raw protocol: malformed bodies, arbitrary JSON, messages and batches never get a 5xx or an internal error', async () => {
      const methods = fc.oneof(
        fc.constantFrom('tools/call', 'tools/list', 'resources/read', 'resources/list', 'resources/templates/list', 'ping', 'initialize', 'prompts/list', 'prompts/get', 'logging/setLevel',
          'completion/complete', 'notifications/initialized', 'notifications/cancelled', 'tasks/list', 'rpc.discover', '', 'TOOLS/LIST', '__proto__', 'constructor'),
        fc.string({ maxLength: 20 }),
      );
      const toolName = fc.oneof(fc.constantFrom(...TOOLS.map((t) => t.name)), fc.constantFrom('', 'x', '__proto__', 'toString', 'wait_for_run\u0000'), fc.string({ maxLength: 10 }));
      const params = fc.oneof(
        fc.record({ name: toolName, arguments: fc.dictionary(fc.string({ maxLength: 8 }), anyValue, { maxKeys: 3 }) }, { requiredKeys: ['name'] }),
        fc.record({ uri: fc.oneof(fc.string(), fc.constant(`pier://runs/${ids.failedRun}/log`)), cursor: fc.string() }, { requiredKeys: [] }),
        fc.record({ _meta: fc.record({ progressToken: fc.oneof(fc.string(), fc.integer(), fc.jsonValue()) }) }),
        fc.jsonValue({ maxDepth: 2 }),
      );
      const message = fc.record(
        { jsonrpc: fc.oneof({ weight: 5, arbitrary: fc.constant('2.0') }, { weight: 1, arbitrary: anyValue }), id: fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.constant(null), fc.jsonValue({ maxDepth: 1 })), method: methods, params },
        { requiredKeys: ['jsonrpc', 'method'] },
      );
      const body = fc.oneof(
        { weight: 3, arbitrary: message.map((m) => JSON.stringify(m)) },
        { weight: 2, arbitrary: fc.array(message, { maxLength: 5 }).map((b) => JSON.stringify(b)) },
        { weight: 2, arbitrary: fc.jsonValue().map((v) => JSON.stringify(v) ?? 'null') },
        { weight: 2, arbitrary: fc.tuple(message, fc.nat()).map(([m, cut]) => JSON.stringify(m).slice(0, cut % 40)) },
        { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
        { weight: 1, arbitrary: fc.constantFrom('', ' ', '{', '[', '[]', '{}', 'null', '"x"', '1e400', '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"__proto__":{}}}', '\u0000', '{"jsonrpc":"2.0","id":1e400,"method":"ping"}') },
        { weight: 1, arbitrary: fc.integer({ min: 101, max: 120 }).map((n) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' })))) },
      );
      for (const who of ['adminWrite', 'viewerWrite'] as const) {
        const before = who === 'viewerWrite' ? await snapshot() : null;
        await fc.assert(
          fc.asyncProperty(body, async (b) => {
            const res = await post(b, tokens[who]);
            const what = `POST /mcp ${b.slice(0, 300)}`;
            assertNoInternalError(messagesOf(res, what), what);
          }),
          { numRuns: 300, includeErrorInReport: true },
        );
        if (before) assert.deepEqual(await snapshot(), before);
      }
    });

    test('raw protocol: content types, Accept, protocol versions, methods and credentials', async () => {
      const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
      const header = (values: (string | undefined)[]) => fc.oneof(fc.constantFrom(...values), fc.string({ unit: 'binary-ascii', maxLength: 30 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')));
      const variant = fc.record({
        contentType: header([undefined, 'application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'application/jsonx', 'application/vnd.api+json', 'APPLICATION/JSON', 'application/json;;', 'text/event-stream', '']),
        accept: header([undefined, 'application/json, text/event-stream', 'application/json', 'text/event-stream', '*/*', 'text/html', '']),
        version: header([undefined, '2025-11-25', '2025-06-18', '2024-11-05', '1999-01-01', 'latest', '']),
        auth: fc.constantFrom('write', 'read', 'viewer', 'jwt', 'apikey', 'none', 'garbage', 'basic'),
        method: fc.constantFrom('POST', 'POST', 'POST', 'GET', 'DELETE', 'PUT', 'PATCH', 'OPTIONS', 'HEAD'),
        origin: fc.constantFrom(undefined, undefined, 'http://evil.example', 'null', 'http://runner.test'),
        body: fc.oneof(fc.constant(ping), fc.constant(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_projects', arguments: {} } })), fc.constant('a=b'), fc.constant('')),
      });
      await fc.assert(
        fc.asyncProperty(variant, async (v) => {
          const authorization = {
            write: `Bearer ${tokens.adminWrite}`, read: `Bearer ${tokens.adminRead}`, viewer: `Bearer ${tokens.viewerWrite}`, jwt: `Bearer ${admin}`,
            apikey: `ApiKey ${API_KEY}`, none: undefined, garbage: 'Bearer rnr_pat_%00\u00ff', basic: `Basic ${Buffer.from('a:\u0000').toString('base64')}`,
          }[v.auth];
          const headers: Record<string, string> = {};
          if (v.contentType !== undefined) headers['content-type'] = v.contentType;
          if (v.accept !== undefined) headers.accept = v.accept;
          if (v.version !== undefined) headers['mcp-protocol-version'] = v.version;
          if (v.origin !== undefined) headers.origin = v.origin;
          if (authorization !== undefined) headers.authorization = authorization;
          const hasBody = !['GET', 'HEAD', 'OPTIONS'].includes(v.method);
          // From an address of its own: rejected credentials are rate limited per address (429), which must not lock out the other tests.
          const res = await inject({ method: v.method as InjectOptions['method'], url: '/mcp', headers, remoteAddress: '192.0.2.77', ...(hasBody ? { payload: v.body } : {}) });
          const what = `${v.method} /mcp ${JSON.stringify(v)}`;
          assert.ok(res.statusCode < 500, `${what}: HTTP ${res.statusCode} ${res.body.slice(0, 300)}`);
          if (v.auth === 'none' && v.method === 'POST' && res.statusCode !== 429) {
            assert.equal(res.statusCode, 401, what);
            assert.match(String(res.headers['www-authenticate']), /resource_metadata=/);
          }
          if (v.method === 'POST' && res.statusCode !== 404) assertNoInternalError(messagesOf(res, what), what);
          // Only a credential MCP accepts, from no foreign origin, gets an answer.
          if (res.statusCode === 200) {
            assert.ok(['write', 'read', 'viewer'].includes(v.auth), `${what}: answered for ${v.auth}`);
            assert.ok(v.origin === undefined || v.origin === 'http://runner.test', `${what}: answered a foreign origin`);
          }
        }),
        { numRuns: 400, includeErrorInReport: true },
      );
    });

    test('the server still answers tools/list and a normal call afterwards', async () => {
      assert.deepEqual(await toolNames('adminWrite'), TOOLS.map((t) => t.name).sort());
      assert.deepEqual(await toolNames('adminRead'), TOOLS.filter((t) => !WRITE_TOOLS.has(t.name)).map((t) => t.name).sort());
      assert.deepEqual(await toolNames('viewerWrite'), TOOLS.filter((t) => t.name !== 'list_executors').map((t) => t.name).sort());
      const { answer } = await callTool(TOOLS.find((t) => t.name === 'list_projects')!, {}, 'viewerWrite');
      assert.deepEqual((answer.result!.structuredContent as { projects: { id: string }[] }).projects.map((p) => p.id), [ids.projectP]);
    });
  });
}

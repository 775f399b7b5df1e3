import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { dialects, tempDir } from '../helpers/db.js';
import { bearer, knwfWithConfigurationNodes, multipart, type TestRunner } from './helpers.js';
import { api, listeningRunner, login, mcpClient, PASSWORD, personalToken, rawMcp, setupAdmin, startExecutor } from './mcp-helpers.js';

/**
 * What the executor runs: a few log lines, a text and a binary output, and a failure with an
 * error line when mode is "thorough".
 */
const COMMAND =
  'echo "rows={param.rows} mode={param.mode}"; echo "step 1"; sleep 1; echo "step 2"; ' +
  "printf '%s' {param.rows} > {out}/result.txt; printf '\\001\\002\\000\\377' > {out}/data.bin; " +
  'if [ "{param.mode}" = "thorough" ]; then echo "ERROR: thorough mode failed on purpose"; exit 3; fi; echo done';

const READ_TOOLS = ['get_run', 'list_projects', 'list_runs', 'list_schedules', 'list_workflows', 'read_run_log'];
const WRITE_TOOLS = ['cancel_run', 'rerun_run', 'set_schedule_enabled', 'start_run', 'wait_for_run'];

// biome-ignore lint/suspicious/noExplicitAny: structured content is checked by the SDK against the tool's output schema
type Structured = Record<string, any>;

interface Called {
  isError?: boolean;
  content: { type: string; text?: string; uri?: string }[];
  structured: Structured;
  text: string;
}

async function call(client: Client, name: string, args: Record<string, unknown>, onprogress?: (p: { progress: number; message?: string }) => void): Promise<Called> {
  const result = await client.callTool({ name, arguments: args }, undefined, onprogress ? { onprogress, timeout: 120_000 } : undefined);
  const content = result.content as Called['content'];
  return { isError: result.isError as boolean | undefined, content, structured: result.structuredContent as Structured, text: content[0]?.text ?? '' };
}

for (const target of dialects()) {
  describe(`MCP endpoint with the SDK's client and a real executor (${target.name})`, { timeout: 240_000 }, () => {
    let db: { url: string; drop(): Promise<void> };
    let runner: TestRunner;
    let base: string;
    let executor: ChildProcess;
    let adminJwt: string;
    let projectId: string;
    let workflowId: string;
    let scheduleId: string;
    const tokens: Record<'adminWrite' | 'editorWrite' | 'editorRead' | 'viewerWrite', { id: string; token: string }> = {} as never;
    const clients: Client[] = [];
    const client = async (token: string) => {
      const c = await mcpClient(base, token);
      clients.push(c);
      return c;
    };
    const runCount = async () => (await api<{ items: unknown[] }>(base, adminJwt, 'GET', '/api/runs?limit=100', undefined, 200)).items.length;

    before(async () => {
      db = await target.create();
      ({ runner, base } = await listeningRunner({ databaseUrl: db.url }));
      adminJwt = await setupAdmin(base);
      const ids: Record<string, string> = {};
      for (const email of ['editor@example.com', 'viewer@example.com']) ids[email] = (await api(base, adminJwt, 'POST', '/api/users', { email, password: PASSWORD }, 201)).id;
      projectId = (await api(base, adminJwt, 'POST', '/api/projects', { name: 'Reports' }, 201)).id;
      await api(base, adminJwt, 'PUT', `/api/projects/${projectId}/members/${ids['editor@example.com']}`, { role: 'editor' }, 200);
      await api(base, adminJwt, 'PUT', `/api/projects/${projectId}/members/${ids['viewer@example.com']}`, { role: 'viewer' }, 200);
      const m = multipart([{ name: 'name', value: 'Monthly report' }, { name: 'file', file: knwfWithConfigurationNodes() }]);
      const wf = await fetch(`${base}/api/projects/${projectId}/workflows`, { method: 'POST', headers: { ...bearer(adminJwt), ...m.headers }, body: new Uint8Array(m.payload) });
      assert.equal(wf.status, 201);
      workflowId = ((await wf.json()) as { id: string }).id;
      scheduleId = (await api(base, adminJwt, 'POST', `/api/workflows/${workflowId}/schedules`, { cron: '30 6 * * MON-FRI', timeZone: 'Europe/Berlin', name: 'weekday' }, 201)).id;
      const editorJwt = await login(base, 'editor@example.com');
      const viewerJwt = await login(base, 'viewer@example.com');
      tokens.adminWrite = await personalToken(base, adminJwt, 'write');
      tokens.editorWrite = await personalToken(base, editorJwt, 'write');
      tokens.editorRead = await personalToken(base, editorJwt, 'read');
      tokens.viewerWrite = await personalToken(base, viewerJwt, 'write');
      executor = startExecutor(base, tempDir('pier-mcp-exec-'), COMMAND);
    });
    after(async () => {
      for (const c of clients) await c.close().catch(() => undefined);
      executor?.kill('SIGTERM');
      await runner?.close();
      await db?.drop();
    });

    test('the token decides the tools: read sees read-only tools, write adds the rest, administrators see executors', async () => {
      const names = async (token: string) => (await (await client(token)).listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(await names(tokens.editorRead.token), READ_TOOLS);
      assert.deepEqual(await names(tokens.editorWrite.token), [...READ_TOOLS, ...WRITE_TOOLS].sort());
      assert.deepEqual(await names(tokens.adminWrite.token), [...READ_TOOLS, ...WRITE_TOOLS, 'list_executors'].sort());
      const tools = (await (await client(tokens.adminWrite.token)).listTools()).tools;
      for (const t of tools) {
        assert.equal(t.inputSchema.type, 'object', t.name);
        assert.equal(t.outputSchema?.type, 'object', t.name);
        assert.ok(t.description && t.description.length > 40, t.name);
        assert.equal(typeof t.annotations?.readOnlyHint, 'boolean', t.name);
        assert.equal(typeof t.annotations?.destructiveHint, 'boolean', t.name);
        assert.equal(typeof t.annotations?.idempotentHint, 'boolean', t.name);
      }
      assert.equal(tools.find((t) => t.name === 'cancel_run')?.annotations?.destructiveHint, true);
      assert.equal(tools.find((t) => t.name === 'get_run')?.annotations?.readOnlyHint, true);
    });

    test('projects and workflows with their declared parameters', async () => {
      const c = await client(tokens.editorRead.token);
      const projects = await call(c, 'list_projects', {});
      assert.deepEqual(projects.structured.projects.map((p: Structured) => [p.name, p.role]), [['Reports', 'editor']]);
      assert.match(projects.text, /Reports \(editor; 1 workflows/);
      const workflows = await call(c, 'list_workflows', { projectId });
      const [wf] = workflows.structured.workflows;
      assert.equal(wf.name, 'Monthly report');
      assert.deepEqual(
        wf.declaredParameters.map((d: Structured) => [d.name, d.type]).sort(),
        [['dry', 'boolean'], ['mode', 'string'], ['ratio', 'number'], ['rows', 'integer'], ['title', 'string']],
      );
      assert.deepEqual(wf.declaredParameters.find((d: Structured) => d.name === 'mode').choices, ['fast', 'thorough']);
      assert.match(workflows.text, /rows: integer -2147483648\.\.2147483647 = 100/);
      assert.deepEqual((await call(c, 'list_workflows', {})).structured.workflows.map((w: Structured) => w.id), [workflowId], 'every project the caller sees');
    });

    test('start a run, wait for it with progress, read it, its log and its outputs', async () => {
      const c = await client(tokens.editorWrite.token);
      const refused = await call(c, 'start_run', { workflowId, parameters: { rows: 'many' } });
      assert.equal(refused.isError, true);
      assert.match(refused.text, /parameters\/rows/);
      const started = await call(c, 'start_run', { workflowId, parameters: { rows: 7, mode: 'fast' } });
      assert.equal(started.isError, undefined);
      const runId = started.structured.run.id;
      assert.equal(started.structured.run.status, 'queued');
      const progress: { progress: number; message?: string }[] = [];
      const waited = await call(c, 'wait_for_run', { runId, timeoutSeconds: 60 }, (p) => progress.push(p));
      assert.equal(waited.structured.finished, true, waited.text);
      assert.equal(waited.structured.run.status, 'succeeded', waited.text);
      assert.ok(progress.length >= 1, 'progress notifications while it ran');
      assert.match(progress[0]!.message ?? '', /(queued|running), attempt/);

      const got = await call(c, 'get_run', { runId });
      assert.equal(got.structured.run.exitCode, 0);
      assert.equal(got.structured.maxAttempts, 3);
      assert.deepEqual(got.structured.outputs.map((o: Structured) => [o.name, o.size]), [['data.bin', 4], ['result.txt', 1]]);
      const links = got.content.filter((x) => x.type === 'resource_link').map((x) => x.uri);
      assert.deepEqual(links, [`pier://runs/${runId}/log`, `pier://runs/${runId}/outputs/data.bin`, `pier://runs/${runId}/outputs/result.txt`]);

      const tail = await call(c, 'read_run_log', { runId, tailLines: 2 });
      assert.deepEqual(tail.structured.lines, ['step 2', 'done']);
      assert.equal(tail.structured.truncated, true);
      const whole = await call(c, 'read_run_log', { runId });
      assert.deepEqual(whole.structured.lines.slice(0, 2), ['rows=7 mode=fast', 'step 1']);

      const log = await c.readResource({ uri: `pier://runs/${runId}/log` });
      assert.match(String((log.contents[0] as { text: string }).text), /^rows=7 mode=fast\nstep 1\nstep 2\ndone\n$/m);
      const text = await c.readResource({ uri: `pier://runs/${runId}/outputs/result.txt` });
      assert.equal((text.contents[0] as { text: string }).text, '7');
      const blob = await c.readResource({ uri: `pier://runs/${runId}/outputs/data.bin` });
      assert.deepEqual([...Buffer.from((blob.contents[0] as { blob: string }).blob, 'base64')], [1, 2, 0, 255]);
      assert.equal(blob.contents[0]!.mimeType, 'application/octet-stream');
      const listed = await c.listResources();
      assert.ok(listed.resources.some((r) => r.uri === `pier://runs/${runId}/log`));
      const templates = await c.listResourceTemplates();
      assert.deepEqual(templates.resourceTemplates.map((t) => t.uriTemplate), ['pier://runs/{runId}/log', 'pier://runs/{runId}/outputs/{name}']);
      await assert.rejects(c.readResource({ uri: `pier://runs/${runId}/outputs/missing.txt` }), /-32002|no output/);
      await assert.rejects(c.readResource({ uri: 'file:///etc/passwd' }), /-32002|no such resource/);
    });

    test('a failed run: why it failed, from its error lines, then a re-run', async () => {
      const c = await client(tokens.editorWrite.token);
      const runId = (await call(c, 'start_run', { workflowId, parameters: { rows: 3, mode: 'thorough' } })).structured.run.id;
      const waited = await call(c, 'wait_for_run', { runId, timeoutSeconds: 90 });
      assert.equal(waited.structured.run.status, 'failed', waited.text);
      const errors = await call(c, 'read_run_log', { runId, errorsOnly: true });
      assert.deepEqual(errors.structured.lines, ['ERROR: thorough mode failed on purpose']);
      assert.match(errors.text, /1 error lines/);
      const failed = await call(c, 'list_runs', { status: 'failed', workflowId });
      assert.deepEqual(failed.structured.runs.map((r: Structured) => r.id), [runId]);
      const again = await call(c, 'rerun_run', { runId, parameters: { mode: 'fast' } });
      assert.equal(again.isError, undefined, again.text);
      assert.notEqual(again.structured.run.id, runId);
      // The declared defaults fill what the first run was not given.
      assert.deepEqual(again.structured.run.parameters, { rows: 3, mode: 'fast', dry: true, ratio: 0.25, title: 'Monthly <b>report</b>' });
      const done = await call(c, 'wait_for_run', { runId: again.structured.run.id, timeoutSeconds: 60 });
      assert.equal(done.structured.run.status, 'succeeded', done.text);
    });

    test('cancel a queued run; a finished one cannot be cancelled or waited longer', async () => {
      const c = await client(tokens.editorWrite.token);
      // No executor has this label: the run stays queued.
      const runId = (await call(c, 'start_run', { workflowId, parameters: { rows: 1 }, requiredLabels: ['gpu-nowhere'] })).structured.run.id;
      const timedOut = await call(c, 'wait_for_run', { runId, timeoutSeconds: 1 });
      assert.equal(timedOut.structured.finished, false);
      assert.match(timedOut.text, /Still queued after 1 s/);
      const cancelled = await call(c, 'cancel_run', { runId });
      assert.equal(cancelled.structured.run.status, 'cancelled');
      const again = await call(c, 'cancel_run', { runId });
      assert.equal(again.isError, true);
      assert.match(again.text, /409 run_finished/);
      const rerunQueued = await call(c, 'rerun_run', { runId: (await call(c, 'start_run', { workflowId, requiredLabels: ['gpu-nowhere'] })).structured.run.id });
      assert.match(rerunQueued.text, /409 run_not_finished/);
    });

    test('schedules with their next fire times, enabled and disabled', async () => {
      const c = await client(tokens.editorWrite.token);
      const listed = await call(c, 'list_schedules', { workflowId });
      const [s] = listed.structured.schedules;
      assert.equal(s.description, 'At 06:30, on Monday through Friday');
      assert.equal(s.nextFireTimes.length, 1, 'a list gives the stored next fire only');
      assert.equal(listed.structured.nextCursor, null, 'one page holds them all');
      // Paged like list_runs: a limit, and nextCursor as cursor for the next page.
      const second = (await api(base, adminJwt, 'POST', `/api/workflows/${workflowId}/schedules`, { cron: '0 12 * * *', name: 'noon' }, 201)).id;
      const first = await call(c, 'list_schedules', { workflowId, limit: 1 });
      assert.equal(first.structured.schedules.length, 1);
      assert.match(first.text, /more: pass nextCursor as cursor/);
      const next = await call(c, 'list_schedules', { workflowId, limit: 1, cursor: first.structured.nextCursor });
      assert.equal(next.structured.nextCursor, null);
      // Both pages together hold each schedule once (two made in one clock tick are ordered by id).
      const paged = [...first.structured.schedules, ...next.structured.schedules].map((x: { id: string }) => x.id);
      assert.deepEqual(paged.sort(), [scheduleId, second].sort());
      const bad = await call(c, 'list_schedules', { workflowId, cursor: 'not-a-cursor' });
      assert.equal(bad.isError, true);
      assert.match(bad.text, /cursor/);
      await api(base, adminJwt, 'DELETE', `/api/schedules/${second}`, undefined, 204);
      const off = await call(c, 'set_schedule_enabled', { scheduleId, enabled: false });
      assert.equal(off.structured.schedule.enabled, false);
      assert.deepEqual(off.structured.schedule.nextFireTimes, []);
      assert.equal((await api(base, adminJwt, 'GET', `/api/schedules/${scheduleId}`, undefined, 200)).enabled, false, 'the REST API sees the change');
      const on = await call(c, 'set_schedule_enabled', { scheduleId, enabled: true });
      assert.equal(on.structured.schedule.nextFireTimes.length, 5);
    });

    test('executors for administrators only', async () => {
      const admin = await call(await client(tokens.adminWrite.token), 'list_executors', {});
      assert.deepEqual(admin.structured.executors.map((e: Structured) => [e.name, e.status]), [['mcp-executor', 'online']]);
      const res = await rawMcp(base, tokens.editorWrite.token, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'list_executors', arguments: {} } });
      assert.equal(res.status, 403);
      assert.match(((await res.json()) as { error: { message: string } }).error.message, /needs an administrator/);
    });

    test('a read-only token cannot call a write tool: 403 with the scope to ask for, nothing changed', async () => {
      const before = await runCount();
      const c = await client(tokens.editorRead.token);
      const err = await c.callTool({ name: 'start_run', arguments: { workflowId } }).then(() => null, (e: unknown) => e);
      assert.ok(err instanceof StreamableHTTPError, String(err));
      assert.equal(err.code, 403);
      assert.match(err.message, /start_run needs a token with the \\?"write\\?" scope/);
      const res = await rawMcp(base, tokens.editorRead.token, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'set_schedule_enabled', arguments: { scheduleId, enabled: false } } });
      assert.equal(res.status, 403);
      assert.match(res.headers.get('www-authenticate') ?? '', /error="insufficient_scope", scope="write", resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"/);
      assert.equal(((await res.json()) as { id: number }).id, 4);
      assert.equal(await runCount(), before);
      assert.equal((await api(base, adminJwt, 'GET', `/api/schedules/${scheduleId}`, undefined, 200)).enabled, true);
    });

    test('a viewer cannot start, cancel or re-run runs: a clear tool error, nothing changed', async () => {
      const before = await runCount();
      const c = await client(tokens.viewerWrite.token);
      for (const [name, args] of [
        ['start_run', { workflowId }],
        ['set_schedule_enabled', { scheduleId, enabled: false }],
      ] as const) {
        const r = await call(c, name, args);
        assert.equal(r.isError, true, name);
        assert.match(r.text, /403 project_role: your role "viewer"/, name);
      }
      const runs = (await call(c, 'list_runs', {})).structured.runs;
      assert.ok(runs.length > 0, 'a viewer reads runs');
      const r = await call(c, 'rerun_run', { runId: runs[0].id });
      assert.match(r.text, /403 project_role/);
      assert.equal(await runCount(), before);
    });

    test('held work is bounded: no batches, at most 8 waits at once per user', async () => {
      const batch = await rawMcp(base, tokens.editorRead.token, [{ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { jsonrpc: '2.0', id: 2, method: 'ping' }]);
      assert.equal(batch.status, 400);
      assert.equal(((await batch.json()) as { error: { code: number } }).error.code, -32600);
      const c = await client(tokens.editorWrite.token);
      const runId = (await call(c, 'start_run', { workflowId, requiredLabels: ['gpu-nowhere'] })).structured.run.id;
      const waits = await Promise.all(Array.from({ length: 9 }, () => call(c, 'wait_for_run', { runId, timeoutSeconds: 2 })));
      const refused = waits.filter((w) => w.isError);
      assert.equal(refused.length, 1, waits.map((w) => w.text).join('\n'));
      assert.match(refused[0]!.text, /429 too_many_calls: at most 8 wait_for_run calls/);
      assert.equal((await call(c, 'wait_for_run', { runId, timeoutSeconds: 1 })).structured.finished, false, 'places are given back');
      await call(c, 'cancel_run', { runId });
    });

    test('a revoked token fails the next call; web sessions and foreign origins are refused', async () => {
      const jwt = await login(base, 'editor@example.com');
      const t = await personalToken(base, jwt, 'read');
      const c = await client(t.token);
      assert.equal((await call(c, 'list_projects', {})).structured.projects.length, 1);
      await api(base, jwt, 'DELETE', `/api/tokens/${t.id}`, undefined, 204);
      const err = await c.callTool({ name: 'list_projects', arguments: {} }).then(() => null, (e: unknown) => e);
      assert.ok(err instanceof StreamableHTTPError && err.code === 401, String(err));

      const session = await rawMcp(base, jwt, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
      assert.equal(session.status, 403);
      const foreign = await rawMcp(base, tokens.editorRead.token, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { origin: 'https://evil.example' });
      assert.equal(foreign.status, 403);
      const own = await rawMcp(base, tokens.editorRead.token, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { origin: base });
      assert.equal(own.status, 200);
      const get = await fetch(`${base}/mcp`, { headers: { ...bearer(tokens.editorRead.token), accept: 'text/event-stream' } });
      assert.equal(get.status, 405);
      const none = await rawMcp(base, null, { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} });
      assert.equal(none.status, 401);
      assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer realm="runner", resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"/);
    });
  });
}

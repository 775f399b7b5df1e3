import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { InvalidGrantError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Browser as Chromium } from 'playwright-core';
import { dialects, tempDir } from '../helpers/db.js';
import { needsTool } from '../helpers/tools.js';
import { bearer, makeZip, multipart, startRunner, type TestRunner } from './helpers.js';
import { api, MemoryOAuthProvider, PASSWORD, listeningRunner, setupAdmin } from './mcp-helpers.js';
import { Browser, consent } from './oauth-helpers.js';
import { launchChromium } from './ui/harness.js';

const EMAIL = 'admin@example.com';
const REDIRECT = 'http://127.0.0.1:5555/callback';

/**
 * An MCP client connecting on its own, as an assistant does: the 401 names the protected-resource
 * metadata, which names the authorization server; it registers, sends the user to the consent
 * screen with PKCE, exchanges the code, and calls tools. Until the user has approved, connecting
 * ends in UnauthorizedError with the consent URL handed to the provider.
 */
async function connectWithConsent(
  mcpUrl: string,
  fetchFn: typeof fetch,
  provider: MemoryOAuthProvider,
  approve: (authorizationUrl: URL) => Promise<string>,
): Promise<Client> {
  const first = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider, fetch: fetchFn });
  await assert.rejects(new Client({ name: 'assistant', version: '1' }).connect(first), UnauthorizedError);
  const url = provider.authorizationUrls.at(-1)!;
  assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
  assert.equal(url.searchParams.get('resource'), mcpUrl, 'RFC 8707: the resource from the MCP metadata');
  const location = new URL(await approve(url));
  const code = location.searchParams.get('code');
  assert.ok(code, location.href);
  await first.finishAuth(code);
  const client = new Client({ name: 'assistant', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider, fetch: fetchFn }));
  return client;
}

for (const target of dialects()) {
  describe(`MCP clients authorize themselves, behind one URL served by two instances (${target.name})`, { timeout: 120_000 }, () => {
    const RUNNER_URL = 'http://pier.test';
    let db: { url: string; drop(): Promise<void> };
    let storage: string;
    let a: TestRunner;
    let b: TestRunner;
    const origins: string[] = [];
    const served: Record<string, number> = {};
    let turn = 0;
    // A load balancer: each request goes to the next instance in turn.
    const balancer: typeof fetch = async (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      assert.equal(url.origin, RUNNER_URL, 'the client only talks to the discovered server');
      const origin = origins[turn++ % origins.length]!;
      served[origin] = (served[origin] ?? 0) + 1;
      return fetch(origin + url.pathname + url.search, input instanceof Request ? input : init);
    };
    let jwt: string;
    let workflowId: string;

    before(async () => {
      db = await target.create();
      storage = tempDir('pier-mcp-storage-');
      const env = { RUNNER_URL, RUNNER_STORAGE_DIR: storage, PIER_LOG_LEVEL: 'silent' };
      a = await startRunner({ databaseUrl: db.url, env });
      b = await startRunner({ databaseUrl: db.url, env });
      for (const r of [a, b]) {
        await r.service.app.listen({ host: '127.0.0.1', port: 0 });
        origins.push(`http://127.0.0.1:${(r.service.app.server.address() as { port: number }).port}`);
      }
      jwt = await setupAdmin(origins[0]!, EMAIL);
      const project = await api(origins[1]!, jwt, 'POST', '/api/projects', { name: 'Shared' }, 201);
      const m = multipart([{ name: 'file', file: makeZip() }]);
      const wf = await fetch(`${origins[0]}/api/projects/${project.id}/workflows`, { method: 'POST', headers: { ...bearer(jwt), ...m.headers }, body: new Uint8Array(m.payload) });
      workflowId = ((await wf.json()) as { id: string }).id;
    });
    after(async () => {
      await a?.close();
      await b?.close();
      await db?.drop();
      fs.rmSync(storage, { recursive: true, force: true });
    });

    test('discovery from the 401, registration, PKCE, consent, tools on both instances; revoking the app ends it on both', async () => {
      const provider = new MemoryOAuthProvider(REDIRECT);
      const browser = new Browser(balancer as (url: string, init?: RequestInit) => Promise<Response>);
      const client = await connectWithConsent(`${RUNNER_URL}/mcp`, balancer, provider, (url) => consent(browser, RUNNER_URL, url.href, { email: EMAIL }));
      assert.match(provider.info?.client_id ?? '', /^rnr_cid_/, 'registered dynamically');
      assert.match(provider.saved?.access_token ?? '', /^rnr_oat_/);
      // The SDK asks for every scope the metadata lists: write (which implies read).
      assert.equal(provider.saved?.scope, 'write');
      const tools = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('start_run') && tools.includes('list_runs'));

      // Several calls, alternating instances: one stateless client served by both.
      const before = { ...served };
      const started = await client.callTool({ name: 'start_run', arguments: { workflowId } });
      const runId = (started.structuredContent as { run: { id: string } }).run.id;
      for (let i = 0; i < 4; i++) {
        const got = await client.callTool({ name: 'get_run', arguments: { runId } });
        assert.equal((got.structuredContent as { run: { id: string } }).run.id, runId);
      }
      for (const o of origins) assert.ok((served[o] ?? 0) - (before[o] ?? 0) >= 2, `instance ${o} served calls`);

      // Connected apps show the assistant like any OAuth client; revoking it ends its access at once.
      const apps = await api<{ items: { id: string; name: string; scope: string }[] }>(origins[0]!, jwt, 'GET', '/api/connected-apps', undefined, 200);
      assert.deepEqual(apps.items.map((x) => [x.name, x.scope]), [['Test assistant', 'write']]);
      await api(origins[1]!, jwt, 'DELETE', `/api/connected-apps/${apps.items[0]!.id}`, undefined, 204);
      for (let i = 0; i < 2; i++) {
        // The client's own refresh fails too (the grant is gone), so each call ends unauthorized.
        const err = await client.callTool({ name: 'list_projects', arguments: {} }).then(() => null, (e: unknown) => e);
        assert.ok(err instanceof InvalidGrantError || err instanceof UnauthorizedError || (err instanceof StreamableHTTPError && err.code === 401), `call ${i}: ${String(err)}`);
      }
      const token = provider.saved!.access_token;
      for (const o of origins) {
        const res = await fetch(`${o}/mcp`, {
          method: 'POST',
          headers: { ...bearer(token), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        });
        assert.equal(res.status, 401, `revoked on ${o}`);
      }
    });

    test('the user approves read only: read tools only; a write call is refused with the scope to ask for, and changes nothing', async () => {
      const provider = new MemoryOAuthProvider(REDIRECT);
      const browser = new Browser(balancer as (url: string, init?: RequestInit) => Promise<Response>);
      const client = await connectWithConsent(`${RUNNER_URL}/mcp`, balancer, provider, (url) => {
        assert.equal(url.searchParams.get('scope'), 'read write');
        return consent(browser, RUNNER_URL, url.href, { email: EMAIL, decision: 'approve-read' });
      });
      assert.equal(provider.saved?.scope, 'read');
      const tools = (await client.listTools()).tools;
      assert.ok(tools.every((t) => t.annotations?.readOnlyHint === true), tools.map((t) => t.name).join());
      const runsBefore = (await api<{ items: unknown[] }>(origins[0]!, jwt, 'GET', '/api/runs', undefined, 200)).items.length;
      const err = await client.callTool({ name: 'start_run', arguments: { workflowId } }).then(() => null, (e: unknown) => e);
      // MCP scope challenge: the SDK reads the 403's scope and tries to step up; with a refresh
      // token it refreshes (the grant stays read, RFC 6749 §6) and gives up on the second 403.
      assert.ok(err instanceof StreamableHTTPError && err.code === 403, String(err));
      const apps = await api<{ items: { scope: string }[] }>(origins[0]!, jwt, 'GET', '/api/connected-apps', undefined, 200);
      assert.deepEqual(apps.items.map((x) => x.scope), ['read']);
      assert.equal((await api<{ items: unknown[] }>(origins[0]!, jwt, 'GET', '/api/runs', undefined, 200)).items.length, runsBefore);
    });
  });
}

describe('MCP consent through the real pages in Chromium', { skip: needsTool('chromium').skip, timeout: 60_000 }, () => {
  let chromium: Chromium;
  let runner: TestRunner;
  let base: string;
  before(async () => {
    chromium = await launchChromium();
    ({ runner, base } = await listeningRunner());
    await setupAdmin(base, EMAIL);
  });
  after(async () => {
    await chromium?.close();
    await runner?.close();
  });

  test('the user signs in, reads what the assistant asks for, approves; the assistant lists projects', async () => {
    const provider = new MemoryOAuthProvider(REDIRECT);
    const page = await chromium.newPage();
    let landed: URL | null = null;
    await page.route('http://127.0.0.1:5555/**', (route) => {
      landed = new URL(route.request().url());
      return route.fulfill({ status: 200, contentType: 'text/html', body: '<p>connected</p>' });
    });
    const client = await connectWithConsent(`${base}/mcp`, fetch, provider, async (url) => {
      await page.goto(url.href);
      await page.getByLabel('Email').fill(EMAIL);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('Authorize “Test assistant”?').waitFor();
      assert.match(await page.locator('body').innerText(), /read and change your projects, workflows and runs, and start runs/);
      await page.getByRole('button', { name: 'Approve read only' }).waitFor();
      await page.getByRole('button', { name: 'Approve', exact: true }).click();
      await page.getByText('connected').waitFor();
      assert.ok(landed);
      return (landed as URL).href;
    });
    const projects = await client.callTool({ name: 'list_projects', arguments: {} });
    assert.deepEqual((projects.structuredContent as { projects: unknown[] }).projects, []);
    await client.close();
    await page.close();
  });
});

import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { API_KEY, bearer, SETUP_TOKEN, startRunner, type TestRunner } from './helpers.js';

export const PASSWORD = 'a long enough password';

/** A port free a moment ago: RUNNER_URL must name the port before the runner starts. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A runner listening on loopback at its RUNNER_URL (what MCP clients and executors talk to). */
export async function listeningRunner(opts: { databaseUrl?: string; env?: Record<string, string>; port?: number } = {}): Promise<{ runner: TestRunner; base: string }> {
  const port = opts.port ?? (await freePort());
  const base = `http://127.0.0.1:${port}`;
  const runner = await startRunner({ databaseUrl: opts.databaseUrl, env: { RUNNER_URL: base, PIER_LOG_LEVEL: 'silent', ...opts.env } });
  await runner.service.app.listen({ host: '127.0.0.1', port });
  return { runner, base };
}

/** JSON over HTTP with a JWT or token, asserting the status. */
// biome-ignore lint/suspicious/noExplicitAny: tests read response bodies loosely unless they name a type
export async function api<T = any>(base: string, token: string, method: string, path: string, body?: unknown, status?: number): Promise<T> {
  const res = await fetch(base + path, {
    method,
    headers: { ...bearer(token), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (status !== undefined) assert.equal(res.status, status, `${method} ${path}: ${text}`);
  return (text ? JSON.parse(text) : null) as T;
}

/** The first administrator; answers the web session (JWT). */
export async function setupAdmin(base: string, email = 'admin@example.com'): Promise<string> {
  const res = await fetch(`${base}/api/setup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ setupToken: SETUP_TOKEN, email, password: PASSWORD }),
  });
  assert.equal(res.status, 201, await res.clone().text());
  return ((await res.json()) as { session: { token: string } }).session.token;
}

/** Signs in; answers the web session (JWT). */
export async function login(base: string, email: string): Promise<string> {
  const res = await api<{ token: string }>(base, '', 'POST', '/api/auth/login', { email, password: PASSWORD }, 200);
  return res.token;
}

/** A personal access token of the session's user. */
export async function personalToken(base: string, jwt: string, scope: 'read' | 'write'): Promise<{ id: string; token: string }> {
  return api(base, jwt, 'POST', '/api/tokens', { name: `mcp ${scope}`, scope }, 201);
}

/** The SDK's own client on the Streamable HTTP transport, authenticated by a token as is. */
export async function mcpClient(base: string, token: string): Promise<Client> {
  const client = new Client({ name: 'pier-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: bearer(token) } }));
  return client;
}

/** A raw JSON-RPC POST to /mcp (what a client sends), answering the HTTP response. */
export function rawMcp(base: string, token: string | null, message: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      ...(token ? bearer(token) : {}),
      ...headers,
    },
    body: typeof message === 'string' ? message : JSON.stringify(message),
  });
}

/** `pier runner executor` as a user starts it, running `command` for every run. */
export function startExecutor(base: string, workDir: string, command: string, name = 'mcp-executor'): ChildProcess {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PIER_EXECUTOR_') && k !== 'API_KEY'));
  return spawn(process.execPath, ['bin/pier.js', 'runner', 'executor', '--url', base, '--name', name, '--work-dir', workDir, '--command', command], {
    env: { ...env, PIER_EXECUTOR_API_KEY: API_KEY },
    stdio: 'ignore',
  });
}

/** An MCP client's OAuth state kept in memory, as the SDK asks a client application to keep it. */
export class MemoryOAuthProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  /** Where the client would send the user's browser (the consent screen). */
  authorizationUrls: URL[] = [];

  constructor(
    readonly redirectUrl: string,
    private readonly scope?: string,
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test assistant',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...(this.scope ? { scope: this.scope } : {}),
    };
  }

  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrls.push(url);
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

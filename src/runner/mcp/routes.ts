import type { FastifyReply, FastifyRequest } from 'fastify';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  InitializeRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import pkg from '../../../package.json' with { type: 'json' };
import type { HttpApp } from '../../infra/http.js';
import { toProblem } from '../../infra/http.js';
import { ForbiddenError } from '../../infra/errors.js';
import { challengeFor, insufficientScopeChallenge, MCP_ENDPOINT } from '../auth/access.js';
import { access, userOf } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import { mcpResourceMetadataUrl, MCP_PATH } from '../oauth/metadata.js';
import { createMcpServer, findTool, permits } from './server.js';

/** JSON-RPC 2.0 §5.1: a server error, invalid params, and a request that is not valid JSON. */
const SERVER_ERROR = -32000;
const INVALID_PARAMS = -32602;
const PARSE_ERROR = -32700;

/**
 * The SDK checks a request's params only inside its handler dispatch and answers a mismatch as
 * an internal error (-32603); the requests this server handles are checked here first, so a
 * malformed one is the client's error (-32602), named as such.
 */
const REQUEST_SCHEMAS: Record<string, { safeParse(v: unknown): { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } } }> = {
  initialize: InitializeRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
  'resources/list': ListResourcesRequestSchema,
  'resources/templates/list': ListResourceTemplatesRequestSchema,
  'resources/read': ReadResourceRequestSchema,
};

function paramsProblem(m: RpcMessage): string | null {
  const schema = typeof m.method === 'string' && Object.hasOwn(REQUEST_SCHEMAS, m.method) ? REQUEST_SCHEMAS[m.method] : undefined;
  if (!schema || m.id === undefined) return null;
  const checked = schema.safeParse(m);
  if (checked.success) return null;
  const issue = checked.error?.issues[0];
  return issue ? `${issue.path.map(String).join('/') || '(request)'}: ${issue.message}` : 'invalid params';
}

interface RpcMessage {
  method?: unknown;
  params?: { name?: unknown };
  id?: unknown;
}

function messagesOf(body: unknown): RpcMessage[] {
  const all = Array.isArray(body) ? body : [body];
  return all.filter((m): m is RpcMessage => typeof m === 'object' && m !== null);
}

function toolCalled(m: RpcMessage): string | null {
  return m.method === 'tools/call' && typeof m.params?.name === 'string' ? m.params.name : null;
}

/** A JSON-RPC error answered at the HTTP level (no request id: the message may not have one). */
function rpcError(reply: FastifyReply, status: number, code: number, message: string, data?: unknown, id: unknown = null) {
  return reply.code(status).type('application/json').send({ jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } });
}

/** The caller: MCP_ENDPOINT admits personal and OAuth access tokens only. */
function tokenHolder(req: FastifyRequest) {
  const p = userOf(req);
  if (p.via === 'jwt') throw new ForbiddenError('the web UI session is not accepted here; use a personal access token or an OAuth access token');
  return p;
}

/** Node's header record as Fetch headers (repeated headers joined, RFC 9110 §5.3). */
function fetchHeaders(req: FastifyRequest): Headers {
  const out = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) out.set(k, Array.isArray(v) ? v.join(', ') : v);
  return out;
}

/**
 * `RUNNER_URL/mcp`: the Streamable HTTP transport of the Model Context Protocol, stateless: each
 * POST is served by a fresh SDK server and transport on whichever instance receives it, so any
 * number of instances behind one address serve one client. Requests are authenticated like the
 * REST API (the onRequest hook, MCP_ENDPOINT: personal and OAuth access tokens), and each tool
 * call is checked against that tool's own access declaration.
 */
export async function registerMcpRoutes(app: HttpApp, ctx: RunnerContext): Promise<void> {
  const runnerUrl = ctx.config.runner.url;
  const ownOrigin = new URL(runnerUrl).origin;
  const metadataUrl = mcpResourceMetadataUrl(runnerUrl);

  await app.register(async (mcp) => {
    // Errors of this endpoint in JSON-RPC's shape; a 401 names this endpoint's resource metadata
    // (RFC 9728 §5.1), which is how MCP clients discover the authorization server.
    mcp.setErrorHandler((err, req, reply) => {
      const { problem, headers } = toProblem(err);
      if (problem.status >= 500) req.log.error({ err }, 'request failed');
      if (problem.status === 401) headers['www-authenticate'] = challengeFor(metadataUrl);
      reply.headers(headers);
      return rpcError(reply, problem.status, problem.code === 'malformed_body' ? PARSE_ERROR : SERVER_ERROR, problem.detail, problem);
    });

    const options = { config: access(MCP_ENDPOINT), schema: { hide: true }, bodyLimit: 1024 * 1024 };

    mcp.post(MCP_PATH, options, async (req, reply) => {
      // MCP Streamable HTTP: servers must validate Origin against DNS rebinding. Only pages of
      // the runner itself may call from a browser; other clients send no Origin.
      const origin = req.headers.origin;
      if (origin !== undefined && origin !== ownOrigin) return rpcError(reply, 403, SERVER_ERROR, `requests from the origin ${JSON.stringify(origin.slice(0, 200))} are not accepted`);
      const principal = tokenHolder(req);
      const messages = messagesOf(req.body);
      // MCP authorization (scope challenge): a call beyond the token's scope is 403 with the
      // scope to ask for, before anything runs, so a client can step up with the user's consent.
      for (const m of messages) {
        const tool = findTool(toolCalled(m) ?? '');
        if (tool && !permits(ctx, tool, principal)) {
          if (tool.access.token && principal.scope === 'read' && !tool.access.admins) {
            reply.header('www-authenticate', insufficientScopeChallenge(tool.access.token, metadataUrl));
          }
          const need = tool.access.admins ? 'an administrator' : `a token with the "${tool.access.token}" scope`;
          return rpcError(reply, 403, SERVER_ERROR, `${tool.name} needs ${need}; this token has the "${principal.scope}" scope`, undefined, m.id ?? null);
        }
      }
      for (const m of messages) {
        const problem = paramsProblem(m);
        if (problem) return rpcError(reply, 400, INVALID_PARAMS, `invalid params of ${String(m.method)}: ${problem}`, undefined, m.id ?? null);
      }
      const aborted = new AbortController();
      // A long call (wait_for_run) answers as an event stream that carries its progress; the
      // others answer as plain JSON, which costs less.
      const streams = messages.some((m) => toolCalled(m) === 'wait_for_run');
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !streams });
      const server = createMcpServer({ ctx, principal, recheck: () => ctx.auth.reauthenticate(req), signal: aborted.signal, log: req.log, version: pkg.version });
      reply.raw.on('close', () => {
        aborted.abort();
        void server.close();
      });
      await server.connect(transport);
      return transport.handleRequest(new Request(runnerUrl + MCP_PATH, { method: 'POST', headers: fetchHeaders(req) }), { parsedBody: req.body });
    });

    // Stateless: no stream of server-initiated messages (GET) and no session to end (DELETE).
    const notHere = async (_req: FastifyRequest, reply: FastifyReply) => {
      reply.header('allow', 'POST');
      return rpcError(reply, 405, SERVER_ERROR, 'this MCP server is stateless: send every message as a POST');
    };
    mcp.get(MCP_PATH, options, notHere);
    mcp.delete(MCP_PATH, options, notHere);
  });
}

import type { FastifyReply, FastifyRequest } from 'fastify';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  InitializeRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  type JSONRPCRequest,
  McpError,
  ReadResourceRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import type { HttpApp } from '../../infra/http.js';
import { toProblem } from '../../infra/http.js';
import { ForbiddenError } from '../../infra/errors.js';
import { challengeFor, insufficientScopeChallenge, MCP_ENDPOINT } from '../auth/access.js';
import { access, userOf } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import { mcpResourceMetadataUrl, MCP_PATH } from '../oauth/metadata.js';
import { callTool, createMcpServer, findTool, type McpRequestContext, permits } from './server.js';
import { SharedMcpServer } from './shared-server.js';

/** JSON-RPC 2.0 §5.1: a server error, invalid params, internal error, and a request that is not valid JSON. */
const SERVER_ERROR = -32000;
const INVALID_REQUEST = -32600;
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;
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
  if ((m.params as { task?: unknown } | undefined)?.task !== undefined) return 'params/task: this server runs no tasks (call the tool without task)';
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

/** The one message of a POST (batches are refused before); a body that is no object has no fields. */
function messageOf(body: unknown): RpcMessage {
  return typeof body === 'object' && body !== null ? (body as RpcMessage) : {};
}

function toolCalled(m: RpcMessage): string | null {
  return m.method === 'tools/call' && typeof m.params?.name === 'string' ? m.params.name : null;
}

/** A JSON-RPC error answered at the HTTP level (no request id: the message may not have one). */
function rpcError(reply: FastifyReply, status: number, code: number, message: string, data?: unknown, id: unknown = null) {
  return reply.code(status).type('application/json').send({ jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } });
}

/** The methods the shared server answers; any other goes the checked way (and is refused there). */
const PLAIN_METHODS = new Set(['initialize', 'ping', ...Object.keys(REQUEST_SCHEMAS)]);

/**
 * Params whose `_meta` the SDK's server reads without checking (a progress token of another
 * type leaves the request unanswered there) go the checked way; so does task metadata.
 */
function plainMeta(params: unknown): boolean {
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return false;
  const { _meta: meta, task } = params as { _meta?: unknown; task?: unknown };
  if (task !== undefined) return false;
  if (meta === undefined) return true;
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return false;
  const token = (meta as { progressToken?: unknown }).progressToken;
  return (token === undefined || typeof token === 'string' || Number.isSafeInteger(token)) && Object.keys(meta).every((k) => k === 'progressToken');
}

/**
 * The request when it is one JSON-RPC request (not a batch, not a notification, not the long
 * wait_for_run) whose headers the Streamable HTTP transport accepts (Accept of both JSON and
 * event streams, a supported MCP-Protocol-Version or none): answered as one JSON response by
 * the shared server. Null for anything else, which the SDK's transport handles (and refuses).
 */
function plainRequest(req: FastifyRequest): JSONRPCRequest | null {
  const body = req.body as Record<string, unknown> | null;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  if (body.jsonrpc !== '2.0' || !PLAIN_METHODS.has(body.method as string) || !(typeof body.id === 'string' || typeof body.id === 'number')) return null;
  if (body.params !== undefined && !plainMeta(body.params)) return null;
  if (toolCalled(body) === 'wait_for_run') return null;
  const accept = req.headers.accept ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return null;
  const version = req.headers['mcp-protocol-version'];
  if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(String(version))) return null;
  return body as unknown as JSONRPCRequest;
}

/** A plain tools/call whose params have the shape CallToolRequestSchema requires (others: the SDK's server). */
function plainToolCall(m: JSONRPCRequest): { id: string | number; params: { name: string; arguments?: Record<string, unknown>; _meta?: { progressToken?: string | number } } } | null {
  if (m.method !== 'tools/call') return null;
  const params = m.params as { name?: unknown; arguments?: unknown };
  if (typeof params?.name !== 'string') return null;
  const args = params.arguments;
  if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) return null;
  return { id: m.id, params: params as { name: string; arguments?: Record<string, unknown> } };
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
  const shared = new SharedMcpServer();

  await app.register(async (mcp) => {
    // Errors of this endpoint in JSON-RPC's shape; a 401 names this endpoint's resource metadata
    // (RFC 9728 §5.1), which is how MCP clients discover the authorization server.
    mcp.setErrorHandler((err, req, reply) => {
      const { problem, headers } = toProblem(err);
      if (problem.status >= 500) req.log.error({ err }, 'request failed');
      if (problem.status === 401) headers['www-authenticate'] = challengeFor(metadataUrl);
      reply.headers(headers);
      return rpcError(reply, problem.status, problem.code === 'malformed_body' ? PARSE_ERROR : SERVER_ERROR, problem.detail, { ...problem, requestId: req.id });
    });

    const options = { config: access(MCP_ENDPOINT), schema: { hide: true }, bodyLimit: 1024 * 1024 };

    mcp.post(MCP_PATH, options, async (req, reply) => {
      // MCP Streamable HTTP: servers must validate Origin against DNS rebinding. Only pages of
      // the runner itself may call from a browser; other clients send no Origin.
      const origin = req.headers.origin;
      if (origin !== undefined && origin !== ownOrigin) return rpcError(reply, 403, SERVER_ERROR, `requests from the origin ${JSON.stringify(origin.slice(0, 200))} are not accepted`);
      const principal = tokenHolder(req);
      // MCP 2025-06-18 removed JSON-RPC batching; a batch would let one small request make the
      // server read and answer a hundred resources at once (or run calls past its own answer).
      if (Array.isArray(req.body)) return rpcError(reply, 400, INVALID_REQUEST, 'batches are not supported: send one JSON-RPC message per POST (MCP 2025-06-18 and later)');
      const message = messageOf(req.body);
      // MCP authorization (scope challenge): a call beyond the token's scope is 403 with the
      // scope to ask for, before anything runs, so a client can step up with the user's consent.
      const tool = findTool(toolCalled(message) ?? '');
      if (tool && !permits(ctx, tool, principal)) {
        if (tool.access.token && principal.scope === 'read' && !tool.access.admins) {
          reply.header('www-authenticate', insufficientScopeChallenge(tool.access.token, metadataUrl));
        }
        const need = tool.access.admins ? 'an administrator' : `a token with the "${tool.access.token}" scope`;
        return rpcError(reply, 403, SERVER_ERROR, `${tool.name} needs ${need}; this token has the "${principal.scope}" scope`, undefined, message.id ?? null);
      }
      // Only a client that went away mid-answer needs its call stopped: once the answer is out
      // nothing of the request runs any more. The signal is made when something listens to it.
      let aborted: AbortController | undefined;
      let gone = false;
      reply.raw.on('close', () => {
        if (reply.raw.writableFinished) return;
        gone = true;
        aborted?.abort();
      });
      const context: McpRequestContext = {
        ctx,
        principal,
        recheck: () => ctx.auth.reauthenticate(req),
        log: req.log,
        get signal() {
          aborted ??= new AbortController();
          if (gone) aborted.abort();
          return aborted.signal;
        },
      };
      const plain = plainRequest(req);
      const toolCall = plain && plainToolCall(plain);
      if (toolCall) {
        // The hottest message: the tool answered by the function the SDK's server calls for it,
        // without the server's request bookkeeping (bench runner-mcp).
        try {
          return reply.type('application/json').send({ jsonrpc: '2.0', id: toolCall.id, result: await callTool(context, toolCall.params, {}) });
        } catch (e) {
          if (!(e instanceof McpError)) throw e;
          return reply.type('application/json').send({ jsonrpc: '2.0', id: toolCall.id, error: { code: e.code, message: e.message, ...(e.data === undefined ? {} : { data: e.data }) } });
        }
      }
      if (plain) {
        const answer = await shared.answer(plain, context, req.headers as Record<string, string>);
        if (!answer) return reply;
        // The SDK reports params that do not fit the method as an internal error: say what it is.
        const problem = 'error' in answer && answer.error.code === INTERNAL_ERROR ? paramsProblem(plain as RpcMessage) : null;
        if (problem) return rpcError(reply, 400, INVALID_PARAMS, `invalid params of ${plain.method}: ${problem}`, undefined, plain.id);
        return reply.type('application/json').send(answer);
      }
      const problem = paramsProblem(message);
      if (problem) return rpcError(reply, 400, INVALID_PARAMS, `invalid params of ${String(message.method)}: ${problem}`, undefined, message.id ?? null);
      // Everything else (a long call, notifications, requests the transport refuses) through the
      // SDK's Streamable HTTP transport, with a server of its own. A long call (wait_for_run)
      // answers as an event stream that carries its progress.
      const streams = toolCalled(message) === 'wait_for_run';
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !streams });
      const server = createMcpServer(() => context);
      context.signal.addEventListener('abort', () => void server.close(), { once: true });
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

import type { FastifyBaseLogger } from 'fastify';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import pkg from '../../../package.json' with { type: 'json' };
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { AppError } from '../../infra/errors.js';
import type { Principal, UserPrincipal } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import { RESOURCE_READS } from './limits.js';
import { READ_TOOLS } from './read-tools.js';
import { listResources, readResource, RESOURCE_TEMPLATES } from './resources.js';
import type { Tool, ToolCall } from './tool.js';
import { parseResourceUri } from './uris.js';
import { WRITE_TOOLS } from './write-tools.js';

export const TOOLS: readonly Tool[] = [...READ_TOOLS, ...WRITE_TOOLS];
const BY_NAME = new Map(TOOLS.map((t) => [t.name, t]));

/** JSON-RPC 2.0 §5.1 server error: the request may succeed later (too many at once). */
const BUSY = -32000;
/** MCP's "resource not found" (server/resources in the specification). */
const RESOURCE_NOT_FOUND = -32002;

const INSTRUCTIONS =
  'Pier workflow runner. Find work with list_projects and list_workflows; start_run queues a run with the parameters a workflow declares, ' +
  'wait_for_run follows it, get_run and read_run_log (errorsOnly for failures) explain how it went; outputs are resources. ' +
  'What you may do is what the signed-in user may do, limited by the scope the user granted (read, or write).';

export function findTool(name: string): Tool | undefined {
  return BY_NAME.get(name);
}

/** Whether the principal may call the tool: its access declaration, checked as a REST route's. */
export function permits(ctx: RunnerContext, tool: Tool, principal: Principal): boolean {
  try {
    ctx.auth.check(tool.access, principal);
    return true;
  } catch {
    return false;
  }
}

/** A refusal as a tool result the model can read and act on (MCP: tool execution errors). */
function refusal(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

function describe(e: AppError): string {
  const fields = e.errors.length ? ` (${e.errors.map((f) => `${f.field}: ${f.message}`).join('; ')})` : '';
  return `${e.status} ${e.code}: ${e.message}${fields}`;
}

/** What a tool call may use of its MCP request: the SDK's abort signal and progress notifications. */
export interface CallChannel {
  signal?: AbortSignal;
  notify?(progress: { progressToken: string | number; progress: number; total?: number; message?: string }): Promise<void>;
}

/**
 * tools/call (MCP server/tools): the tool's own access (403 as a tool error the model can read),
 * its arguments against its input schema, then the tool as the caller. Refusals of the runner
 * are tool errors; an unknown tool and a failure of the server are JSON-RPC errors (McpError).
 * The SDK's server calls this, and so does the route for a plain call (routes.ts).
 */
export async function callTool(
  r: McpRequestContext,
  params: { name: string; arguments?: Record<string, unknown>; _meta?: { progressToken?: string | number } },
  channel: CallChannel,
): Promise<CallToolResult> {
  const { ctx, principal } = r;
  const tool = findTool(params.name);
  if (!tool) throw new McpError(ErrorCode.InvalidParams, `no tool named ${JSON.stringify(params.name.slice(0, 100))}; tools/list names the tools you can call`);
  if (!permits(ctx, tool, principal)) return refusal(`${tool.name} is not available to this token: it needs the "${tool.access.token}" scope${tool.access.admins ? ' and an administrator' : ''}`);
  const args = params.arguments ?? {};
  const problems = tool.problems(args);
  if (problems.length) return refusal(`invalid arguments: ${problems.map((p) => `${p.field} ${p.message}`).join('; ')}`);
  const token = params._meta?.progressToken;
  let signal: AbortSignal | undefined;
  const call: ToolCall = {
    ctx,
    principal,
    recheck: r.recheck,
    // Made on first use: only long calls (wait_for_run) listen to it.
    get signal() {
      signal ??= channel.signal ? AbortSignal.any([r.signal, channel.signal]) : r.signal;
      return signal;
    },
    async progress(progress, message, total) {
      if (token === undefined || !channel.notify) return;
      await channel.notify({ progressToken: token, progress, total, message });
    },
  };
  const limit = tool.concurrency;
  if (limit && !limit.enter(principal.user.id)) {
    return refusal(`429 too_many_calls: at most ${limit.perCaller} ${tool.name} calls run at once for one user (and ${limit.total} in all); call again when one has finished`);
  }
  try {
    const result = await tool.run(call, args);
    const links = (result.links ?? []).map((l) => ({ type: 'resource_link' as const, ...l }));
    return { content: [{ type: 'text', text: result.text }, ...links], structuredContent: result.structured as Record<string, unknown> };
  } catch (e) {
    if (e instanceof AppError && e.status < 500) return refusal(describe(e));
    r.log.error({ err: e, tool: tool.name }, 'MCP tool failed');
    throw new McpError(ErrorCode.InternalError, 'the tool failed on the server; the error is logged');
  } finally {
    limit?.leave(principal.user.id);
  }
}

export interface McpRequestContext {
  ctx: RunnerContext;
  principal: UserPrincipal;
  recheck(): Promise<Principal>;
  signal: AbortSignal;
  log: FastifyBaseLogger;
}

/** One validator for every server: the SDK's default builds a new Ajv for each Server. */
const VALIDATOR = new AjvJsonSchemaValidator();

/**
 * The SDK's MCP server. Each handler serves the caller that `contextOf` gives for the JSON-RPC
 * request id (its principal, its abort signal): a server of one HTTP request, or the process's
 * shared server (shared-server.ts). Every tool and resource goes through the services the REST
 * routes use, as that caller.
 */
export function createMcpServer(contextOf: (requestId: string | number) => McpRequestContext): Server {
  const server = new Server(
    { name: 'pier-runner', title: 'Pier workflow runner', version: pkg.version },
    {
      capabilities: { tools: { listChanged: false }, resources: { listChanged: false, subscribe: false } },
      instructions: INSTRUCTIONS,
      jsonSchemaValidator: VALIDATOR,
    },
  );

  server.setRequestHandler(ListToolsRequestSchema, (_req, extra) => {
    const { ctx, principal } = contextOf(extra.requestId);
    return {
      tools: TOOLS.filter((t) => permits(ctx, t, principal)).map((t) => ({
        name: t.name,
        title: t.title,
        description: t.description,
        inputSchema: t.input as { type: 'object' },
        outputSchema: t.output as { type: 'object' },
        annotations: { title: t.title, ...t.hints, openWorldHint: false },
      })),
    };
  });

  server.setRequestHandler(CallToolRequestSchema, (req, extra) =>
    callTool(contextOf(extra.requestId), req.params, {
      signal: extra.signal,
      notify: (progress) => extra.sendNotification({ method: 'notifications/progress', params: progress }),
    }),
  );

  server.setRequestHandler(ListResourcesRequestSchema, async (_req, extra) => {
    const { ctx, principal } = contextOf(extra.requestId);
    return { resources: await listResources(ctx, principal) };
  });
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: RESOURCE_TEMPLATES }));
  server.setRequestHandler(ReadResourceRequestSchema, async (req, extra) => {
    const { ctx, principal, log } = contextOf(extra.requestId);
    const ref = parseResourceUri(req.params.uri);
    if (!ref) throw new McpError(RESOURCE_NOT_FOUND, 'no such resource: expected pier://runs/{runId}/log or pier://runs/{runId}/outputs/{name}', { uri: req.params.uri.slice(0, 200) });
    if (!RESOURCE_READS.enter(principal.user.id)) {
      throw new McpError(BUSY, `at most ${RESOURCE_READS.perCaller} resource reads run at once for one user (and ${RESOURCE_READS.total} in all); read again when one has finished`);
    }
    try {
      return await readResource(ctx, principal, req.params.uri, ref);
    } catch (e) {
      if (e instanceof AppError && e.status === 404) throw new McpError(RESOURCE_NOT_FOUND, e.message, { uri: req.params.uri.slice(0, 200) });
      if (e instanceof AppError && e.status < 500) throw new McpError(ErrorCode.InvalidRequest, describe(e));
      log.error({ err: e }, 'MCP resource read failed');
      throw new McpError(ErrorCode.InternalError, 'reading the resource failed on the server; the error is logged');
    } finally {
      RESOURCE_READS.leave(principal.user.id);
    }
  });
  return server;
}

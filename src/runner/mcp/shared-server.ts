import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { createMcpServer, type McpRequestContext } from './server.js';

/**
 * One SDK server for the whole process, for the common case: one JSON-RPC request answered with
 * one JSON response (routes.ts decides). Building a server and the SDK's Web-standard transport
 * for every such request cost several times the tool's own work; here the request reaches the
 * same SDK server through an in-process transport. Requests are numbered anew, so that the ids of
 * different clients never meet in the SDK's table of requests in flight; the new id names the
 * caller to the handlers, and the answer goes back under the client's own id.
 */
export class SharedMcpServer {
  private readonly callers = new Map<number, McpRequestContext>();
  private readonly waiting = new Map<number, (m: JSONRPCMessage | null) => void>();
  private next = 0;
  private readonly transport: Transport;
  private readonly ready: Promise<void>;

  constructor() {
    const server = createMcpServer((id) => {
      const context = this.callers.get(id as number);
      if (!context) throw new Error(`MCP request ${String(id)} has no caller`);
      return context;
    });
    this.transport = {
      start: async () => {},
      close: async () => {},
      // Notifications (no id) have nowhere to go on this path: none of its requests sends any.
      send: async (m) => {
        const id = (m as { id?: unknown }).id;
        if (typeof id !== 'number') return;
        const resolve = this.waiting.get(id);
        this.waiting.delete(id);
        this.callers.delete(id);
        resolve?.(m);
      },
    };
    this.ready = server.connect(this.transport);
  }

  /** The server's answer to `request` as `context`'s caller; null when the caller went away first. */
  async answer(request: JSONRPCRequest, context: McpRequestContext, headers: Record<string, string>): Promise<JSONRPCMessage | null> {
    await this.ready;
    const id = ++this.next;
    const answered = new Promise<JSONRPCMessage | null>((resolve) => this.waiting.set(id, resolve));
    context.signal.addEventListener(
      'abort',
      () => {
        this.waiting.get(id)?.(null);
        this.waiting.delete(id);
        this.callers.delete(id);
      },
      { once: true },
    );
    this.callers.set(id, context);
    this.transport.onmessage?.({ ...request, id }, { requestInfo: { headers } });
    const answer = await answered;
    return answer && { ...answer, id: request.id } as JSONRPCMessage;
  }
}

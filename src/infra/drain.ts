import type http from 'node:http';
import type net from 'node:net';
import { isDraining } from './readiness.js';

/**
 * Graceful stop of one listener on SIGTERM
 * (docs/operators.md#restarting-without-losing-anything-sigterm): `close` stops taking connections
 * and resolves once the work in flight is done; if that takes longer than `drainMs`, `force` cuts
 * what is left (connections, transfers) so the process still ends within the bound. 0 cuts at once;
 * undefined waits as long as the work takes (embedding code and tests that end their own requests
 * first).
 */
export async function drained(close: () => Promise<void>, drainMs: number | undefined, force: () => void): Promise<void> {
  if (drainMs === undefined) return close();
  if (drainMs <= 0) force();
  const timer = drainMs > 0 ? setTimeout(force, drainMs) : undefined;
  timer?.unref();
  try {
    await close();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Makes `server` close gracefully once the process drains (readiness.ts): node:http's
 * `close()` ends every connection that has no request in progress, and that includes one
 * accepted a moment ago whose first request is still on its way: the client (a load balancer)
 * sees it reset and cannot retry a PATCH it sent. While draining, such a connection is served
 * once and then closed; a connection idle after its answers is closed now; every answer says
 * `Connection: close`. Outside a drain node:http behaves as ever.
 */
export function closeGracefullyWhenDraining(server: http.Server): void {
  // Only connections that had a request are known here: no `connection` listener (the fast path
  // takes a server over only when node:http's is the one there, infra/fast-path).
  const sockets = new Map<net.Socket, { served: number; active: number }>();
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    let s = sockets.get(socket);
    if (!s) {
      s = { served: 0, active: 0 };
      sockets.set(socket, s);
      socket.once('close', () => sockets.delete(socket));
    }
    const state = s;
    state.active++;
    if (isDraining() && !res.headersSent) res.shouldKeepAlive = false;
    res.once('close', () => {
      state.active--;
      state.served++;
      // Answered while draining: nothing more comes on this connection.
      if (isDraining() && state.active === 0) setImmediate(() => socket.end());
    });
  });
  const closeIdle = server.closeIdleConnections.bind(server);
  server.closeIdleConnections = () => {
    if (!isDraining()) return closeIdle();
    for (const [socket, s] of sockets) if (s.served > 0 && s.active === 0) socket.end();
  };
}

import type http from 'node:http';

/**
 * An answer given before the request's body has all arrived ends its connection
 * (`Connection: close`, RFC 9112 §9.6). node:http otherwise reads and discards the rest of the
 * body to keep the connection for the next request: a body that never ends (chunked, or a
 * Content-Length of terabytes) on a route that does not read it — a GET, a 401, a 413 — was read
 * at full speed for as long as the client sent it, by anyone, on the loop that serves everyone.
 * Closed, the connection costs nothing more once the answer is written.
 *
 * Prepended to the server's 'request' listeners, so it is in place before any answer.
 */
/**
 * Whether the request has a body (RFC 9112 §6.3: Transfer-Encoding, or a Content-Length other
 * than 0). Not `!req.complete` alone: node:http emits 'request' before it has read even a
 * bodiless request to its end, so an answer written at once would close every connection.
 */
export function hasBody(req: http.IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

export function closeOnUnreadBody(server: http.Server): void {
  server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const writeHead = res.writeHead;
    res.writeHead = function (this: http.ServerResponse, ...args: unknown[]) {
      if (!req.complete && !this.headersSent && hasBody(req)) {
        this.setHeader('connection', 'close');
        // Headers given to writeHead itself win over set ones (a live stream's keep-alive).
        const given = args.at(-1);
        if (given && typeof given === 'object' && !Array.isArray(given)) {
          for (const k of Object.keys(given)) if (k.toLowerCase() === 'connection') (given as Record<string, unknown>)[k] = 'close';
        }
      }
      return (writeHead as (...a: unknown[]) => http.ServerResponse).apply(this, args);
    } as typeof res.writeHead;
  });
}

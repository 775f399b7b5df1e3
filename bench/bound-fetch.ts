// `fetch` from a loopback address of its own: the hostile client of a bench is another machine
// in life, so the server must not see it at the measuring client's address (the web part paces
// callers without a token per address). Node's built-in fetch cannot choose its local address;
// this one is node:http underneath, with what the bench's attackers use of fetch (method,
// headers, a string or byte body, the answer's status, headers and body).
import http from 'node:http';

export function boundFetch(localAddress: string): typeof fetch {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64, localAddress });
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(String(input));
    const raw = init.body;
    const body = raw == null ? undefined : typeof raw === 'string' ? Buffer.from(raw) : Buffer.from(raw as Uint8Array);
    const headers: Record<string, string> = Object.fromEntries(new Headers(init.headers).entries());
    if (body) headers['content-length'] = String(body.length);
    return new Promise<Response>((resolve, reject) => {
      const req = http.request({ agent, hostname: url.hostname, port: url.port, path: url.pathname + url.search, method: init.method ?? 'GET', headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const answer = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) answer.set(k, Array.isArray(v) ? v.join(', ') : v);
          const status = res.statusCode ?? 0;
          resolve(new Response(status === 204 || status === 304 ? null : Buffer.concat(chunks), { status, headers: answer }));
        });
      });
      req.on('error', reject);
      init.signal?.addEventListener('abort', () => req.destroy(new Error('aborted')));
      req.end(body);
    });
  }) as typeof fetch;
}

import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/**
 * A plain static file server over a folder for crawler unit tests (the end-to-end test uses the
 * real download host). `hooks` can stall or break one path (hostile-input tests).
 */
export async function serveDir(root: string, hooks: Record<string, (res: http.ServerResponse) => void> = {}) {
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer((req, res) => {
    const p = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const hook = hooks[p];
    if (hook) return hook(res);
    const file = path.join(root, p);
    if (!file.startsWith(root) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404).end();
      return;
    }
    const body = fs.readFileSync(file);
    res.writeHead(200, { 'content-length': body.length, 'last-modified': fs.statSync(file).mtime.toUTCString() });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

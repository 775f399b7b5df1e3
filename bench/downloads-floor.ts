// Floors of a Node.js download host on this machine, for bench/downloads.ts, answering with
// bytes already in memory and the same headers as Pier (no path parsing, no file system):
// - `http`: node:http, what any node:http handler can reach at most;
// - `net`: a raw socket answering each request head with the prepared response. Not a usable
//   server (it parses nothing and checks nothing): it shows what node:http itself costs.
// `node --import tsx bench/downloads-floor.ts http|net <port> <url-path=file>…`
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';

const [mode, port, ...mappings] = process.argv.slice(2);
const files = new Map<string, { data: Buffer; headers: http.OutgoingHttpHeaders }>();
for (const m of mappings) {
  const [urlPath, file] = m.split('=') as [string, string];
  const data = fs.readFileSync(file);
  const st = fs.statSync(file);
  files.set(urlPath, {
    data,
    headers: {
      'x-content-type-options': 'nosniff',
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; sandbox",
      'content-type': 'application/java-archive',
      etag: `"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`,
      'last-modified': new Date(st.mtimeMs).toUTCString(),
      'accept-ranges': 'bytes',
      'cache-control': 'public, no-cache',
      'content-length': data.length,
    },
  });
}
if (mode === 'net') {
  // Every request gets the first file (the bench loads one URL at a time).
  const [first] = files.values();
  if (!first) throw new Error('no file');
  const head = Object.entries(first.headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  const response = Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\n${head}date: ${new Date().toUTCString()}\r\n\r\n`), first.data]);
  net
    .createServer({ noDelay: true }, (socket) => {
      let pending = '';
      socket.on('data', (chunk) => {
        pending += chunk.toString('latin1');
        let end = pending.indexOf('\r\n\r\n');
        while (end >= 0) {
          socket.write(response);
          pending = pending.slice(end + 4);
          end = pending.indexOf('\r\n\r\n');
        }
      });
      socket.on('error', () => socket.destroy());
    })
    .listen(Number(port), '127.0.0.1');
} else {
  http
    .createServer({ keepAliveTimeout: 65_000, noDelay: true }, (req, res) => {
      const f = files.get(req.url ?? '');
      if (!f) {
        res.writeHead(404, { 'content-length': 0 });
        return res.end();
      }
      res.writeHead(200, f.headers);
      res.end(f.data);
    })
    .listen(Number(port), '127.0.0.1');
}

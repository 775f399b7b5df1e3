// The floor of a Node.js download host on this machine, for bench/downloads.ts: node:http
// answering every GET with bytes already in memory and the same headers as Pier (no path
// parsing, no file system). `node --import tsx bench/downloads-floor.ts <port> <url-path=file>…`
import fs from 'node:fs';
import http from 'node:http';

const [port, ...mappings] = process.argv.slice(2);
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
  .listen(Number(port), '127.0.0.1', () => console.error('floor listening'));

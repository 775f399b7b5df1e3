// HTTP/1.1 over a raw socket: each request on a connection of its own, so a page server's fast
// path (which keeps a connection only until it hands one request to the app) sees every request
// as the first on its connection, and the answer's exact headers can be compared.
import net from 'node:net';

export interface RawAnswer {
  status: string;
  headers: Map<string, string>;
  body: Buffer;
}

/** One request over a fresh connection, read to its end (the connection is closed after it). */
export function raw(url: string, head: string): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(head));
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const all = Buffer.concat(chunks);
      const end = all.indexOf('\r\n\r\n');
      const lines = all.subarray(0, end).toString('latin1').split('\r\n');
      const headers = new Map<string, string>();
      for (const line of lines.slice(1)) {
        const i = line.indexOf(':');
        headers.set(line.slice(0, i).toLowerCase(), line.slice(i + 1).trim());
      }
      resolve({ status: lines[0] ?? '', headers, body: all.subarray(end + 4) });
    });
  });
}

export const request = (method: string, target: string, extra = '') => `${method} ${target} HTTP/1.1\r\nHost: pier.test\r\n${extra}Connection: close\r\n\r\n`;


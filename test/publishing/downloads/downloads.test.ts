import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { localStorage } from '../../../src/infra/storage-local.js';
import { FRESH_MS } from '../../../src/publishing/downloads/file-cache.js';
import { createDownloadServer, type DownloadServer } from '../../../src/publishing/downloads/server.js';
import { parseDownloadPath } from '../../../src/publishing/downloads/paths.js';
import { sendBuffersHeld } from '../../../src/publishing/downloads/send-file.js';
import { tempDir } from '../../helpers/db.js';
import { makeCurrent } from './released.js';

const silent = { info() {}, error() {} };

/** A file changed behind the server's back (as another instance would) is served once this has passed. */
const pastFreshness = () => new Promise((r) => setTimeout(r, FRESH_MS + 1));

/** A request with the path sent exactly as written (fetch would normalise `..` and `%2e`). */
function raw(base: string, rawPath: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: rawPath, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('download host', () => {
  let root: string;
  let server: DownloadServer;
  let base: string;
  const jar = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));

  before(async () => {
    root = tempDir('pier-dl-');
    const w = (rel: string, data: string | Buffer) => {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), data);
    };
    w('csv-nodes/releases/5.4/1/content.jar', 'content');
    w('csv-nodes/releases/5.4/1/artifacts.xml', '<artifacts/>');
    w('csv-nodes/releases/5.4/1/content.xml.xz', 'xz');
    w('csv-nodes/releases/5.4/1/plugins/big_1.0.0.jar', jar);
    w('csv-nodes/releases/5.4/1/plugins/a <b>&.jar', 'odd name');
    w('csv-nodes/update-site/5.4.zip', 'zip');
    w('csv-nodes/releases/5.4/1/.pier-tmp-0123456789abcdef', 'half an upload');
    w('csv-nodes/assets/logo.svg', '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    w('csv-nodes/assets/img/shot one.png', 'png');
    w('csv-nodes/assets/page.html', '<script>alert(1)</script>');
    w('csv-nodes/workflows/Demo.knwf', 'knwf');
    w('other-ext/assets/secret.txt', 'secret of another product');
    fs.symlinkSync('/etc/passwd', path.join(root, 'csv-nodes/assets/passwd'));
    makeCurrent(root, 'csv-nodes', '5.4');
    server = createDownloadServer({ storage: localStorage(root), log: silent });
    base = (await server.listen(0, '127.0.0.1')).url;
  });
  after(async () => {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  test('every kind of file at its public URL, with the right content type', async () => {
    const cases: [string, string, string][] = [
      ['/csv-nodes/5.4/content.jar', 'application/java-archive', 'content'],
      ['/csv-nodes/5.4/artifacts.xml', 'application/xml', '<artifacts/>'],
      ['/csv-nodes/5.4/content.xml.xz', 'application/x-xz', 'xz'],
      ['/csv-nodes/5.4.zip', 'application/zip', 'zip'],
      ['/assets/csv-nodes/logo.svg', 'image/svg+xml', '<svg'],
      ['/assets/csv-nodes/img/shot%20one.png', 'image/png', 'png'],
      ['/workflows/csv-nodes/Demo.knwf', 'application/vnd.knime.workflow+zip', 'knwf'],
      ['/assets/csv-nodes/page.html', 'application/octet-stream', '<script>'],
    ];
    for (const [p, type, start] of cases) {
      const r = await raw(base, p);
      assert.equal(r.status, 200, p);
      assert.equal(r.headers['content-type'], type, p);
      assert.ok(r.body.toString().startsWith(start), p);
      assert.equal(r.headers['x-content-type-options'], 'nosniff');
      assert.match(String(r.headers['content-security-policy']), /sandbox/);
    }
    const big = await raw(base, '/csv-nodes/5.4/plugins/big_1.0.0.jar');
    assert.ok(big.body.equals(jar));
    assert.equal(big.headers['content-length'], String(jar.length));
    const head = await raw(base, '/csv-nodes/5.4/plugins/big_1.0.0.jar', {}, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-length'], String(jar.length));
    assert.equal(head.body.length, 0);
  });

  test('CORS is open for assets (preflight too), not for the update site', async () => {
    assert.equal((await raw(base, '/assets/csv-nodes/logo.svg', { origin: 'https://elsewhere.example' })).headers['access-control-allow-origin'], '*');
    assert.equal((await raw(base, '/csv-nodes/5.4/content.jar')).headers['access-control-allow-origin'], undefined);
    const pre = await raw(base, '/assets/csv-nodes/logo.svg', { origin: 'https://x.example', 'access-control-request-method': 'GET' }, 'OPTIONS');
    assert.equal(pre.status, 204);
    assert.equal(pre.headers['access-control-allow-origin'], '*');
    const post = await raw(base, '/assets/csv-nodes/logo.svg', {}, 'POST');
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD, OPTIONS');
  });

  test('ETag and Last-Modified answer 304; a replaced file gets a new ETag', async () => {
    const first = await raw(base, '/csv-nodes/5.4/artifacts.xml');
    const etag = String(first.headers.etag);
    const lastModified = String(first.headers['last-modified']);
    assert.match(etag, /^"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+"$/);
    assert.equal((await raw(base, '/csv-nodes/5.4/artifacts.xml', { 'if-none-match': etag })).status, 304);
    assert.equal((await raw(base, '/csv-nodes/5.4/artifacts.xml', { 'if-none-match': `W/${etag}, "other"` })).status, 304);
    assert.equal((await raw(base, '/csv-nodes/5.4/artifacts.xml', { 'if-modified-since': lastModified })).status, 304);
    assert.equal((await raw(base, '/csv-nodes/5.4/artifacts.xml', { 'if-none-match': '"nope"', 'if-modified-since': lastModified })).status, 200);
    assert.equal((await raw(base, '/csv-nodes/5.4/artifacts.xml', { 'if-modified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' })).status, 200);
    const p = path.join(root, 'csv-nodes/releases/5.4/1/artifacts.xml');
    fs.writeFileSync(p, '<artifacts size="2"/>');
    await pastFreshness();
    const after = await raw(base, '/csv-nodes/5.4/artifacts.xml', { 'if-none-match': etag });
    assert.equal(after.status, 200);
    assert.notEqual(after.headers.etag, etag);
  });

  test('small files kept in memory follow every replacement, even to the same size and time, and removal', async () => {
    const p = path.join(root, 'csv-nodes/releases/5.4/1/features/f_1.0.0.jar');
    const url = '/csv-nodes/5.4/features/f_1.0.0.jar';
    fs.mkdirSync(path.dirname(p), { recursive: true });
    const at = new Date('2024-01-01T00:00:00Z');
    // As an upload does: a new file renamed over the old one, here with the same size and time
    // (reproducible builds stamp every file alike).
    const upload = (content: string) => {
      const temp = path.join(path.dirname(p), '.pier-tmp-test');
      fs.writeFileSync(temp, content);
      fs.utimesSync(temp, at, at);
      fs.renameSync(temp, p);
    };
    // In this test every change is made outside the server's process (another instance).
    upload('first');
    await pastFreshness();
    for (let i = 0; i < 2; i++) assert.equal((await raw(base, url)).body.toString(), 'first');
    assert.equal((await raw(base, url, { range: 'bytes=1-2' })).body.toString(), 'ir');
    const before = await raw(base, url);
    upload('other');
    await pastFreshness();
    // The same size and time: only the storage version tells the two apart (no wrong 304).
    const revalidated = await raw(base, url, { 'if-none-match': String(before.headers.etag) });
    assert.equal(revalidated.status, 200);
    assert.equal(revalidated.body.toString(), 'other');
    assert.notEqual(revalidated.headers.etag, before.headers.etag);
    // Last-Modified is when the file was put in place, not the time it kept (a client comparing
    // dates would keep its copy of a rolled-back file); a date in If-Range never gets a part.
    assert.ok(Date.parse(String(revalidated.headers['last-modified'])) > at.getTime() + 1000, 'Last-Modified follows the upload');
    const dated = await raw(base, url, { range: 'bytes=1-2', 'if-range': String(revalidated.headers['last-modified']) });
    assert.equal(dated.status, 200);
    assert.equal(dated.body.toString(), 'other');
    const r = await raw(base, url);
    assert.equal(r.body.toString(), 'other');
    assert.equal(r.headers['content-length'], '5');
    assert.equal((await raw(base, url, { range: 'bytes=1-2' })).body.toString(), 'th');
    fs.rmSync(p);
    await pastFreshness();
    assert.equal((await raw(base, url)).status, 404);
    assert.equal((await raw(base, `${url}/`)).status, 404);
  });

  test('a change made through this process is served by the very next request; one from outside after the freshness bound', async () => {
    // A freshness bound far longer than the test: only the change count can make a request see
    // a change through this process, and a change from outside stays unseen meanwhile.
    const held = createDownloadServer({ storage: localStorage(root), log: silent, freshMs: 60 * 60_000 });
    const heldBase = (await held.listen(0, '127.0.0.1')).url;
    try {
      const key = 'csv-nodes/releases/5.4/1/features/g_1.0.0.jar';
      const url = '/csv-nodes/5.4/features/g_1.0.0.jar';
      fs.mkdirSync(path.join(root, 'csv-nodes/releases/5.4/1/features'), { recursive: true });
      fs.writeFileSync(path.join(root, key), 'one');
      assert.equal((await raw(heldBase, url)).body.toString(), 'one');
      assert.equal((await raw(heldBase, url)).body.toString(), 'one', 'now in memory');
      fs.writeFileSync(path.join(root, key), 'two');
      assert.equal((await raw(heldBase, url)).body.toString(), 'one', 'a change from outside waits for the bound');
      // Through a Storage of this process (as the SFTP server writes): a new one on the same root.
      const storage = localStorage(root);
      const write = await storage.beginWrite(key);
      await write.write(Buffer.from('three'), 0, 5, 0);
      await write.commit();
      assert.equal((await raw(heldBase, url)).body.toString(), 'three');
      await storage.remove(key);
      assert.equal((await raw(heldBase, url)).status, 404);
    } finally {
      await held.close();
    }
  });

  test('a file of several read buffers: whole, ranges across buffer edges, and a client leaving halfway', async () => {
    const size = 24 * 1024 * 1024 + 7;
    const data = Buffer.alloc(size);
    for (let i = 0; i < size; i += 4) data.writeUInt32LE(i, i > size - 4 ? size - 4 : i);
    fs.writeFileSync(path.join(root, 'csv-nodes/releases/5.4/1/plugins/huge_1.0.0.jar'), data);
    const url = '/csv-nodes/5.4/plugins/huge_1.0.0.jar';
    const whole = await raw(base, url);
    assert.equal(whole.status, 200);
    assert.ok(whole.body.equals(data));
    const M = 1024 * 1024;
    for (const [a, b] of [
      [M - 3, 3 * M + 2],
      [0, M],
      [2 * M, size - 1],
    ] as const) {
      const r = await raw(base, url, { range: `bytes=${a}-${b}` });
      assert.equal(r.status, 206);
      assert.ok(r.body.equals(data.subarray(a, b + 1)), `${a}-${b}`);
    }
    // A slow reader (reads nothing at first, so the kernel's buffers fill and the server's
    // writes queue up): a read buffer reused before its write is out would show as wrong bytes.
    const slow = await new Promise<Buffer>((resolve, reject) => {
      const u = new URL(base);
      http
        .get({ host: u.hostname, port: u.port, path: url }, (res) => {
          const chunks: Buffer[] = [];
          res.pause();
          setTimeout(() => res.resume(), 300);
          res.on('data', (c: Buffer) => {
            chunks.push(c);
            res.pause();
            setTimeout(() => res.resume(), 1);
          });
          res.on('end', () => resolve(Buffer.concat(chunks)));
        })
        .on('error', reject);
    });
    assert.ok(slow.equals(data));
    // A client that goes away mid-download: the server stays up and serves the next one whole.
    await new Promise<void>((resolve) => {
      const u = new URL(base);
      const req = http.get({ host: u.hostname, port: u.port, path: url }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => {});
    });
    assert.ok((await raw(base, url)).body.equals(data));
  });

  test('pipelined downloads of a large file that the client never reads release every descriptor when it leaves', async () => {
    const data = Buffer.alloc(3 * 1024 * 1024 + 5, 7);
    fs.writeFileSync(path.join(root, 'csv-nodes/releases/5.4/1/plugins/pipe_1.0.0.jar'), data);
    const fds = () => fs.readdirSync('/proc/self/fd').length;
    const idle = fds();
    const u = new URL(base);
    const socket = net.connect(Number(u.port), u.hostname);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.pause();
    socket.write('GET /csv-nodes/5.4/plugins/pipe_1.0.0.jar HTTP/1.1\r\nHost: a\r\n\r\n'.repeat(40));
    // Wait until the server has read the requests (the first answer is written, later ones queue).
    for (let i = 0; i < 200 && fds() <= idle + 1; i++) await new Promise((r) => setTimeout(r, 10));
    socket.destroy();
    // Queued responses never get node:http's 'close'; only the connection's close frees them.
    let open = fds();
    for (let i = 0; i < 300 && open > idle; i++) {
      await new Promise((r) => setTimeout(r, 10));
      open = fds();
    }
    assert.ok(open <= idle, `descriptors still open after the client left: ${open - idle}`);
    assert.equal(sendBuffersHeld(), 0);
    assert.ok((await raw(base, '/csv-nodes/5.4/plugins/pipe_1.0.0.jar')).body.equals(data));
  });

  test('a request whose body never ends is answered, then its connection ends (the host reads no body)', { timeout: 60_000 }, async () => {
    const u = new URL(base);
    const socket = net.connect(Number(u.port), u.hostname);
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let open = true;
    let answer = '';
    socket.on('data', (d: Buffer) => {
      answer += d.toString('latin1');
    });
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    void closed.then(() => {
      open = false;
    });
    socket.write('GET /csv-nodes/5.4/plugins/big_1.0.0.jar HTTP/1.1\r\nHost: a\r\ntransfer-encoding: chunked\r\n\r\n');
    const mib = Buffer.alloc(1024 * 1024, 1);
    // Sends 1 MiB chunks for as long as the host keeps the connection.
    while (open) {
      socket.write('100000\r\n');
      socket.write(mib);
      if (!socket.write('\r\n')) await Promise.race([new Promise((r) => socket.once('drain', r)), closed]);
    }
    assert.match(answer, /^HTTP\/1\.1 200 /);
    assert.match(answer.slice(0, answer.indexOf('\r\n\r\n')), /\r\nconnection: close/i);
  });

  test('many clients that stop reading a large file hold a bounded amount of buffer memory in all', async () => {
    const data = Buffer.alloc(24 * 1024 * 1024, 3);
    fs.writeFileSync(path.join(root, 'csv-nodes/releases/5.4/1/plugins/slow_1.0.0.jar'), data);
    const u = new URL(base);
    const sockets: net.Socket[] = [];
    for (let i = 0; i < 60; i++) {
      const socket = net.connect(Number(u.port), u.hostname);
      socket.on('error', () => {});
      socket.pause();
      socket.write('GET /csv-nodes/5.4/plugins/slow_1.0.0.jar HTTP/1.1\r\nHost: a\r\n\r\n');
      sockets.push(socket);
    }
    // Until the kernel's buffers are full and every download waits for its client.
    let peak = 0;
    for (let i = 0, still = 0; i < 500 && still < 30; i++) {
      await new Promise((r) => setTimeout(r, 10));
      const now = sendBuffersHeld();
      still = now === peak ? still + 1 : 0;
      peak = Math.max(peak, now);
    }
    for (const s of sockets) s.destroy();
    // 64 MiB of 1 MiB buffers in all, then 64 KiB ones: 60 clients x 2 MiB would be 120 MiB.
    assert.ok(peak > 0 && peak <= 64 * 1024 * 1024 + 60 * 2 * 64 * 1024, `held ${peak}`);
    for (let i = 0; i < 300 && sendBuffersHeld() > 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(sendBuffersHeld(), 0);
  });

  test('byte ranges: single ranges, suffixes, unsatisfiable, several ranges and If-Range', async () => {
    const url = '/csv-nodes/5.4/plugins/big_1.0.0.jar';
    let r = await raw(base, url, { range: 'bytes=10-19' });
    assert.equal(r.status, 206);
    assert.equal(r.headers['content-range'], `bytes 10-19/${jar.length}`);
    assert.ok(r.body.equals(jar.subarray(10, 20)));
    r = await raw(base, url, { range: 'bytes=-5' });
    assert.ok(r.body.equals(jar.subarray(jar.length - 5)));
    r = await raw(base, url, { range: 'bytes=200000-' });
    assert.equal(r.status, 206);
    assert.ok(r.body.equals(jar.subarray(200000)));
    r = await raw(base, url, { range: 'bytes=299990-400000' });
    assert.ok(r.body.equals(jar.subarray(299990)));
    r = await raw(base, url, { range: `bytes=${jar.length}-` });
    assert.equal(r.status, 416);
    assert.equal(r.headers['content-range'], `bytes */${jar.length}`);
    r = await raw(base, url, { range: 'bytes=0-1,5-6' });
    assert.equal(r.status, 200);
    assert.equal(r.body.length, jar.length);
    r = await raw(base, url, { range: 'bytes=0-1', 'if-range': '"stale"' });
    assert.equal(r.status, 200);
    const etag = String((await raw(base, url, {}, 'HEAD')).headers.etag);
    r = await raw(base, url, { range: 'bytes=0-1', 'if-range': etag });
    assert.equal(r.status, 206);
    r = await raw(base, url, { range: 'bytes=0-1', 'if-range': String(r.headers['last-modified']) });
    assert.equal(r.status, 200, 'a date is not a strong validator here');
  });

  test('a label folder has a plain HTML index (names escaped); temporary files never show', async () => {
    const redirect = await raw(base, '/csv-nodes/5.4');
    assert.equal(redirect.status, 301);
    assert.equal(redirect.headers.location, '/csv-nodes/5.4/');
    const index = await raw(base, '/csv-nodes/5.4/');
    assert.equal(index.status, 200);
    assert.match(String(index.headers['content-type']), /^text\/html/);
    const html = index.body.toString();
    for (const name of ['content.jar', 'artifacts.xml', 'plugins/']) assert.ok(html.includes(`>${name}</a>`), name);
    assert.ok(!html.includes('pier-tmp'));
    const plugins = await raw(base, '/csv-nodes/5.4/plugins/');
    assert.equal(plugins.status, 200);
    assert.ok(plugins.body.toString().includes('href="a%20%3Cb%3E%26.jar">a &lt;b&gt;&amp;.jar</a>'));
    assert.ok(!plugins.body.toString().includes('<b>'));
    assert.equal((await raw(base, '/csv-nodes/5.4/plugins/a%20%3Cb%3E%26.jar')).body.toString(), 'odd name');
    assert.equal((await raw(base, '/csv-nodes/5.4/.pier-tmp-0123456789abcdef')).status, 404);
    assert.equal((await raw(base, '/assets/csv-nodes/img/')).status, 404, 'assets have no index');
    assert.equal((await raw(base, '/csv-nodes/5.4/content.jar/')).status, 404);
  });

  test('no path traversal, plain or encoded; symlinks are not followed', async () => {
    const attempts = [
      '/csv-nodes/5.4/../../other-ext/assets/secret.txt',
      '/csv-nodes/5.4/%2e%2e/%2e%2e/other-ext/assets/secret.txt',
      '/assets/csv-nodes/%2e%2e%2f%2e%2e%2fother-ext%2fassets%2fsecret.txt',
      '/assets/csv-nodes/..%2f..%2f..%2fother-ext/assets/secret.txt',
      '/assets/csv-nodes/..%5c..%5cother-ext%5cassets%5csecret.txt',
      '/assets/csv-nodes/%252e%252e/secret.txt',
      '/assets/csv-nodes/logo.svg%00.png',
      '/assets/other-ext/../csv-nodes/../../etc/passwd',
      '/assets/csv-nodes/passwd',
      '/%2e%2e/%2e%2e/etc/passwd',
      '//etc/passwd',
      '/csv-nodes/',
      '/csv-nodes',
      '/assets/csv-nodes/',
      '/assets/Bad_ID/x',
      '/assets/csv-nodes/%ff%fe',
      `/assets/csv-nodes/${'a'.repeat(300)}`,
      // Every segment within 255 bytes, the whole path over the file system's limit.
      `/csv-nodes/5.4/${Array.from({ length: 18 }, () => 'a'.repeat(250)).join('/')}`,
      `/assets/csv-nodes/${Array.from({ length: 18 }, () => 'b'.repeat(250)).join('/')}/`,
    ];
    for (const p of attempts) {
      const r = await raw(base, p);
      assert.ok([400, 404].includes(r.status), `${p}: ${r.status}`);
      assert.ok(!r.body.toString().includes('secret of another'), p);
      assert.ok(!r.body.toString().includes('root:'), p);
      assert.match(String(r.headers['content-type']), /problem\+json/);
    }
  });

  test('property: a parsed download path always names a key inside one product folder', () => {
    const seg = fc.oneof(fc.constantFrom('..', '.', '%2e%2e', '%2f', '%5c', 'assets', 'workflows', 'csv-nodes', '5.4', '5.4@2', '-@1', '', '%00', '.pier-tmp-1'), fc.string({ maxLength: 8 }));
    fc.assert(
      fc.property(fc.array(seg, { minLength: 1, maxLength: 8 }), (segs) => {
        const parsed = parseDownloadPath(`/${segs.join('/')}`);
        if (!parsed.ok) return;
        const parts = parsed.target.key.split('/');
        assert.equal(parts[0], parsed.target.productId);
        // A label's release (`<label>@<n>`) is read from its copy under releases/<label>/<n>.
        assert.ok(['update-site', 'assets', 'workflows', 'releases'].includes(parts[1] as string), parsed.target.key);
        if (parts[1] === 'releases') assert.match(parts[3] ?? '', /^[1-9][0-9]*$/, parsed.target.key);
        for (const p of parts) assert.ok(p !== '' && p !== '.' && p !== '..' && !p.includes('\\') && !p.includes('\0') && !p.startsWith('.pier-'), parsed.target.key);
      }),
      { numRuns: 3000 },
    );
  });
});

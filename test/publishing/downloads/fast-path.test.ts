// The download host's fast path (src/infra/fast-path/fast-path.ts) against the same server
// with it off: the same raw bytes sent to both over a raw socket get byte-identical answers
// (the Date value aside, which must be there and be now). Both servers share one storage.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { localStorage } from '../../../src/infra/storage-local.js';
import { FRESH_MS } from '../../../src/publishing/downloads/file-cache.js';
import { MAX_HEAD_BYTES, parseSimpleHead } from '../../../src/infra/fast-path/request-head.js';
import { createDownloadServer, type DownloadServer } from '../../../src/publishing/downloads/server.js';
import { tempDir } from '../../helpers/db.js';
import { makeCurrent } from './released.js';

/** What node:http answers to bytes it cannot parse. */
const BAD_REQUEST = 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n';

interface Exchange {
  /** Pieces written one after the other, each once the previous one was flushed. */
  writes: (string | Buffer)[];
  /** Half-close after the last write (for cases the server would otherwise keep open). */
  halfClose?: boolean;
}

/** Everything the server sends on one connection until it closes it. */
function exchange(port: number, ex: Exchange): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', noDelay: true });
    const chunks: Buffer[] = [];
    const guard = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close from the server; got ${JSON.stringify(Buffer.concat(chunks).toString('latin1').slice(0, 300))}`));
    }, 20_000);
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(guard);
      resolve(Buffer.concat(chunks));
    });
    socket.on('connect', async () => {
      for (const w of ex.writes) {
        await new Promise<void>((r) => socket.write(w, () => r()));
        // Let the piece reach the server on its own before the next one.
        if (ex.writes.length > 1) await new Promise((r) => setImmediate(r));
      }
      if (ex.halfClose) socket.end();
    });
  });
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

/**
 * Every Date header present and within a minute of now; then its value blanked for comparison,
 * as are request ids (each request has its own: a new UUID in the header and in problem bodies).
 */
function normalise(answer: Buffer): string {
  return answer
    .toString('latin1')
    .replace(new RegExp(`\r\nx-request-id: ${UUID}\r\n`, 'g'), '\r\nx-request-id: <id>\r\n')
    .replace(new RegExp(`,"requestId":"${UUID}"}`, 'g'), ',"requestId":"<id>"}')
    .replace(/\r\nDate: ([^\r\n]*)\r\n/g, (_, value: string) => {
    const at = Date.parse(value);
    assert.ok(!Number.isNaN(at) && Math.abs(at - Date.now()) < 60_000, `bad Date ${value}`);
    assert.equal(new Date(at).toUTCString(), value);
    return '\r\nDate: <now>\r\n';
  });
}

describe('download host fast path: byte-identical to node:http', () => {
  let root: string;
  let fast: DownloadServer;
  let plain: DownloadServer;
  let fastPort: number;
  let plainPort: number;
  const fastAnswers: unknown[] = [];
  const big = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 253));

  before(async () => {
    root = tempDir('pier-dl-fast-');
    const w = (rel: string, data: string | Buffer) => {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), data);
    };
    w('csv-nodes/releases/5.4/1/content.jar', 'content jar bytes');
    w('csv-nodes/releases/5.4/1/artifacts.xml', '<artifacts/>');
    w('csv-nodes/releases/5.4/1/empty.txt', '');
    w('csv-nodes/releases/5.4/1/plugins/big_1.0.0.jar', big);
    w('csv-nodes/update-site/5.4.zip', 'zip');
    w('csv-nodes/assets/logo.svg', '<svg xmlns="http://www.w3.org/2000/svg"/>');
    w('csv-nodes/assets/img/shot one.png', 'png');
    w('other-ext/assets/secret.txt', 'secret of another product');
    makeCurrent(root, 'csv-nodes', '5.4');
    const storage = localStorage(root);
    const log = (answers: unknown[]) => ({
      info(obj: object) {
        answers.push(obj);
      },
      error() {},
      isLevelEnabled: () => true,
    });
    fast = createDownloadServer({ storage, log: log(fastAnswers) });
    plain = createDownloadServer({ storage, log: log([]), fastPath: false });
    fastPort = (await fast.listen(0, '127.0.0.1')).port;
    plainPort = (await plain.listen(0, '127.0.0.1')).port;
    // Fill both caches (the fast path only answers files already in memory).
    for (const port of [fastPort, plainPort]) {
      for (const p of ['/csv-nodes/5.4/content.jar', '/csv-nodes/5.4/artifacts.xml', '/csv-nodes/5.4/empty.txt', '/csv-nodes/5.4.zip', '/assets/csv-nodes/logo.svg', '/assets/csv-nodes/img/shot%20one.png']) {
        await exchange(port, { writes: [`GET ${p} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`] });
      }
    }
  });
  after(async () => {
    await fast.close();
    await plain.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  async function same(name: string, ex: Exchange): Promise<string> {
    const [a, b] = await Promise.all([exchange(fastPort, ex), exchange(plainPort, ex)]);
    const fa = normalise(a);
    assert.equal(fa, normalise(b), name);
    return fa;
  }

  /**
   * As `same`, but allowing node:http's one known inconsistency (see the table test): for data
   * holding a request with a body followed by more bytes, node:http given the bytes through the
   * stream (a hand-over) answers the error differently than when reading the socket itself:
   * it leaves out answers it had not written yet, or sends its bare 400 where it would have
   * closed. The answers sent are then the plain server's, in order, some missing, plus at most
   * node:http's bare 400 (which the fast path never sends itself).
   */
  async function sameOrBodyThenError(name: string, ex: Exchange, text: string): Promise<void> {
    const [a, b] = await Promise.all([exchange(fastPort, ex), exchange(plainPort, ex)]);
    const [fa, fb] = [normalise(a), normalise(b)];
    if (fa === fb) return;
    const why = `${name}\nfast:  ${JSON.stringify(fa)}\nplain: ${JSON.stringify(fb)}`;
    assert.ok(/content-length: *[1-9]|transfer-encoding/i.test(text), why);
    const answers = (s: string) => s.split(/(?=HTTP\/1\.1 \d{3} )/).filter(Boolean);
    const plainAnswers = answers(fb);
    let at = 0;
    for (const answer of answers(fa)) {
      if (answer === BAD_REQUEST) continue;
      while (at < plainAnswers.length && plainAnswers[at] !== answer) at++;
      assert.ok(at < plainAnswers.length, why);
      at++;
    }
  }

  const get = (p: string, extra = '', method = 'GET') => `${method} ${p} HTTP/1.1\r\nHost: downloads.example\r\n${extra}\r\n`;
  const closing = (p: string, extra = '', method = 'GET') => get(p, `${extra}Connection: close\r\n`, method);
  const jar = '/csv-nodes/5.4/content.jar';

  test('a table of requests, answered alike', async () => {
    const before = fastAnswers.filter((a) => (a as { fast?: boolean }).fast).length;
    const cases: [string, Exchange][] = [
      ['GET of a cached file', { writes: [closing(jar)] }],
      ['GET, keep-alive, then the client half-closes', { writes: [get(jar)], halfClose: true }],
      ['HEAD', { writes: [closing(jar, '', 'HEAD')] }],
      ['an empty file', { writes: [closing('/csv-nodes/5.4/empty.txt')] }],
      ['Connection: keep-alive', { writes: [get(jar, 'Connection: keep-alive\r\n')], halfClose: true }],
      ['a query string', { writes: [closing(`${jar}?x=1&y=%20`)] }],
      ['an asset (CORS)', { writes: [closing('/assets/csv-nodes/logo.svg', 'Origin: https://elsewhere.example\r\n')] }],
      ['an encoded name', { writes: [closing('/assets/csv-nodes/img/shot%20one.png')] }],
      ['the archive', { writes: [closing('/csv-nodes/5.4.zip')] }],
      ['If-None-Match', { writes: [closing(jar, `If-None-Match: "${(fs.statSync(path.join(root, 'csv-nodes/releases/5.4/1/content.jar')).size).toString(16)}-0", *\r\n`)] }],
      ['If-Modified-Since', { writes: [closing(jar, 'If-Modified-Since: Sun, 01 Jan 2090 00:00:00 GMT\r\n')] }],
      ['Range', { writes: [closing(jar, 'Range: bytes=1-3\r\n')] }],
      ['Range with If-Range', { writes: [closing(jar, 'Range: bytes=1-3\r\nIf-Range: "x"\r\n')] }],
      ['a large file', { writes: [closing('/csv-nodes/5.4/plugins/big_1.0.0.jar')] }],
      ['a large file, range', { writes: [closing('/csv-nodes/5.4/plugins/big_1.0.0.jar', 'Range: bytes=-10\r\n')] }],
      ['a missing file', { writes: [closing('/csv-nodes/5.4/missing.jar')] }],
      ['a folder without slash', { writes: [closing('/csv-nodes/5.4')] }],
      ['a folder index', { writes: [closing('/csv-nodes/5.4/')] }],
      ['a file with a slash', { writes: [closing(`${jar}/`)] }],
      ['traversal', { writes: [closing('/csv-nodes/5.4/../../other-ext/assets/secret.txt')] }],
      ['encoded traversal', { writes: [closing('/assets/csv-nodes/%2e%2e%2f%2e%2e%2fother-ext%2fassets%2fsecret.txt')] }],
      ['encoded backslash', { writes: [closing('/assets/csv-nodes/..%5c..%5cother-ext%5cassets%5csecret.txt')] }],
      ['NUL', { writes: [closing('/assets/csv-nodes/logo.svg%00.png')] }],
      ['double slash', { writes: [closing('//etc/passwd')] }],
      ['bad percent', { writes: [closing('/assets/csv-nodes/%ff%fe')] }],
      ['a head over the fast path cap, under node:http`s', { writes: [closing(jar, `X-Big: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n`)] }],
      ['a head over node:http`s cap', { writes: [closing(jar, `X-Big: ${'a'.repeat(20_000)}\r\n`)] }],
      ['many fields', { writes: [closing(jar, Array.from({ length: 100 }, (_, i) => `X-F${i}: ${i}\r\n`).join(''))] }],
      ['two spaces in the request line', { writes: [`GET  ${jar} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`] }],
      ['a bare LF', { writes: [`GET ${jar} HTTP/1.1\nHost: x\nConnection: close\n\n`] }],
      ['garbage', { writes: ['\u0000\u0001hello\r\n\r\n'] }],
      ['lowercase method', { writes: [closing(jar, '', 'get')] }],
      ['POST', { writes: [closing(jar, 'Content-Length: 0\r\n', 'POST')] }],
      ['OPTIONS', { writes: [closing('/assets/csv-nodes/logo.svg', '', 'OPTIONS')] }],
      ['HTTP/1.0', { writes: [`GET ${jar} HTTP/1.0\r\n\r\n`] }],
      ['HTTP/1.0 keep-alive', { writes: [`GET ${jar} HTTP/1.0\r\nConnection: keep-alive\r\n\r\n`], halfClose: true }],
      ['absolute-form', { writes: [closing(`http://downloads.example${jar}`)] }],
      ['asterisk', { writes: [closing('*', '', 'OPTIONS')] }],
      ['no Host', { writes: [`GET ${jar} HTTP/1.1\r\nConnection: close\r\n\r\n`] }],
      ['two Hosts', { writes: [closing(jar, 'Host: other.example\r\n')] }],
      ['obs-fold', { writes: [closing(jar, 'X-Folded: a\r\n b\r\n')] }],
      ['space before the colon', { writes: [closing(jar, 'X-Space : a\r\n')] }],
      ['obs-text in a value', { writes: [Buffer.concat([Buffer.from(`GET ${jar} HTTP/1.1\r\nHost: x\r\nX-Latin: `), Buffer.from([0xe9, 0xff]), Buffer.from('\r\nConnection: close\r\n\r\n')])] }],
      ['a fragment', { writes: [closing(`${jar}#top`)] }],
      ['an empty line first', { writes: [`\r\n${closing(jar)}`] }],
      ['Transfer-Encoding', { writes: [closing(jar, 'Transfer-Encoding: chunked\r\n') + '0\r\n\r\n'] }],
      ['Transfer-Encoding and Content-Length', { writes: [closing(jar, 'Transfer-Encoding: chunked\r\nContent-Length: 3\r\n') + '0\r\n\r\n'] }],
      ['Content-Length with a body', { writes: [closing(jar, 'Content-Length: 5\r\n') + 'hello'] }],
      ['a request smuggled as a chunked body', { writes: [get(jar, 'Transfer-Encoding: chunked\r\n') + closing(jar)] }],
      ['Expect', { writes: [closing(jar, 'Expect: 100-continue\r\n')] }],
      ['Upgrade', { writes: [get(jar, 'Connection: Upgrade\r\nUpgrade: websocket\r\n')], halfClose: true }],
      ['Connection: close, keep-alive', { writes: [get(jar, 'Connection: close, keep-alive\r\n')], halfClose: true }],
      ['two Connection fields', { writes: [get(jar, 'Connection: keep-alive\r\nConnection: close\r\n')], halfClose: true }],
      ['ten pipelined in one write', { writes: [`${get(jar).repeat(9)}${closing(jar)}`] }],
      ['ten pipelined, mixed', { writes: [[get(jar), get(jar, '', 'HEAD'), get('/csv-nodes/5.4/missing'), get(jar, 'Range: bytes=0-0\r\n'), get('/assets/csv-nodes/logo.svg'), get('/csv-nodes/5.4'), get(jar), get('/csv-nodes/5.4/empty.txt'), get(jar, 'If-None-Match: *\r\n'), closing(jar)].join('')] }],
      ['pipelined, a plain one after an uncached one', { writes: [`${get('/csv-nodes/5.4/plugins/big_1.0.0.jar', '', 'HEAD')}${get(jar)}${closing(jar)}`] }],
      ['a request after Connection: close in the same write', { writes: [`${closing(jar)}${get(jar)}`] }],
      ['split byte by byte', { writes: [...closing(jar)].map((c) => c) }],
      ['a second request split', { writes: [get(jar), closing(jar).slice(0, 10), closing(jar).slice(10)] }],
      ['a complete request, then one split', { writes: [get(jar) + closing(jar).slice(0, 20), closing(jar).slice(20)] }],
      ['a partial head, then the client half-closes', { writes: [`GET ${jar} HTTP/1.1\r\nHost: x\r\n`], halfClose: true }],
      ['nothing, then the client half-closes', { writes: [], halfClose: true }],
    ];
    for (const [name, ex] of cases) await same(name, ex);
    // The one known difference, node:http's own: data starting with a request that has a body
    // and holding an error further on. node:http given the bytes back through the stream (a
    // hand-over) meets the error before the first answer is written and sends the 400 alone;
    // reading the socket itself, it answers the first request, and since that request has a
    // body the host never reads, the answer ends the connection (infra/unread-body.ts). Either
    // way the client gets a closed connection (RFC 9112 §9.3.2: it retries the rest).
    const smuggled = { writes: [get(jar, 'Content-Length: 44\r\n') + closing('/assets/csv-nodes/logo.svg')] };
    const [viaFast, viaPlain] = await Promise.all([exchange(fastPort, smuggled), exchange(plainPort, smuggled)]);
    assert.equal(normalise(viaFast), BAD_REQUEST);
    const plain = normalise(viaPlain);
    assert.ok(plain.startsWith('HTTP/1.1 200 OK') && /\r\nconnection: close\r\n/i.test(plain) && plain.endsWith('content jar bytes'), plain);
    const body10 = `GET ${jar} HTTP/1.0\r\nContent-Length: 3\r\n\r\nGET / HTTP/1.1\r\n\r\n`;
    await sameOrBodyThenError('HTTP/1.0 with a body, then garbage', { writes: [body10], halfClose: true }, body10);
    const pipelined = await same('pipelined answers come in order', { writes: [`${get(jar)}${get('/csv-nodes/5.4/artifacts.xml')}${closing('/csv-nodes/5.4.zip')}`] });
    assert.ok(pipelined.indexOf('content jar bytes') < pipelined.indexOf('<artifacts/>') && pipelined.indexOf('<artifacts/>') < pipelined.lastIndexOf('zip'));
    // The comparison means something only if the fast path answered some of them itself.
    assert.ok(fastAnswers.filter((a) => (a as { fast?: boolean }).fast).length - before >= 20);
  });

  test('a file replaced from outside is seen by the fast path once the freshness bound has passed', async () => {
    const p = path.join(root, 'csv-nodes/releases/5.4/1/artifacts.xml');
    const temp = path.join(root, 'csv-nodes/releases/5.4/1/.pier-tmp-x');
    fs.writeFileSync(temp, '<artifacts v="2"/>');
    fs.renameSync(temp, p);
    await new Promise((r) => setTimeout(r, FRESH_MS + 1));
    const answer = await same('after replacement', { writes: [closing('/csv-nodes/5.4/artifacts.xml')] });
    assert.ok(answer.endsWith('<artifacts v="2"/>'));
    assert.ok((await same('after replacement, from memory', { writes: [closing('/csv-nodes/5.4/artifacts.xml')] })).endsWith('<artifacts v="2"/>'));
  });

  test('answers queued behind a client that does not read keep their own request ids', async () => {
    // The fast path writes a cached answer with its id patched into a buffer it reuses: one the
    // socket still holds (not all written at once) must never be patched for a later answer.
    const ids = await new Promise<string[]>((resolve, reject) => {
      const socket = net.connect({ port: fastPort, host: '127.0.0.1', noDelay: true });
      const chunks: Buffer[] = [];
      const guard = setTimeout(() => reject(new Error('no close from the server')), 60_000);
      socket.pause();
      socket.on('data', (c) => chunks.push(c));
      socket.on('error', reject);
      socket.on('close', () => {
        clearTimeout(guard);
        const text = Buffer.concat(chunks).toString('latin1');
        resolve([...text.matchAll(new RegExp(`\r\nx-request-id: (${UUID})\r\n`, 'g'))].map((m) => m[1] as string));
      });
      socket.on('connect', async () => {
        // Whole requests per write, so that the server reads whole heads (and keeps them).
        for (let batch = 0; batch < 60; batch++) {
          const last = batch === 59;
          const heads = Array.from({ length: 200 }, (_, i) => (last && i === 199 ? closing(jar) : get(jar))).join('');
          await new Promise<void>((r) => socket.write(heads, () => r()));
          await new Promise((r) => setTimeout(r, 2));
        }
        // Megabytes of answers are waiting now; some of them queued in the server's socket.
        await new Promise((r) => setTimeout(r, 200));
        socket.resume();
      });
    });
    assert.equal(ids.length, 12_000, 'every request answered');
    assert.equal(new Set(ids).size, ids.length, "no answer carries another answer's id");
  });

  test('the head recogniser accepts only plain GET/HEAD heads', () => {
    const ok = (s: string) => parseSimpleHead(Buffer.from(s, 'latin1'), 0);
    assert.deepEqual(ok(get(jar)), { method: 'GET', target: jar, close: false, requestId: null, forwardedFor: null, end: get(jar).length });
    assert.equal((ok(get(jar, 'X-Request-Id:  abc-123 \r\n')) as { requestId: string }).requestId, 'abc-123');
    assert.equal((ok(get(jar, 'x-forwarded-for: 203.0.113.1, 10.0.0.2 \r\n')) as { forwardedFor: string }).forwardedFor, '203.0.113.1, 10.0.0.2');
    assert.equal((ok(closing(jar)) as { close: boolean }).close, true);
    assert.equal(ok(get(jar).slice(0, -2)), 'incomplete');
    for (const bad of [
      get(jar, 'Transfer-Encoding: chunked\r\n'),
      get(jar, 'Content-Length: 0\r\n'),
      get(jar, 'Range: bytes=0-1\r\n'),
      get(jar, 'If-None-Match: *\r\n'),
      get(jar, 'Host: again\r\n'),
      get(jar, 'X-Request-Id: a\r\nx-request-id: b\r\n'),
      get(jar, 'X-Forwarded-For: a\r\nx-forwarded-for: b\r\n'),
      get(jar, 'Connection: upgrade\r\n'),
      get(jar, 'X-Fold: a\r\n b\r\n'),
      get(jar, 'X-Bad : a\r\n'),
      `GET ${jar} HTTP/1.0\r\nHost: x\r\n\r\n`,
      `GET http://x${jar} HTTP/1.1\r\nHost: x\r\n\r\n`,
      `get ${jar} HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET ${jar}#x HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET ${jar} HTTP/1.1\r\n\r\n`,
      get(jar, `X-Big: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n`),
    ]) {
      assert.equal(ok(bad), 'other', JSON.stringify(bad.slice(0, 80)));
    }
    assert.equal(ok(`GET ${jar} HTTP/1.1\r\nX-Big: ${'a'.repeat(MAX_HEAD_BYTES)}`), 'other', 'an unfinished head past the cap');
  });

  test('property: any request heads, valid or garbled, get the same answers from both', async () => {
    const targets = fc.oneof(
      fc.constantFrom(jar, `${jar}?v=1`, '/csv-nodes/5.4/artifacts.xml', '/csv-nodes/5.4.zip', '/assets/csv-nodes/logo.svg', '/assets/csv-nodes/img/shot%20one.png', '/csv-nodes/5.4', '/csv-nodes/5.4/nope', '/%2e%2e/x', '/assets/csv-nodes/%2e%2e%2fother-ext%2fassets%2fsecret.txt', '*', 'http://h/x', '/csv-nodes/5.4/content.jar#f'),
      fc.string({ maxLength: 12 }).map((s) => `/${s}`),
    );
    const field = fc.oneof(
      fc.constantFrom('Host: x', 'Host: y', 'Connection: close', 'Connection: keep-alive', 'Connection: Keep-Alive', 'Connection: upgrade', 'Range: bytes=0-1', 'If-None-Match: *', 'Content-Length: 0', 'Content-Length: 3', 'Transfer-Encoding: chunked', 'Expect: 100-continue', 'Accept: */*', 'X-A:', 'X-A :b', ' folded', 'X-\u00e9: v', 'X-V: \u00ff', 'Proxy-Connection: close', 'RANGE: bytes=0-1', 'content-LENGTH: 3', 'HOST: x', 'CONNECTION: close', 'Transfer-encoding: chunked', 'if-NONE-match: *', 'Hosts: x', 'Connections: close'),
      fc.tuple(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 12 })).map(([n, v]) => `${n}: ${v}`),
    );
    const head = fc.record({
      method: fc.constantFrom('GET', 'HEAD', 'GET', 'get', 'POST', 'OPTIONS', 'GE T'),
      target: targets,
      version: fc.constantFrom('HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1 ', 'http/1.1'),
      fields: fc.array(field, { maxLength: 5 }),
      eol: fc.constantFrom('\r\n', '\r\n', '\r\n', '\n'),
      host: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(head, { minLength: 1, maxLength: 4 }), fc.boolean(), async (heads, split) => {
        const text = heads
          .map((h) => `${h.method} ${h.target} ${h.version}${h.eol}${h.host ? `Host: h${h.eol}` : ''}${h.fields.map((f) => `${f}${h.eol}`).join('')}${h.eol}`)
          .join('');
        const bytes = Buffer.from(text, 'latin1');
        const cut = Math.floor(bytes.length / 2);
        await sameOrBodyThenError(JSON.stringify(text), { writes: split ? [bytes.subarray(0, cut), bytes.subarray(cut)] : [bytes], halfClose: true }, text);
      }),
      { numRuns: 300 },
    );
  });
});

describe('download host: idle connections and the connection cap', () => {
  let root: string;
  const servers: DownloadServer[] = [];
  const log = { info() {}, error() {}, isLevelEnabled: () => false };

  before(() => {
    root = tempDir('pier-dl-idle-');
    fs.mkdirSync(path.join(root, 'csv-nodes/releases/5.4/1'), { recursive: true });
    fs.writeFileSync(path.join(root, 'csv-nodes/releases/5.4/1/content.jar'), 'content jar bytes');
    makeCurrent(root, 'csv-nodes', '5.4');
  });
  after(async () => {
    for (const s of servers) await s.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  async function start(options: { fastPath?: boolean; maxConnections?: number; headersTimeoutMs?: number }): Promise<number> {
    const server = createDownloadServer({ storage: localStorage(root), log, ...options });
    servers.push(server);
    return (await server.listen(0, '127.0.0.1')).port;
  }

  test('a connection that sends no request gets the same 408 from the fast path as from node:http', async () => {
    const [fastPort, plainPort] = await Promise.all([start({ headersTimeoutMs: 300 }), start({ headersTimeoutMs: 300, fastPath: false })]);
    const [a, b] = await Promise.all([exchange(fastPort, { writes: [] }), exchange(plainPort, { writes: [] })]);
    assert.equal(b.toString('latin1'), 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
    assert.equal(a.toString('latin1'), b.toString('latin1'));
  });

  test('connections past the cap are closed at once; a freed place takes a new one', async () => {
    const port = await start({ maxConnections: 2 });
    const get = 'GET /csv-nodes/5.4/content.jar HTTP/1.1\r\nHost: x\r\n\r\n';
    const open = () =>
      new Promise<net.Socket>((resolve) => {
        const socket = net.connect({ port, host: '127.0.0.1' });
        socket.on('error', () => {});
        socket.once('data', () => resolve(socket));
        socket.on('connect', () => socket.write(get));
      });
    const held = [await open(), await open()];
    const refused = await exchange(port, { writes: [get] });
    assert.equal(refused.length, 0, 'the third connection was closed without an answer');
    const gone = held[0] as net.Socket;
    await new Promise<void>((resolve) => {
      gone.once('close', () => resolve());
      gone.destroy();
    });
    // The server counts the place as free once it has seen the close.
    let answer: Buffer = Buffer.alloc(0);
    for (let i = 0; i < 50 && answer.length === 0; i++) {
      answer = await exchange(port, { writes: [get.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n')] });
      if (answer.length === 0) await new Promise((r) => setTimeout(r, 20));
    }
    assert.match(answer.toString('latin1'), /^HTTP\/1\.1 200 OK\r\n[\s\S]*content jar bytes$/);
    for (const s of held) s.destroy();
  });
});

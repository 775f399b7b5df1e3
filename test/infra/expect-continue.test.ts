// `Expect: 100-continue` (RFC 9110 §10.1.1) on every HTTP server of Pier that takes bodies: a
// request whose Content-Length is over the route's limit gets its 413 instead of a 100, before
// the client sends a byte of the body; a body within the limit gets its 100 and is read.
// Checked with a raw socket, as curl and the JDK's client send it.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/infra/config.js';
import { createPublishingService, type PublishingService } from '../../src/publishing/service.js';
import { createRunnerService, type RunnerService } from '../../src/runner/service.js';
import { tempDir } from '../helpers/db.js';

const MB30 = 30 * 1024 * 1024;
const API_KEY = 'expect-continue-admin-key-0123456789abcdef';

interface Exchange {
  /** What the server sent before the client sent any of the body. */
  first: string;
  /** Everything the server sent, when `body` is given and sent after the first answer. */
  all: string;
  /** Whether the server closed the connection. */
  closed: boolean;
}

/**
 * Sends the head with `Expect: 100-continue`, waits for the server's first answer (or the
 * connection's end), then sends `body` when given and collects the rest.
 */
function expectContinue(port: number, head: string, body?: string): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let got = '';
    let first: string | null = null;
    let closed = false;
    const finish = () => resolve({ first: first ?? got, all: got, closed });
    socket.on('data', (c: Buffer) => {
      got += c.toString('latin1');
      if (first !== null) return;
      // The end of the first status line's head (a 100 has no body; a final answer's body follows).
      if (!got.includes('\r\n\r\n')) return;
      first = got;
      if (body === undefined || !got.startsWith('HTTP/1.1 100')) {
        setTimeout(() => {
          socket.destroy();
          finish();
        }, 300);
        return;
      }
      socket.write(body);
      // Until the final answer's head is in (a loaded machine may take seconds), then a moment for its body.
      const until = Date.now() + 15_000;
      const wait = () => {
        if (/\r\n\r\nHTTP\/1\.1 [2-5]\d\d [\s\S]*?\r\n\r\n/.test(got) || Date.now() > until) {
          setTimeout(() => {
            socket.destroy();
            finish();
          }, 200);
        } else setTimeout(wait, 20);
      };
      wait();
    });
    socket.on('end', () => {
      closed = true;
    });
    socket.on('error', reject);
    socket.write(head);
  });
}

const headOf = (method: string, path: string, length: number, extra: Record<string, string> = {}) =>
  `${method} ${path} HTTP/1.1\r\nHost: pier.test\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n${Object.entries(extra)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;

describe('Expect: 100-continue', () => {
  let web: PublishingService;
  let runner: RunnerService;
  let webPort: number;
  let runnerPort: number;
  let token: string;

  before(async () => {
    const config = loadConfig({ PIER_DATA_DIR: tempDir('pier-expect-'), PIER_LOG_LEVEL: 'silent', API_KEY, RUNNER_MAX_OUTPUT_BYTES: '1M' });
    web = await createPublishingService(config);
    runner = await createRunnerService(config, { backgroundLoops: false, sweeper: false });
    webPort = Number(new URL(await web.app.listen({ host: '127.0.0.1', port: 0 })).port);
    runnerPort = Number(new URL(await runner.app.listen({ host: '127.0.0.1', port: 0 })).port);
    token = (await web.products.register('expect-ext', { name: 'Expect' })).editToken;
  });
  after(async () => {
    await web.close();
    await runner.close();
  });

  test('publishing web: a 30 MB PATCH is answered 413 problem+json instead of 100, and the connection closes', async () => {
    const r = await expectContinue(webPort, headOf('PATCH', '/api/products/expect-ext', MB30, { authorization: `Bearer ${token}` }));
    assert.match(r.first, /^HTTP\/1\.1 413 /, r.first.slice(0, 200));
    assert.doesNotMatch(r.all, /100 Continue/);
    assert.match(r.first, /content-type: application\/problem\+json/i);
    assert.match(r.first, /connection: close/i);
    assert.match(r.all, /"code":"payload_too_large"/);
    assert.match(r.all, /"requestId":"[0-9a-f-]{36}"/);
  });

  test('publishing web: an unauthenticated PATCH is answered 401 without 100 (no body sent for nothing)', async () => {
    const r = await expectContinue(webPort, headOf('PATCH', '/api/products/expect-ext', 20));
    assert.match(r.first, /^HTTP\/1\.1 401 /, r.first.slice(0, 200));
    assert.doesNotMatch(r.all, /100 Continue/);
  });

  test('publishing web: a PATCH within the limit gets 100, then its body is read and applied', async () => {
    const body = JSON.stringify({ name: 'Expect Continued' });
    const r = await expectContinue(webPort, headOf('PATCH', '/api/products/expect-ext', Buffer.byteLength(body), { authorization: `Bearer ${token}` }), body);
    assert.match(r.first, /^HTTP\/1\.1 100 Continue\r\n\r\n/);
    assert.match(r.all, /HTTP\/1\.1 200 /);
    assert.equal((await web.products.show('expect-ext')).name, 'Expect Continued');
  });

  test('runner: a 30 MB body to a public route is answered 413 instead of 100', async () => {
    const r = await expectContinue(runnerPort, headOf('POST', '/oauth/register', MB30));
    assert.match(r.first, /^HTTP\/1\.1 413 /, r.first.slice(0, 200));
    assert.doesNotMatch(r.all, /100 Continue/);
  });

  test('runner: a multipart output upload whose Content-Length no output within RUNNER_MAX_OUTPUT_BYTES can have is answered 413 instead of 100', async () => {
    const head = headOf('PUT', '/api/runs/1/outputs/result.csv', MB30, { authorization: `ApiKey ${API_KEY}` }).replace(
      'Content-Type: application/json',
      'Content-Type: multipart/form-data; boundary=xyz',
    );
    const r = await expectContinue(runnerPort, head);
    assert.match(r.first, /^HTTP\/1\.1 413 /, r.first.slice(0, 200));
    assert.doesNotMatch(r.all, /100 Continue/);
    assert.match(r.all, /"code":"payload_too_large"/);
  });

  test('runner: a small body gets 100 and its answer', async () => {
    const body = JSON.stringify({ redirect_uris: ['http://127.0.0.1:9/cb'], client_name: 'expect', token_endpoint_auth_method: 'none' });
    const r = await expectContinue(runnerPort, headOf('POST', '/oauth/register', Buffer.byteLength(body)), body);
    assert.match(r.first, /^HTTP\/1\.1 100 Continue\r\n\r\n/);
    assert.match(r.all, /HTTP\/1\.1 201 /);
  });
});

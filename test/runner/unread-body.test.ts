/**
 * A body that never ends costs the runner nothing once it has answered: the answer says
 * `Connection: close` and the connection ends, whether the route never reads a body (a GET, a
 * 401 before the upload is read) or stops at a limit (an archive past MAX_WORKFLOW_BYTES gets
 * its 413 while the client is still sending). Before, node:http read and discarded such a body
 * for as long as the client sent it, at full CPU, and the upload's 413 came only at its end.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { MAX_WORKFLOW_BYTES } from '../../src/runner/workflows/upload.js';
import { dialects } from '../helpers/db.js';
import { bearer, SETUP_TOKEN, startRunner, type TestRunner } from './helpers.js';

const PASSWORD = 'a long enough password';
const MIB = Buffer.alloc(1024 * 1024, 0x61);

interface Endless {
  /** The answer's head, once it came. */
  head: Promise<string>;
  /** Resolves with the bytes sent when the server ended the connection. */
  closed: Promise<number>;
}

/**
 * Sends `head` then chunks of 1 MiB (after `prefix`, if any) for as long as the server keeps
 * the connection: a client that would never end its body. Write errors after the close are the
 * server hanging up, which is what is asked of it.
 */
function endless(base: string, head: string, prefix = ''): Endless {
  const { hostname, port } = new URL(base);
  const socket = net.connect(Number(port), hostname);
  socket.on('error', () => {});
  let sent = 0;
  let answer = '';
  let open = true;
  const head$ = new Promise<string>((resolve) => {
    socket.on('data', (d: Buffer) => {
      answer += d.toString('latin1');
      if (answer.includes('\r\n\r\n')) resolve(answer.slice(0, answer.indexOf('\r\n\r\n')));
    });
  });
  const closed = new Promise<number>((resolve) => {
    socket.once('close', () => {
      open = false;
      resolve(sent);
    });
  });
  socket.once('connect', async () => {
    socket.write(head);
    if (prefix) socket.write(`${Buffer.byteLength(prefix).toString(16)}\r\n${prefix}\r\n`);
    while (open) {
      const chunk = `${MIB.length.toString(16)}\r\n`;
      socket.write(chunk);
      socket.write(MIB);
      const ok = socket.write('\r\n');
      sent += MIB.length;
      if (!ok) await new Promise<void>((r) => (open ? socket.once('drain', r).once('close', r) : r()));
    }
  });
  return { head: head$, closed };
}

for (const target of dialects()) {
  describe(`a body that never ends ends its connection once answered (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let base: string;
    let token: string;
    let projectId: string;

    before(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url });
      base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
      const setup = await r.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } });
      token = (setup.json() as { session: { token: string } }).session.token;
      projectId = (await r.service.app.inject({ method: 'POST', url: '/api/projects', headers: bearer(token), payload: { name: 'p' } })).json().id;
    });
    after(async () => {
      await r?.close();
      await dbh?.drop();
    });

    test('a GET with a chunked body: answered, then the connection ends', { timeout: 60_000 }, async () => {
      const c = endless(base, 'GET /api/version HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n');
      const head = await c.head;
      assert.match(head, /^HTTP\/1\.1 200 /);
      assert.match(head, /\r\nconnection: close/i);
      await c.closed;
    });

    test('an upload without credentials: 401, then the connection ends', { timeout: 60_000 }, async () => {
      const c = endless(base, `POST /api/projects/${projectId}/workflows HTTP/1.1\r\nhost: x\r\ncontent-type: multipart/form-data; boundary=b\r\ntransfer-encoding: chunked\r\n\r\n`);
      const head = await c.head;
      assert.match(head, /^HTTP\/1\.1 401 /);
      assert.match(head, /\r\nconnection: close/i);
      await c.closed;
    });

    test('an archive past the limit: 413 while the client still sends, then the connection ends', { timeout: 120_000 }, async () => {
      const part = '--b\r\ncontent-disposition: form-data; name="file"; filename="w.knwf"\r\ncontent-type: application/octet-stream\r\n\r\n';
      const c = endless(
        base,
        `POST /api/projects/${projectId}/workflows HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\ncontent-type: multipart/form-data; boundary=b\r\ntransfer-encoding: chunked\r\n\r\n`,
        part,
      );
      const head = await c.head;
      assert.match(head, /^HTTP\/1\.1 413 /);
      assert.match(head, /\r\nconnection: close/i);
      const sent = await c.closed;
      assert.ok(sent > MAX_WORKFLOW_BYTES, `the server read past the limit before answering (${sent} bytes sent)`);
      const listed = await r.service.app.inject({ method: 'GET', url: `/api/projects/${projectId}/workflows`, headers: bearer(token) });
      assert.deepEqual(listed.json().items, [], 'nothing stored');
    });
  });
}

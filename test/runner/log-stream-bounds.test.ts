import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/db.js';
import { API_KEY, apiKey, bearer, makeZip, multipart, SETUP_TOKEN, startRunner, type TestRunner } from './helpers.js';

/*
 * The live log stream holds what the client has not read yet, not the log: a client that never
 * reads leaves one event in the socket's buffer, and one user's streams are capped, so idle
 * streams can neither grow the runner's memory nor take its loop.
 */

const PASSWORD = 'a long enough password';
const CHUNK = 'y'.repeat(16_000);
/** 1,200 chunks of 16,000 characters: a 19 MB log, larger than any socket buffer on loopback. */
const CHUNKS = 1_200;

/** A GET of the stream on a raw socket; `read: false` never reads the answer. */
function openStream(base: string, runId: string, token: string, read: boolean): Promise<{ socket: net.Socket; head: Promise<string> }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.write(`GET /api/runs/${runId}/logs/stream HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n\r\n`);
      let first = '';
      const head = new Promise<string>((res) => {
        socket.once('data', (d: Buffer) => {
          first = d.toString('latin1');
          if (!read) socket.pause();
          res(first.split('\r\n')[0] ?? '');
        });
      });
      resolve({ socket, head });
    });
    socket.on('error', reject);
  });
}

for (const target of dialects()) {
  describe(`the live log stream is bounded (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let base: string;
    let admin: string;
    let runId: string;
    const streams: ServerResponse[] = [];
    const inject: TestRunner['service']['app']['inject'] = ((o: never) => r.service.app.inject(o)) as never;

    before(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url });
      r.service.app.server.on('request', (req, res: ServerResponse) => {
        if (req.url?.endsWith('/logs/stream')) streams.push(res);
      });
      base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
      admin = (await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json().session.token;
      const projectId = (await inject({ method: 'POST', url: '/api/projects', headers: bearer(admin), payload: { name: 'p' } })).json().id;
      const m = multipart([{ name: 'file', file: makeZip() }]);
      const workflowId = (await inject({ method: 'POST', url: `/api/projects/${projectId}/workflows`, headers: { ...bearer(admin), ...m.headers }, payload: m.payload })).json().id;
      runId = (await inject({ method: 'POST', url: `/api/workflows/${workflowId}/runs`, headers: bearer(admin), payload: {} })).json().id;
      const ex = (await inject({ method: 'POST', url: '/api/executors/register', headers: apiKey(API_KEY), payload: { name: 'ex' } })).json();
      const claim = (await inject({ method: 'POST', url: `/api/executors/${ex.id}/claim?wait=0`, headers: apiKey(API_KEY) })).json();
      const lease = { leaseToken: claim.lease.token, attempt: 1 };
      for (let from = 1; from <= CHUNKS; from += 200) {
        const chunks = Array.from({ length: 200 }, (_, i) => ({ seq: from + i, text: CHUNK }));
        const res = await inject({ method: 'POST', url: `/api/runs/${runId}/logs`, headers: apiKey(API_KEY), payload: { ...lease, chunks } });
        assert.equal(res.statusCode, 200, res.body);
      }
    });
    after(async () => {
      await r.close();
      await dbh.drop();
    });

    test('a client that never reads holds one event in the server, not the log', { timeout: 60_000 }, async () => {
      const { socket, head } = await openStream(base, runId, admin, false);
      assert.equal(await head, 'HTTP/1.1 200 OK');
      const res = streams.at(-1)!;
      // Give the stream time to write whatever it would (the whole log, before backpressure).
      let last = -1;
      for (let i = 0; i < 20 && res.writableLength !== last; i++) {
        last = res.writableLength;
        await sleep(150);
      }
      assert.ok(res.writableLength < 1024 * 1024, `${res.writableLength} bytes queued for a client that reads nothing`);
      socket.destroy();
    });

    test("one user's streams are capped; a closed one frees its place", { timeout: 60_000 }, async () => {
      await sleep(200); // the previous test's socket is gone
      const open: net.Socket[] = [];
      for (let i = 0; i < 8; i++) {
        const s = await openStream(base, runId, admin, false);
        assert.equal(await s.head, 'HTTP/1.1 200 OK', `stream ${i + 1}`);
        open.push(s.socket);
      }
      const ninth = await openStream(base, runId, admin, true);
      assert.equal(await ninth.head, 'HTTP/1.1 429 Too Many Requests');
      ninth.socket.destroy();
      const refused = await inject({ method: 'GET', url: `/api/runs/${runId}/logs/stream`, headers: bearer(admin) });
      assert.match(refused.json().detail, /at most 8 live log streams per user/);
      open.pop()!.destroy();
      // The server sees the close; then the user may open a stream again.
      let again = '';
      for (let i = 0; i < 40 && again !== 'HTTP/1.1 200 OK'; i++) {
        await sleep(100);
        const s = await openStream(base, runId, admin, false);
        again = await s.head;
        if (again === 'HTTP/1.1 200 OK') open.push(s.socket);
        else s.socket.destroy();
      }
      assert.equal(again, 'HTTP/1.1 200 OK');
      for (const s of open) s.destroy();
    });
  });
}

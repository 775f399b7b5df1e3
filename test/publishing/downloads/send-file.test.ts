// sendRange's choice between synchronous and thread-pool reads (src/publishing/downloads/send-file.ts),
// with a stored reader over bytes in memory whose synchronous reads take as long as a fake clock
// says: how fast this machine reads from memory never decides a result.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import { after, before, test } from 'node:test';
import type { StoredReader } from '../../../src/infra/storage.js';
import { sendRange } from '../../../src/publishing/downloads/send-file.js';

const content = Buffer.from(Array.from({ length: 5 * 1024 * 1024 + 123 }, (_, i) => (i * 31) % 251));
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const calls = { now: 0, pool: 0 };
/** Milliseconds each of the next synchronous reads takes on the fake clock (reads that had to go to the disk). */
let slowNowDelays: number[] = [];
/** Milliseconds each of the next synchronous reads really blocks, unseen by the fake clock (a busy machine). */
let realNowDelays: number[] = [];
let fakeNs = 0n;
const clock = () => fakeNs;

function reader(): StoredReader {
  const copy = (buffer: Buffer, offset: number, length: number, position: number) => content.copy(buffer, offset, position, Math.min(content.length, position + length));
  return {
    size: content.length,
    mtimeMs: 0,
    changedMs: 0,
    version: 'v1',
    async read(buffer, offset, length, position) {
      calls.pool++;
      await new Promise((r) => setImmediate(r));
      return copy(buffer, offset, length, position);
    },
    readNow(buffer, offset, length, position) {
      calls.now++;
      fakeNs += BigInt(slowNowDelays.shift() ?? 0) * 1_000_000n;
      const real = realNowDelays.shift() ?? 0;
      if (real > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, real);
      return copy(buffer, offset, length, position);
    },
    async close() {},
  };
}

let server: http.Server;
let url: string;
before(async () => {
  server = http.createServer((req, res) => {
    const id = String(req.headers['x-id']);
    res.writeHead(200, { 'content-length': content.length });
    void sendRange(res, reader(), id, 0, content.length - 1, { clock });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

async function download(id: string): Promise<{ now: number; pool: number }> {
  calls.now = 0;
  calls.pool = 0;
  const body = Buffer.from(await (await fetch(url, { headers: { 'x-id': id } })).arrayBuffer());
  assert.equal(sha(body), sha(content));
  return { ...calls };
}

test('a file is read through the thread pool until it has been sent whole once; then synchronously', async () => {
  const first = await download('file-a');
  assert.equal(first.now, 0, 'nothing known of this file: no blocking read');
  assert.ok(first.pool >= 5);
  const second = await download('file-a');
  assert.equal(second.pool, 0);
  assert.ok(second.now >= 5);
  const other = await download('file-b');
  assert.equal(other.now, 0, 'warmth is per file content');
});

test('two slow synchronous reads in a row send the rest of that download through the thread pool', async () => {
  await download('file-c');
  slowNowDelays = [5, 0, 5, 5];
  const slow = await download('file-c');
  assert.equal(slow.now, 4, 'one slow read alone (a busy machine) changes nothing; two in a row do');
  assert.ok(slow.pool >= 1);
  slowNowDelays = [];
  const next = await download('file-c');
  assert.equal(next.now, 0, 'a download that met a slow read does not mark the file warm');
  assert.ok((await download('file-c')).now >= 5, 'a whole download without one does');
});

test('how long reads really take on this machine does not matter: only the injected clock is read', async () => {
  await download('file-d');
  realNowDelays = [5, 5, 5, 5, 5, 5];
  const busy = await download('file-d');
  realNowDelays = [];
  assert.ok(busy.now >= 5, 'every read stayed synchronous');
  assert.equal(busy.pool, 0);
  assert.ok((await download('file-d')).now >= 5, 'and the file stays warm');
});

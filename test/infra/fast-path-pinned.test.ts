// Clients that read slowly cannot make the fast path hold a private copy of a file per answer:
// an answer with a request id is one write of a kept buffer (fast-path.ts `slotted`), and each
// buffer a socket keeps is dropped and counted as pinned; past PINNED_MAX_BYTES (8 MiB) answers
// go out as two writes sharing the cached bytes. 200 connections that never read, each with
// 200 pipelined GETs of a 120 KB file, would otherwise hold about 27 MB of copies.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import netModule from 'node:net';
import { test } from 'node:test';
import { installFastPath } from '../../src/infra/fast-path/fast-path.js';

test('connections that never read pin at most the budget of copied answers', { timeout: 60_000 }, async () => {
  const data = randomBytes(120_000);
  const file = { full: { 'content-type': 'application/octet-stream', 'content-length': data.length }, data };
  const server = http.createServer((_req, res) => {
    res.statusCode = 404;
    res.end();
  });
  const fast = installFastPath(server, { lookup: () => file, requestId: () => randomUUID() });
  assert.ok(fast);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const before = process.memoryUsage().arrayBuffers;
  const sockets: net.Socket[] = [];
  try {
    for (let c = 0; c < 200; c++) {
      const s = netModule.connect(port, '127.0.0.1');
      s.pause();
      s.on('error', () => {});
      sockets.push(s);
      s.write('GET /f HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(200));
    }
    // Every connection answered until its socket filled up.
    await new Promise((r) => setTimeout(r, 2000));
    gc?.();
    const grown = process.memoryUsage().arrayBuffers - before;
    assert.ok(grown < 16 * 1024 * 1024, `array buffers grew by ${(grown / 1e6).toFixed(1)} MB`);
  } finally {
    for (const s of sockets) s.destroy();
    fast.closeAll();
    server.close();
  }
});

test('a connection whose last answer is never read is dropped after the keep-alive timeout', { timeout: 60_000 }, async () => {
  // Larger than what the kernel buffers on both sides take: the answer can never be written whole.
  const data = randomBytes(48 * 1024 * 1024);
  const file = { full: { 'content-type': 'application/octet-stream', 'content-length': data.length }, data };
  const server = http.createServer({ keepAliveTimeout: 500 }, (_req, res) => {
    res.statusCode = 404;
    res.end();
  });
  const fast = installFastPath(server, { lookup: () => file, requestId: () => randomUUID() });
  assert.ok(fast);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const connections = () => new Promise<number>((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
  const client = netModule.connect(port, '127.0.0.1');
  client.pause();
  client.on('error', () => {});
  try {
    client.write('GET /f HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await connections(), 1);
    let open = 1;
    for (let i = 0; i < 40 && open > 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      open = await connections();
    }
    assert.equal(open, 0, 'the server still holds the connection');
  } finally {
    client.destroy();
    fast.closeAll();
    server.close();
  }
});

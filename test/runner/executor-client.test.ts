import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { RunnerClient } from '../../src/runner/executor-agent/client.js';

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (check()) return;
    await sleep(50);
  }
  assert.fail(`timed out waiting for ${what}`);
}

test('a retry whose backoff grew while the runner was away goes out at the first answer the runner gives again (a heartbeat), not at the end of its backoff', { timeout: 120_000 }, async () => {
  let up = false;
  let logFailures = 0;
  /** The requests the runner answered once back, in order. */
  const answered: string[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    if (!up) {
      if (req.url === '/api/logs') logFailures++;
      res.writeHead(503).end();
      return;
    }
    answered.push(req.url === '/api/logs' ? 'logs' : 'heartbeat');
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  const client = new RunnerClient({ url, apiKey: 'k', log: () => {}, stopping: () => false });
  try {
    const logs = client.json('POST', '/api/logs', { chunks: [] });
    // As the executor's heartbeat loop does while the runner is away: one try a second, no retries.
    let beating = true;
    const heartbeats = (async () => {
      while (beating) {
        await client.request('POST', '/api/heartbeat', {}, { retry: false }).catch(() => {});
        await sleep(1000);
      }
    })();
    // Seven failures: the log request now waits up to 15 s before its next try.
    await until(() => logFailures >= 7, 'the log request to fail seven times');
    up = true;
    await logs;
    beating = false;
    await heartbeats;
    assert.deepEqual(answered.slice(0, 2), ['heartbeat', 'logs'], `answered in this order: ${answered.join(', ')}`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('a 429 is not retried early when other requests get answers: the runner asked to slow down', { timeout: 60_000 }, async () => {
  let limited = true;
  let tries = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    if (req.url === '/api/limited') {
      tries++;
      if (limited) {
        res.writeHead(429).end();
        return;
      }
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  const client = new RunnerClient({ url, apiKey: 'k', log: () => {}, stopping: () => false });
  try {
    const abort = new AbortController();
    const limitedRequest = client.request('POST', '/api/limited', {}, { signal: abort.signal }).catch(() => null);
    await until(() => tries >= 1, 'the first try');
    // Many answered requests meanwhile: each would wake a retry of an unreachable runner.
    for (let i = 0; i < 50; i++) await client.request('POST', '/api/other', {});
    assert.ok(tries <= 3, `${tries} tries`);
    limited = false;
    abort.abort();
    await limitedRequest;
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

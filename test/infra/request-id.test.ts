// Request ids: every answer of every HTTP listener carries X-Request-Id (a trusted
// proxy's, else a new UUID), problem bodies name it as requestId, and the request's log lines carry
// it as reqId, so a user's error report leads to the log. Checked on a real `pier serve` process.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { requestIdOf, trustedPeer } from '../../src/infra/request-id.js';
import { freePort } from '../helpers/net.js';
import { tempDir } from '../helpers/db.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

test('property: an id is the sent one only from a trusted peer and only in the accepted shape, else a new UUID', () => {
  const trusts = trustedPeer(['10.0.0.0/8', '127.0.0.1', '::1']);
  fc.assert(
    fc.property(fc.oneof(fc.string({ maxLength: 140 }), fc.stringMatching(/^[A-Za-z0-9._:-]{1,140}$/), fc.constant(undefined)), fc.constantFrom('127.0.0.1', '10.1.2.3', '::ffff:10.9.9.9', '::1', '192.168.1.1', '::ffff:192.168.1.1', undefined), (sent, peer) => {
      const id = requestIdOf(sent, peer, trusts);
      const trusted = peer !== undefined && !peer.includes('192.168');
      const usable = sent !== undefined && /^[A-Za-z0-9._:@+/=-]{1,128}$/.test(sent);
      if (trusted && usable) assert.equal(id, sent);
      else assert.match(id, UUID);
      assert.ok(/^[\x21-\x7e]+$/.test(id) && !id.includes("\"") && !id.includes("\\"), id);
    }),
    { numRuns: 2000 },
  );
});

test('trust follows PIER_TRUST_PROXY: off trusts nobody, a hop count the nearest peer, a list its members', () => {
  assert.equal(trustedPeer(false)('127.0.0.1'), false);
  // PIER_TRUST_PROXY=00 is a hop count of 0: nobody, as off.
  assert.equal(trustedPeer(0)('127.0.0.1'), false);
  const everyone = trustedPeer(['0.0.0.0/0', '::/0']);
  assert.equal(everyone('203.0.113.9'), true);
  assert.equal(everyone('2001:db8::1'), true);
  assert.equal(trustedPeer(1)('203.0.113.9'), true);
  const list = trustedPeer(['192.0.2.0/24', '2001:db8::/32']);
  assert.equal(list('192.0.2.77'), true);
  assert.equal(list('::ffff:192.0.2.77'), true);
  assert.equal(list('192.0.3.1'), false);
  assert.equal(list('2001:db8::5'), true);
  assert.equal(list('2001:db9::5'), false);
  assert.equal(list(undefined), false);
});

/**
 * A GET on a connection of its own (node:http, no agent): the fast paths answer only on a
 * connection that node:http has not taken over, so fetch's kept-alive connections never reach them.
 */
function getFresh(url: string, headers: Record<string, string>): Promise<Response> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
          resolve(new Response(Buffer.concat(chunks), { status: res.statusCode ?? 0, headers: h }));
        });
      })
      .on('error', reject);
  });
}

interface Serve {
  child: ChildProcess;
  web: string;
  downloads: string;
  runner: string;
  log(): string;
}

async function serve(extra: Record<string, string>): Promise<Serve> {
  const dataDir = tempDir('pier-reqid-');
  const [web, downloads, runner, sftp] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const env = {
    ...process.env,
    PIER_DATA_DIR: dataDir,
    PIER_HTTP_PORT: String(web),
    PIER_DOWNLOAD_PORT: String(downloads),
    RUNNER_PORT: String(runner),
    PIER_SFTP_PORT: String(sftp),
    PIER_LOG_LEVEL: 'info',
    PIER_DRAIN_DELAY_SECONDS: '0',
    ...extra,
  };
  const reg = spawnSync(process.execPath, ['bin/pier.js', 'staff', 'register', 'req-ids', '--name', 'Request ids', '--json'], { env, encoding: 'utf8' });
  assert.equal(reg.status, 0, reg.stderr);
  fs.mkdirSync(path.join(dataDir, 'storage/req-ids/assets'), { recursive: true });
  fs.writeFileSync(path.join(dataDir, 'storage/req-ids/assets/logo.txt'), 'logo');
  const child = spawn(process.execPath, ['bin/pier.js', 'serve', '--only', 'web,downloads,runner'], { env });
  let out = '';
  child.stdout!.on('data', (c) => {
    out += c;
  });
  child.stderr!.on('data', (c) => {
    out += c;
  });
  for (let i = 0; i < 300 && (out.match(/pier: \w+ listening on/g) ?? []).length < 3; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal((out.match(/pier: \w+ listening on/g) ?? []).length, 3, out);
  return { child, web: `http://127.0.0.1:${web}`, downloads: `http://127.0.0.1:${downloads}`, runner: `http://127.0.0.1:${runner}`, log: () => out };
}

async function stop(s: Serve): Promise<void> {
  s.child.kill('SIGTERM');
  await new Promise((r) => s.child.once('exit', r));
}

/** The log lines (JSON) naming `reqId`, waited for: they are written after the answer. */
async function linesOf(s: Serve, reqId: string): Promise<Record<string, unknown>[]> {
  const find = () =>
    s
      .log()
      .split('\n')
      .filter((l) => l.includes(reqId))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  for (let i = 0; i < 100 && find().length === 0; i++) await new Promise((r) => setTimeout(r, 50));
  return find();
}

describe('request ids on every listener of pier serve (no proxy trusted)', () => {
  let s: Serve;
  before(async () => {
    s = await serve({});
  });
  after(async () => stop(s));

  test('answers, errors and log lines carry the same new id; an id sent by a client is not taken', async () => {
    const targets = [
      { url: `${s.web}/product/req-ids`, status: 200 },
      // Twice: the second is answered on the pages' fast path.
      { url: `${s.web}/product/req-ids`, status: 200 },
      { url: `${s.web}/no/such/page`, status: 404 },
      { url: `${s.web}/api/products/req-ids`, status: 401, init: { method: 'PATCH', body: '{}', headers: { 'content-type': 'application/json' } } },
      { url: `${s.downloads}/assets/req-ids/logo.txt`, status: 200 },
      { url: `${s.downloads}/assets/req-ids/logo.txt`, status: 200 },
      { url: `${s.downloads}/assets/req-ids/missing.txt`, status: 404 },
      { url: `${s.runner}/api/me`, status: 401 },
      { url: `${s.runner}/healthz`, status: 200 },
      // Refused by the router before any route runs (a malformed percent-encoding): no route's
      // hooks see it, and it still gets its request line.
      { url: `${s.web}/api/products/%E0%A4%A`, status: 400 },
      { url: `${s.runner}/api/runs/%E0%A4%A`, status: 400 },
    ];
    const seen = new Set<string>();
    for (const t of targets) {
      const init: RequestInit & { headers?: Record<string, string> } = t.init ?? {};
      const res = t.init ? await fetch(t.url, { ...init, headers: { ...(init.headers ?? {}), 'x-request-id': 'chosen-by-client' } }) : await getFresh(t.url, { 'x-request-id': 'chosen-by-client' });
      assert.equal(res.status, t.status, t.url);
      const id = res.headers.get('x-request-id') ?? '';
      assert.match(id, UUID, `${t.url}: a new id, not the client's`);
      assert.ok(!seen.has(id), 'one id per request');
      seen.add(id);
      const body = await res.text();
      if (t.status >= 400) assert.equal(JSON.parse(body).requestId, id, `${t.url}: problem body names the id`);
      const lines = await linesOf(s, id);
      assert.ok(lines.length >= 1, `${t.url}: a log line with reqId ${id}\n${s.log().slice(-2000)}`);
      for (const line of lines) assert.equal(line.reqId, id);
      // One request line each, at info, with method, status, time and (on the apps) the route template.
      const requestLines = lines.filter((l) => l.msg === 'request');
      assert.equal(requestLines.length, 1, `${t.url}: one request line\n${JSON.stringify(lines)}`);
      const line = requestLines[0] as Record<string, unknown>;
      assert.equal(line.level, 30);
      assert.equal(line.status, t.status);
      assert.equal(typeof line.ms, 'number');
      assert.ok(typeof line.method === 'string' && typeof line.path === 'string', JSON.stringify(line));
      assert.ok(!String(line.path).includes('?'), 'no query string');
    }
    const patchLine = s.log().split('\n').find((l) => l.includes('"method":"PATCH"') && l.includes('"msg":"request"'));
    assert.match(patchLine ?? '', /"route":"\/api\/products\/:id"/);
    assert.ok(!s.log().includes('chosen-by-client'));
    // The pages' and the download host's fast paths answered (and logged) some of them.
    assert.ok((s.log().match(/"fast":true/g) ?? []).length >= 2, s.log().slice(-3000));
  });
});

describe('PIER_REQUEST_LOG=off', () => {
  let s: Serve;
  before(async () => {
    s = await serve({ PIER_REQUEST_LOG: 'off' });
  });
  after(async () => stop(s));

  test('no request lines, on any listener; answers still carry their ids', async () => {
    for (const url of [`${s.web}/product/req-ids`, `${s.web}/nowhere`, `${s.web}/api/products/%E0%A4%A`, `${s.downloads}/assets/req-ids/logo.txt`, `${s.downloads}/nowhere/x`, `${s.runner}/api/me`]) {
      const res = await getFresh(url, {});
      assert.match(res.headers.get('x-request-id') ?? '', UUID, url);
      if (res.status >= 400) assert.match((await res.json()).requestId, UUID, url);
    }
    await new Promise((r) => setTimeout(r, 300));
    assert.doesNotMatch(s.log(), /"msg":"request"/);
  });
});

describe('request ids behind a trusted proxy (PIER_TRUST_PROXY=127.0.0.1)', () => {
  let s: Serve;
  before(async () => {
    s = await serve({ PIER_TRUST_PROXY: '127.0.0.1' });
  });
  after(async () => stop(s));

  test("the proxy's id is kept in the answer, the problem body and the log; an unusable one is replaced", async () => {
    let n = 0;
    for (const url of [`${s.web}/product/req-ids`, `${s.web}/product/req-ids`, `${s.web}/nowhere`, `${s.downloads}/assets/req-ids/logo.txt`, `${s.downloads}/assets/req-ids/logo.txt`, `${s.downloads}/nowhere/x`, `${s.runner}/api/me`]) {
      const sent = `proxy-${n++}-01J9ZQ`;
      const res = await getFresh(url, { 'x-request-id': sent });
      assert.equal(res.headers.get('x-request-id'), sent, url);
      if (res.status >= 400) assert.equal((await res.json()).requestId, sent, url);
      else await res.arrayBuffer();
      assert.ok((await linesOf(s, sent)).length >= 1, `${url}: logged with the proxy's id`);
    }
    for (const bad of ['has space', 'x'.repeat(129), 'quote"d', 'ünïcode']) {
      const res = await fetch(`${s.web}/product/req-ids`, { headers: { 'x-request-id': Buffer.from(bad).toString('latin1') } });
      assert.match(res.headers.get('x-request-id') ?? '', UUID, bad);
      await res.arrayBuffer();
    }
  });
});

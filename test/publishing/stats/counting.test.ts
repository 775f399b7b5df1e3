import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../../src/infra/config.js';
import type { Database } from '../../../src/infra/database/index.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase, type PublishingDB } from '../../../src/publishing/db.js';
import { startDownloads } from '../../../src/publishing/downloads/index.js';
import { createDownloadServer, type DownloadServer } from '../../../src/publishing/downloads/server.js';
import { ARCHIVE } from '../../../src/publishing/stats/artifact.js';
import { type DownloadCounter, downloadCounter } from '../../../src/publishing/stats/counter.js';
import { formatDay, parseDay } from '../../../src/publishing/stats/days.js';
import { installsRepository } from '../../../src/publishing/stats/installs-repository.js';
import { downloadCountsRepository } from '../../../src/publishing/stats/repository.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { hasTool } from '../../helpers/tools.js';

const silent = { info() {}, error() {} };

/** Every stored row, as "label artifact=downloads" (the day is today's in these tests). */
async function rows(database: Database<PublishingDB>, productId = 'p1'): Promise<Record<string, number>> {
  const all = await database.db.selectFrom('download_counts').selectAll().where('product_id', '=', productId).execute();
  const out: Record<string, number> = {};
  for (const r of all) out[`${r.label} ${r.artifact}`] = Number(r.downloads);
  return out;
}

/** One request on a connection of its own, from `from` (a loopback address: each is another client) or 127.0.0.1. */
function request(base: string, p: string, init: { method?: string; headers?: Record<string, string>; from?: string } = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: p, method: init.method ?? 'GET', headers: init.headers ?? {}, agent: false, localAddress: init.from ?? '127.0.0.1' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** `n` GETs of `p` pipelined on one keep-alive connection from `from`; resolves with the raw bytes once all n answers are in. */
function pipelined(base: string, p: string, n: number, method = 'GET', from = '127.0.0.1'): Promise<string> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port: Number(u.port), host: u.hostname, localAddress: from });
    let got = Buffer.alloc(0);
    socket.on('data', (c) => {
      got = Buffer.concat([got, c]);
      const text = got.toString('latin1');
      if ((text.match(/HTTP\/1\.1 200 OK/g) ?? []).length === n && (method === 'HEAD' || text.endsWith(LAST_BYTES))) {
        socket.end();
        resolve(text);
      }
    });
    socket.on('error', reject);
    socket.write(`${method} ${p} HTTP/1.1\r\nHost: x\r\n\r\n`.repeat(n));
  });
}

/** The feature jar's bytes end with this marker: a pipelined read is complete when the last answer ends with it. */
const LAST_BYTES = 'END-OF-JAR';
const featureJar = Buffer.concat([randomBytes(2000), Buffer.from(LAST_BYTES)]);
/** Above the 128 KiB small-file limit, and above what loopback buffers hold: sent in chunks by sendRange. */
const bigArchive = randomBytes(48 * 1024 * 1024);

function writeSite(root: string): void {
  const w = (rel: string, data: string | Buffer) => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), data);
  };
  // A label is served from its current release only (downloads/releases.ts).
  w('p1/releases/5.4/1/content.jar', 'content');
  w('p1/releases/5.4/1/artifacts.jar', 'artifacts');
  w('p1/releases/5.4/1/features/org.x.f_1.0.0.v1.jar', featureJar);
  w('p1/releases/5.4/1/features/org.x.g_1.0.0.jar', 'g');
  w('p1/releases/5.4/1/plugins/org.x.b_1.0.0.jar', 'plugin');
  fs.symlinkSync('1', path.join(root, 'p1/releases/5.4/current'));
  w('p1/update-site/5.4.zip', bigArchive);
  // A released label: its current release is release 1 (releases/service.ts layout).
  w('p1/releases/5.5/1/content.jar', 'content');
  w('p1/releases/5.5/1/features/org.x.f_2.0.0.jar', 'f2');
  fs.mkdirSync(path.join(root, 'p1/update-site/5.5'), { recursive: true });
  fs.symlinkSync('1', path.join(root, 'p1/releases/5.5/current'));
}

for (const dialect of dialects()) {
  describe(`download counts on the download host (${dialect.name})`, () => {
    let db: { url: string; drop(): Promise<void> };
    let database: Database<PublishingDB>;
    let root: string;
    let server: DownloadServer;
    let counter: DownloadCounter;
    let base: string;
    const fastAnswers: string[] = [];

    before(async () => {
      db = await dialect.create();
      database = await openPublishingDatabase(db.url);
      root = tempDir('pier-counts-');
      writeSite(root);
      counter = downloadCounter({ repo: downloadCountsRepository(database.db), log: silent, flushMs: 60_000 });
      const log = {
        info(o: object) {
          const line = o as { fast?: boolean; path?: string };
          if (line.fast) fastAnswers.push(String(line.path));
        },
        error() {},
      };
      server = createDownloadServer({ storage: localStorage(root), log, counter });
      base = (await server.listen(0, '127.0.0.1')).url;
    });

    after(async () => {
      await server?.close();
      await counter?.close();
      await database?.close();
      await db?.drop();
      fs.rmSync(root, { recursive: true, force: true });
    });

    const jar = '/p1/5.4/features/org.x.f_1.0.0.v1.jar';

    test('a complete GET of a feature jar or an archive counts for its label; HEAD, 304, Range, 404, metadata and plug-ins do not', async () => {
      // HEAD of files not in memory yet: node:http answers them (the fast path only answers cached files).
      assert.equal((await request(base, '/p1/5.4/features/org.x.g_1.0.0.jar', { method: 'HEAD' })).status, 200);
      assert.equal((await request(base, '/p1/5.5@1/features/org.x.f_2.0.0.jar', { method: 'HEAD', headers: { 'if-none-match': '"old"' } })).status, 200);
      const first = await request(base, jar);
      assert.equal(first.status, 200);
      assert.deepEqual(first.body, featureJar);
      assert.equal((await request(base, '/p1/5.4/features/org.x.g_1.0.0.jar')).status, 200);
      // Not counted:
      assert.equal((await request(base, jar, { method: 'HEAD' })).status, 200);
      assert.equal((await request(base, '/p1/5.4/features/org.x.g_1.0.0.jar', { method: 'HEAD' })).status, 200);
      assert.equal((await request(base, jar, { headers: { 'if-none-match': String(first.headers.etag) } })).status, 304);
      assert.equal((await request(base, jar, { headers: { range: 'bytes=0-9' } })).status, 206);
      assert.equal((await request(base, jar, { headers: { range: 'bytes=999999-' } })).status, 416);
      assert.equal((await request(base, jar, { headers: { 'if-match': '"other"' } })).status, 412);
      assert.equal((await request(base, '/p1/5.4.zip', { headers: { range: 'bytes=0-99999' } })).status, 206);
      assert.equal((await request(base, '/p1/5.4.zip', { method: 'HEAD' })).status, 200);
      assert.equal((await request(base, '/p1/5.4/features/org.x.h_1.0.0.jar')).status, 404);
      assert.equal((await request(base, '/p1/5.4/features/')).status, 200);
      assert.equal((await request(base, '/p1/5.4/content.jar')).status, 200);
      assert.equal((await request(base, '/p1/5.4/artifacts.jar')).status, 200);
      assert.equal((await request(base, '/p1/5.4/plugins/org.x.b_1.0.0.jar')).status, 200);
      // Counted: the archive (sent in chunks), and a released label's feature by both its addresses.
      const archive = await request(base, '/p1/5.4.zip');
      assert.equal(archive.status, 200);
      assert.equal(archive.body.length, bigArchive.length);
      assert.equal((await request(base, '/p1/5.5/features/org.x.f_2.0.0.jar')).status, 200);
      assert.equal((await request(base, '/p1/5.5@1/features/org.x.f_2.0.0.jar')).status, 200);
      // A changed file (If-None-Match not matching) is a whole new download: it counts, for another client.
      assert.equal((await request(base, '/p1/5.4/features/org.x.g_1.0.0.jar', { headers: { 'if-none-match': '"old"' }, from: '127.0.0.2' })).status, 200);
      // The same client again, on a new connection: a file counts once per client and day.
      assert.equal((await request(base, '/p1/5.4/features/org.x.g_1.0.0.jar', { headers: { 'if-none-match': '"old"' } })).status, 200);
      await counter.flush();
      // 5.5's feature by both its addresses is one file of one client.
      assert.deepEqual(await rows(database), { '5.4 org.x.f': 1, '5.4 org.x.g': 2, [`5.4 ${ARCHIVE}`]: 1, '5.5 org.x.f': 1 });
    });

    test('the fast path counts its GETs, a file once per client and day, and no HEAD', async () => {
      const before = (await rows(database))['5.4 org.x.f'] ?? 0;
      // The first GET puts the jar in memory (node:http answers it; counted for 127.0.0.1 before).
      assert.equal((await request(base, jar)).status, 200);
      fastAnswers.length = 0;
      // 50 GETs pipelined on one connection (answers counted as they are handed over, read or
      // not) count once; the same client's second connection adds nothing, another client's
      // connection counts once more; HEADs never.
      await pipelined(base, jar, 50, 'GET', '127.0.0.3');
      await pipelined(base, jar, 50, 'GET', '127.0.0.3');
      await pipelined(base, jar, 50, 'GET', '127.0.0.4');
      await pipelined(base, jar, 20, 'HEAD', '127.0.0.5');
      // Answered before node:http (its log line says so).
      assert.ok(fastAnswers.filter((p) => p === jar).length >= 169, `fast answers: ${fastAnswers.length}`);
      await counter.flush();
      assert.equal((await rows(database))['5.4 org.x.f'], before + 2);
    });

    test('an archive download cut off before its last byte does not count', async () => {
      const was = (await rows(database))[`5.4 ${ARCHIVE}`];
      const u = new URL(base);
      await new Promise<void>((resolve, reject) => {
        const socket = net.connect({ port: Number(u.port), host: u.hostname, localAddress: '127.0.0.6' });
        socket.once('data', () => {
          // Some of the answer arrived: the client goes away without reading the rest.
          socket.destroy();
          resolve();
        });
        socket.on('error', reject);
        socket.write('GET /p1/5.4.zip HTTP/1.1\r\nHost: x\r\n\r\n');
      });
      // The server sees the connection go; another client's complete download afterwards is counted as usual.
      assert.equal((await request(base, '/p1/5.4.zip', { from: '127.0.0.7' })).body.length, bigArchive.length);
      await counter.flush();
      assert.equal((await rows(database))[`5.4 ${ARCHIVE}`], (was ?? 0) + 1);
    });

    if (hasTool('curl')) {
      test('curl downloads count like any client, a file once per client and day', async () => {
        const was = (await rows(database))['5.4 org.x.g'] ?? 0;
        const url = `${base}/p1/5.4/features/org.x.g_1.0.0.jar`;
        // Asynchronously: the server answers on this process's event loop.
        assert.equal((await promisify(execFile)('curl', ['-s', '--interface', '127.0.0.8', url, url], { encoding: 'utf8' })).stdout, 'gg');
        await promisify(execFile)('curl', ['-s', '--interface', '127.0.0.8', '-o', '/dev/null', url]);
        await promisify(execFile)('curl', ['-s', '--interface', '127.0.0.9', '-o', '/dev/null', url]);
        await promisify(execFile)('curl', ['-sI', '--interface', '127.0.0.10', url]);
        await counter.flush();
        assert.equal((await rows(database))['5.4 org.x.g'], was + 2, 'three GETs of one client count once, another client once more, a HEAD not');
      });
    }
  });

  describe(`download counts across a restart (${dialect.name})`, () => {
    test('a graceful close writes what was counted; a second host adds to it, and knows what the first counted', async () => {
      const db = await dialect.create();
      const dataDir = tempDir('pier-counts-host-');
      const storageDir = path.join(dataDir, 'storage');
      writeSite(storageDir);
      const config = loadConfig({ PIER_DATA_DIR: dataDir, PIER_DATABASE_URL: db.url, PIER_LOG_LEVEL: 'silent', PIER_DOWNLOAD_PORT: '0' });
      const check = await openPublishingDatabase(db.url);
      try {
        const one = await startDownloads(config, { port: 0 });
        for (const from of ['127.0.0.1', '127.0.0.2', '127.0.0.3']) assert.equal((await request(one.url, '/p1/5.4/features/org.x.g_1.0.0.jar', { from })).status, 200);
        // Well within the flush interval: only the final flush on close can have written these.
        await one.close();
        assert.deepEqual(await rows(check), { '5.4 org.x.g': 3 });
        const two = await startDownloads(config, { port: 0 });
        // Counted by the first host today: not again.
        assert.equal((await request(two.url, '/p1/5.4/features/org.x.g_1.0.0.jar', { from: '127.0.0.2' })).status, 200);
        assert.equal((await request(two.url, '/p1/5.4/features/org.x.g_1.0.0.jar', { from: '127.0.0.4' })).status, 200);
        assert.equal((await request(two.url, '/p1/5.4/features/org.x.f_1.0.0.v1.jar')).status, 200);
        await two.close();
        assert.deepEqual(await rows(check), { '5.4 org.x.g': 4, '5.4 org.x.f': 1 });
        const today = formatDay(Math.floor(Date.now() / 86_400_000));
        const installs = installsRepository(check.db);
        assert.deepEqual(await installs.labelDays('p1', ['5.4'], today, today), [{ label: '5.4', day: today, installs: 4 }]);
        assert.deepEqual(await installs.days('p1', today, today), [{ day: today, installs: 4 }]);
        assert.deepEqual(await installs.topLabels('p1', 5), [{ label: '5.4', installs: 4 }]);
      } finally {
        await check.close();
        await db.drop();
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });

  describe(`the counter (${dialect.name})`, () => {
    let db: { url: string; drop(): Promise<void> };
    let database: Database<PublishingDB>;
    before(async () => {
      db = await dialect.create();
      database = await openPublishingDatabase(db.url);
    });
    after(async () => {
      await database?.close();
      await db?.drop();
    });

    test('a failed flush keeps its downloads for the next one, and logs', async () => {
      const real = downloadCountsRepository(database.db);
      let failures = 1;
      const errors: string[] = [];
      const counter = downloadCounter({
        repo: { ...real, addFirst: async (rows) => (failures-- > 0 ? Promise.reject(new Error('database away')) : real.addFirst(rows)) },
        log: { error: (_o, msg) => errors.push(msg) },
        flushMs: 60_000,
      });
      counter.add('p2\u00005.4\u0000org.x.f', 'c1');
      counter.add('p2\u00005.4\u0000org.x.f', 'c1');
      counter.add('p2\u00005.4\u0000org.x.f', 'c2');
      await assert.rejects(counter.flush(), /database away/);
      assert.equal(errors.length, 1);
      counter.add('p2\u00005.4\u0000org.x.f', 'c2');
      counter.add('p2\u00005.4\u0000org.x.f', 'c3');
      await counter.close();
      assert.deepEqual(await rows(database, 'p2'), { '5.4 org.x.f': 3 });
    });

    test('downloads are counted on the UTC day they happen, across midnight', async () => {
      let now = Date.UTC(2026, 10, 26, 23, 59, 59, 500);
      const counter = downloadCounter({ repo: downloadCountsRepository(database.db), log: silent, flushMs: 60_000, now: () => now });
      counter.add('p3\u00005.4\u0000org.x.f', 'c1');
      now += 1000;
      // The same client and file on the next day counts again.
      counter.add('p3\u00005.4\u0000org.x.f', 'c1');
      counter.add('p3\u00005.4\u0000#archive', 'c1');
      await counter.close();
      const all = await database.db.selectFrom('download_counts').selectAll().where('product_id', '=', 'p3').orderBy('day').orderBy('artifact').execute();
      assert.deepEqual(
        all.map((r) => [r.day, r.artifact, Number(r.downloads)]),
        [
          ['2026-11-26', 'org.x.f', 1],
          ['2026-11-27', '#archive', 1],
          ['2026-11-27', 'org.x.f', 1],
        ],
      );
      assert.equal(parseDay('2026-11-27'), Math.floor(now / 86_400_000));
    });

    test('past its key limit the counter flushes at once', async () => {
      const counter = downloadCounter({ repo: downloadCountsRepository(database.db), log: silent, flushMs: 3_600_000, maxKeys: 3 });
      for (const f of ['a', 'b', 'c']) counter.add(`p4\u00005.4\u0000${f}`, 'c1');
      // No timer is due for an hour: only the early flush writes these.
      for (let i = 0; i < 500 && Object.keys(await rows(database, 'p4')).length < 3; i++) await new Promise((r) => setTimeout(r, 10));
      assert.deepEqual(await rows(database, 'p4'), { '5.4 a': 1, '5.4 b': 1, '5.4 c': 1 });
      await counter.close();
    });
  });
}

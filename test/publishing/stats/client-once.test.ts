// A file counts once per client and UTC day (README "Download counts"), however the client
// connects (a new connection per download, pipelining, the fast path or node:http), across
// download hosts sharing one database, and without any address written to the database.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Database } from '../../../src/infra/database/index.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase, type PublishingDB } from '../../../src/publishing/db.js';
import { createDownloadServer, type DownloadServer } from '../../../src/publishing/downloads/server.js';
import { countKey } from '../../../src/publishing/stats/artifact.js';
import { type DownloadCounter, downloadCounter } from '../../../src/publishing/stats/counter.js';
import { formatDay } from '../../../src/publishing/stats/days.js';
import { downloadCountsRepository } from '../../../src/publishing/stats/repository.js';
import { makeCurrent } from '../downloads/released.js';
import { dialects, tempDir } from '../../helpers/db.js';

const silent = { info() {}, error() {} };
const JAR = '/p1/5.4/features/org.x.f_1.0.0.jar';

/** A GET on a connection of its own from `from` (each loopback address is another client). */
function get(base: string, p: string, from: string, headers: Record<string, string> = {}): Promise<number> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    http
      .get({ host: u.hostname, port: u.port, path: p, agent: false, localAddress: from, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', reject);
  });
}

/** `n` GETs pipelined on one connection from `from`, each with `extra` header lines; resolves once all n answers are in. */
function pipelined(base: string, p: string, n: number, from: string, extra = ''): Promise<void> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port: Number(u.port), host: u.hostname, localAddress: from });
    let got = '';
    socket.on('data', (c) => {
      got += c.toString('latin1');
      if ((got.match(/HTTP\/1\.1 200 OK/g) ?? []).length === n && got.endsWith('feature')) {
        socket.end();
        resolve();
      }
    });
    socket.on('error', reject);
    socket.write(`GET ${p} HTTP/1.1\r\nHost: x\r\n${extra}\r\n`.repeat(n));
  });
}

async function downloads(database: Database<PublishingDB>, artifact = 'org.x.f'): Promise<number> {
  const rows = await database.db.selectFrom('download_counts').select('downloads').where('product_id', '=', 'p1').where('artifact', '=', artifact).execute();
  return rows.reduce((a, r) => a + Number(r.downloads), 0);
}

/** Every stats table's rows as text: what an address would show up in if it were stored. */
async function everythingStored(database: Database<PublishingDB>): Promise<string> {
  const tables = ['download_counts', 'download_label_days', 'download_label_totals', 'download_product_days', 'download_clients', 'download_day_keys'] as const;
  const out: unknown[] = [];
  for (const t of tables) out.push(await database.db.selectFrom(t).selectAll().execute());
  return JSON.stringify(out);
}

for (const dialect of dialects()) {
  describe(`a file counts once per client and day (${dialect.name})`, () => {
    let db: { url: string; drop(): Promise<void> };
    /** Two download hosts, each with its own database connection and counter, as two instances. */
    const hosts: { database: Database<PublishingDB>; counter: DownloadCounter; server: DownloadServer; url: string }[] = [];
    let root: string;

    before(async () => {
      db = await dialect.create();
      root = tempDir('pier-once-');
      // A label is served from its current release only (downloads/releases.ts).
      const jar = path.join(root, 'p1/releases/5.4/1/features/org.x.f_1.0.0.jar');
      fs.mkdirSync(path.dirname(jar), { recursive: true });
      fs.writeFileSync(jar, 'feature');
      makeCurrent(root, 'p1', '5.4');
      fs.mkdirSync(path.join(root, 'p1/update-site'), { recursive: true });
      fs.writeFileSync(path.join(root, 'p1/update-site/5.4.zip'), 'archive');
      // On PostgreSQL each host has its own connection pool, as two instances do. Two SQLite
      // handles in one process would wait for each other's write lock on one thread
      // (infra/database shareSqliteHandles): there the hosts share one, as parts of one process.
      const shared = dialect.name === 'sqlite' ? await openPublishingDatabase(db.url) : null;
      for (let i = 0; i < 2; i++) {
        const database = shared ?? (await openPublishingDatabase(db.url));
        const counter = downloadCounter({ repo: downloadCountsRepository(database.db), log: silent, flushMs: 3_600_000 });
        // The first trusts one proxy hop (PIER_TRUST_PROXY=1), the second nobody.
        const server = createDownloadServer({ storage: localStorage(root), log: silent, counter, trustProxy: i === 0 ? 1 : false });
        hosts.push({ database, counter, server, url: (await server.listen(0, '127.0.0.1')).url });
      }
    });

    after(async () => {
      for (const h of hosts) {
        await h.server.close();
        await h.counter.close();
      }
      for (const d of new Set(hosts.map((h) => h.database))) await d.close();
      await db?.drop();
      fs.rmSync(root, { recursive: true, force: true });
    });

    const flush = () => Promise.all(hosts.map((h) => h.counter.flush()));
    const one = () => hosts[0] as (typeof hosts)[number];
    const two = () => hosts[1] as (typeof hosts)[number];

    test('one client opening a new connection per download counts once, on either path; other clients count once each', async () => {
      const base = one().url;
      for (let i = 0; i < 30; i++) assert.equal(await get(base, JAR, '127.0.1.1'), 200);
      await pipelined(base, JAR, 40, '127.0.1.1');
      await pipelined(base, JAR, 40, '127.0.1.1');
      for (let i = 0; i < 5; i++) assert.equal(await get(base, '/p1/5.4.zip', '127.0.1.1'), 200);
      await flush();
      assert.equal(await downloads(one().database), 1);
      assert.equal(await downloads(one().database, '#archive'), 1);
      await Promise.all(['127.0.1.2', '127.0.1.3', '127.0.1.4'].map((from) => get(base, JAR, from)));
      await pipelined(base, JAR, 10, '127.0.1.5');
      await flush();
      assert.equal(await downloads(one().database), 5);
    });

    test('two download hosts sharing the database count a client once between them, also flushing at once', async () => {
      const before = await downloads(one().database);
      // The same clients at both hosts, the flushes of both racing; then again.
      for (let round = 0; round < 3; round++) {
        await Promise.all(
          ['127.0.2.1', '127.0.2.2', '127.0.2.3', '127.0.1.1'].flatMap((from) => [get(one().url, JAR, from), get(two().url, JAR, from), pipelined(two().url, JAR, 3, from)]),
        );
        await flush();
      }
      assert.equal(await downloads(one().database), before + 3);
      assert.equal(await downloads(two().database), before + 3);
    });

    test('many clients at two hosts whose flushes race: each counts exactly once', async () => {
      const key = countKey('p2', '5.4', 'org.x.f');
      const archive = countKey('p2', '5.4', '#archive');
      for (let round = 0; round < 4; round++) {
        // 600 clients: each host sees two thirds of them, the middle third at both.
        for (let c = 0; c < 600; c++) {
          if (c < 400) one().counter.add(key, `10.0.${c >> 8}.${c & 255}`);
          if (c >= 200) two().counter.add(key, `10.0.${c >> 8}.${c & 255}`);
          if (c % 3 === 0) (c % 2 ? one() : two()).counter.add(archive, `10.0.${c >> 8}.${c & 255}`);
        }
        await flush();
      }
      const rows = await one().database.db.selectFrom('download_counts').select(['artifact', 'downloads']).where('product_id', '=', 'p2').orderBy('artifact').execute();
      assert.deepEqual(
        rows.map((r) => [r.artifact, Number(r.downloads)]),
        [
          ['#archive', 200],
          ['org.x.f', 600],
        ],
      );
      const installs = await one().database.db.selectFrom('download_label_days').select('installs').where('product_id', '=', 'p2').executeTakeFirstOrThrow();
      assert.equal(Number(installs.installs), 800);
    });

    test('behind a trusted proxy each forwarded client counts (an IPv6 /64 as one); without trust the header is ignored', async () => {
      const via = (base: string, xff: string) => get(base, JAR, '127.0.3.1', { 'x-forwarded-for': xff });
      const before = await downloads(one().database);
      // Host one trusts its peer as a proxy: the forwarded clients count.
      await via(one().url, '203.0.113.1');
      await via(one().url, '198.51.100.7, 203.0.113.2');
      await via(one().url, '203.0.113.1');
      await via(one().url, '2001:db8::1');
      await via(one().url, '2001:db8::2');
      await via(one().url, '2001:db8:0:1::1');
      await pipelined(one().url, JAR, 5, '127.0.3.1', 'X-Forwarded-For: 203.0.113.3\r\n');
      await flush();
      assert.equal(await downloads(one().database), before + 5);
      // Host two trusts no proxy: whatever the header says, the peer is the client.
      await via(two().url, '203.0.113.50');
      await via(two().url, '203.0.113.51');
      await pipelined(two().url, JAR, 5, '127.0.3.9', 'X-Forwarded-For: 203.0.113.52\r\n');
      await flush();
      assert.equal(await downloads(one().database), before + 5 + 2);
    });

    test('no address is stored: the counts, the rolled-up installs, the digests and the day keys hold none', async () => {
      const stored = await everythingStored(one().database);
      assert.ok(stored.includes('org.x.f'), 'the scan reads the tables');
      for (const address of ['127.0.1.1', '127.0.2.2', '10.0.1.44', '203.0.113.1', '2001:db8', '127.0.3']) assert.ok(!stored.includes(address), address);
    });
  });

  describe(`client digests last a day (${dialect.name})`, () => {
    test("a day's digests and key are deleted the day after next; the same client counts again on a new day", async () => {
      const db = await dialect.create();
      const database = await openPublishingDatabase(db.url);
      try {
        let now = Date.UTC(2026, 10, 26, 12);
        const counter = downloadCounter({ repo: downloadCountsRepository(database.db), log: silent, flushMs: 3_600_000, now: () => now });
        const key = countKey('p1', '5.4', 'org.x.f');
        const days = async (table: 'download_clients' | 'download_day_keys') => (await database.db.selectFrom(table).select('day').distinct().orderBy('day').execute()).map((r) => r.day.trim());
        counter.add(key, '192.0.2.1');
        await counter.flush();
        now += 86_400_000;
        counter.add(key, '192.0.2.1');
        counter.add(key, '192.0.2.1');
        await counter.flush();
        assert.deepEqual(await days('download_clients'), ['2026-11-26', '2026-11-27']);
        now += 86_400_000;
        counter.add(key, '192.0.2.2');
        await counter.close();
        // On the 28th only the 27th and the 28th are kept.
        assert.deepEqual(await days('download_clients'), ['2026-11-27', '2026-11-28']);
        assert.deepEqual(await days('download_day_keys'), ['2026-11-27', '2026-11-28']);
        const rows = await database.db.selectFrom('download_counts').select(['day', 'downloads']).orderBy('day').execute();
        assert.deepEqual(
          rows.map((r) => [r.day.trim(), Number(r.downloads)]),
          [
            ['2026-11-26', 1],
            ['2026-11-27', 1],
            ['2026-11-28', 1],
          ],
        );
        assert.equal(formatDay(Math.floor(now / 86_400_000)), '2026-11-28');
      } finally {
        await database.close();
        await db.drop();
      }
    });
  });
}

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_CRAWL_LIMITS } from '../../../src/publishing/crawler/crawl.js';
import { isolatedCrawler } from '../../../src/publishing/crawler/isolated.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { buildSite, exampleSpec } from '../../helpers/p2-fixtures.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';
import { serveDir } from './serve.js';

// Crawls run in a worker thread with memory and wall-time limits: a hostile site costs only its
// own crawl (a fatal problem saying which limit), and the serving process keeps answering.

/** Serves the file at `file` and calls `then` once the response is sent. */
const serveThen = (file: string, then: () => void) => (res: http.ServerResponse) => {
  const body = fs.readFileSync(file);
  res.writeHead(200, { 'content-length': body.length });
  res.end(body, then);
};

describe('isolated crawls', () => {
  let db: { url: string; drop(): Promise<void> };
  let web: RunningPublishing;
  let root: string;
  before(async () => {
    db = await dialects()[0]!.create();
    web = await startPublishing(db.url, {}, { PIER_CRAWL_SETTLE_SECONDS: '0' });
    root = tempDir('pier-isolation-');
  });
  after(async () => {
    await web.close();
    await db.drop();
    fs.rmSync(root, { recursive: true, force: true });
  });

  test('a 3 KB content.xml.xz of 16 MiB of <p/>: the crawl reports it, and /healthz answers while the crawl runs', async () => {
    const site = path.join(root, 'bomb');
    buildSite(site, exampleSpec('xz'));
    const xml = `<?xml version='1.0' encoding='UTF-8'?>\n<repository name='x' type='t' version='1'>${'<p/>'.repeat(4 * 1024 * 1024 - 32)}</repository>\n`;
    fs.writeFileSync(path.join(site, 'content.xml'), xml);
    fs.rmSync(path.join(site, 'content.xml.xz'));
    execFileSync('xz', ['-9', path.join(site, 'content.xml')]);
    assert.ok(fs.statSync(path.join(site, 'content.xml.xz')).size < 8 * 1024, 'a few KB compressed');

    let healthz: Promise<number> | null = null;
    let healthzAnswered!: () => void;
    const answered = new Promise<void>((r) => (healthzAnswered = r));
    const order: string[] = [];
    const server = await serveDir(root, {
      // Once the bomb is on its way to the crawl, a user asks the web part for /healthz.
      '/bomb/content.xml.xz': serveThen(path.join(site, 'content.xml.xz'), () => {
        healthz = fetch(`${web.url}/healthz`).then((r) => {
          order.push('healthz');
          healthzAnswered();
          return r.status;
        });
      }),
      // The crawl cannot finish before the user got the answer (if the serving thread were
      // busy with the bomb, this would wait for it).
      '/bomb/artifacts.xml.xz': (res) => void answered.then(() => serveThen(path.join(site, 'artifacts.xml.xz'), () => {})(res)),
    });
    const crawler = isolatedCrawler(DEFAULT_CRAWL_LIMITS);
    try {
      const r = await crawler.crawl(`${server.url}/bomb/`, `${server.url}/bomb/`);
      order.push('crawl');
      assert.deepEqual(order, ['healthz', 'crawl']);
      assert.equal(await healthz, 200);
      const xmlProblem = r.problems.find((p) => p.code === 'xml_error');
      assert.match(xmlProblem?.message ?? '', /^content\.xml: more than 500000 XML elements$/, JSON.stringify(r.problems));
      assert.equal(r.summary.fatal, true);
      assert.ok(r.problems.some((p) => p.code === 'metadata_unreadable'));
    } finally {
      await crawler.close();
      await server.close();
    }
  });

  test('a content.xml.xz expanding beyond the XML limit is refused with a message naming the file and the limit', async () => {
    const site = path.join(root, 'big');
    buildSite(site, exampleSpec('xz'));
    fs.writeFileSync(path.join(site, 'content.xml'), `<repository>${' '.repeat(17 * 1024 * 1024)}</repository>`);
    fs.rmSync(path.join(site, 'content.xml.xz'));
    execFileSync('xz', ['-9', path.join(site, 'content.xml')]);
    const server = await serveDir(root);
    const crawler = isolatedCrawler(DEFAULT_CRAWL_LIMITS);
    try {
      const r = await crawler.crawl(`${server.url}/big/`, `${server.url}/big/`);
      assert.ok(r.problems.some((p) => p.message === 'content.xml.xz expands beyond 16 MiB'), JSON.stringify(r.problems));
      assert.equal(r.summary.fatal, true);
    } finally {
      await crawler.close();
      await server.close();
    }
  });

  test('memory and wall-time limits end the crawl (not the process) with a message naming the limit; the next crawl gets a fresh worker', async () => {
    // Parsed XML takes many times its size: 400,000 units in 11 MiB need far more than 48 MiB.
    const heavy = path.join(root, 'heavy');
    buildSite(heavy, exampleSpec('xml'));
    fs.writeFileSync(path.join(heavy, 'content.xml'), `<repository><units>${"<unit id='a' version='1'/>".repeat(400_000)}</units></repository>`);
    fs.rmSync(path.join(heavy, 'p2.index'));
    const good = path.join(root, 'good');
    buildSite(good, exampleSpec('jar'));
    const server = await serveDir(root, { '/stalled/p2.index': () => {} });
    const small = isolatedCrawler(DEFAULT_CRAWL_LIMITS, { maxMemoryMb: 48, timeoutMs: 600_000 });
    const slow = isolatedCrawler({ ...DEFAULT_CRAWL_LIMITS, timeoutMs: 600_000 }, { maxMemoryMb: 256, timeoutMs: 2_000 });
    try {
      await assert.rejects(small.crawl(`${server.url}/heavy/`, `${server.url}/heavy/`), { name: 'CrawlAborted', message: 'crawl exceeded the memory limit of 48 MiB (PIER_CRAWL_MAX_MEMORY_MB)' });
      assert.equal((await fetch(`${web.url}/healthz`)).status, 200);
      const ok = await small.crawl(`${server.url}/good/`, `${server.url}/good/`);
      assert.equal(ok.summary.nodes, 4);
      // A server that never answers, with a per-request timeout longer than the crawl's.
      await assert.rejects(slow.crawl(`${server.url}/stalled/`, `${server.url}/stalled/`), { name: 'CrawlAborted', message: 'crawl exceeded 2 s (PIER_CRAWL_TIMEOUT_SECONDS)' });
      assert.equal((await fetch(`${web.url}/healthz`)).status, 200);
    } finally {
      await small.close();
      await slow.close();
      await server.close();
    }
  });
});

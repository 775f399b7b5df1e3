// The download host's HTML index of a big update-site folder: served in pages of bounded size,
// each page listed, stat-ed (asynchronously, never by a run of synchronous stats) and rendered
// once per version of its folder however many clients ask, and built again as soon as the folder
// changes (an entry added, removed, or its times set), within bounded memory.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import zlib from 'node:zlib';
import fc from 'fast-check';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { localStorage } from '../../../src/infra/storage-local.js';
import type { Storage, StoredEntry } from '../../../src/infra/storage.js';
import { FolderPages } from '../../../src/publishing/downloads/folder-pages.js';
import { acceptsGzip } from '../../../src/publishing/downloads/http-file.js';
import { FOLDER_PAGE_ENTRIES } from '../../../src/publishing/downloads/index-page.js';
import { createDownloadServer, type DownloadServer } from '../../../src/publishing/downloads/server.js';
import { tempDir } from '../../helpers/db.js';
import { makeCurrent } from './released.js';

const silent = { info() {}, error() {} };
const FILES = 4 * FOLDER_PAGE_ENTRIES + 345;

describe('download host folder index', () => {
  let root: string;
  let real: Storage;
  let server: DownloadServer;
  let base: string;
  /** Entries the server stat-ed one by one (the synchronous-backed `stat`) and through statNames. */
  const counts = { stat: 0, statNames: 0, statNamesCalls: 0, largestBatch: 0, listings: 0 };
  const reset = () => Object.assign(counts, { stat: 0, statNames: 0, statNamesCalls: 0, largestBatch: 0, listings: 0 });
  // The download host serves a label from its current release only.
  const dir = () => path.join(root, 'big-site/releases/5.4/1/plugins');
  const url = (query = '') => `${base}/big-site/5.4/plugins/${query}`;

  before(async () => {
    root = tempDir('pier-dl-index-');
    fs.mkdirSync(dir(), { recursive: true });
    for (let i = 0; i < FILES; i++) fs.writeFileSync(path.join(dir(), `b${String(i).padStart(5, '0')}.jar`), 'x');
    fs.mkdirSync(path.join(dir(), 'b00000-sub'));
    fs.writeFileSync(path.join(dir(), '.pier-tmp-0123456789abcdef'), 'half an upload');
    makeCurrent(root, 'big-site', '5.4');
    real = localStorage(root);
    // The real storage, counting what each request has it look at.
    const counting: Storage = Object.assign(Object.create(real) as Storage, {
      stat: (key: string) => {
        counts.stat++;
        return real.stat(key);
      },
      statNames: (key: string, names: readonly string[]) => {
        counts.statNames += names.length;
        counts.statNamesCalls++;
        counts.largestBatch = Math.max(counts.largestBatch, names.length);
        return real.statNames(key, names);
      },
      listNames: (key: string) => {
        counts.listings++;
        return real.listNames(key);
      },
      list: async (key: string) => {
        const entries = await real.list(key);
        counts.stat += entries?.length ?? 0;
        return entries;
      },
    });
    server = createDownloadServer({ storage: counting, log: silent });
    base = (await server.listen(0, '127.0.0.1')).url;
  });
  after(async () => {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  const names = (html: string) => [...html.matchAll(/<a href="(b\d+\.jar)">/g)].map((m) => m[1] as string);

  test('a big folder is listed in pages of bounded size, each linking the next, together every entry once in order', async () => {
    assert.ok(FOLDER_PAGE_ENTRIES <= 500);
    const seen: string[] = [];
    let next: string | null = url();
    let pages = 0;
    while (next) {
      reset();
      const res: Response = await fetch(next);
      assert.equal(res.status, 200);
      const html: string = await res.text();
      const page = names(html);
      assert.ok(page.length <= FOLDER_PAGE_ENTRIES, `${page.length} rows on one page`);
      assert.ok(counts.statNames <= FOLDER_PAGE_ENTRIES, `${counts.statNames} entries looked at for one page`);
      assert.doesNotMatch(html, /pier-tmp/);
      seen.push(...page);
      pages++;
      const link = /<a rel="next" href="([^"]+)">/.exec(html)?.[1];
      next = link ? new URL(link.replace(/&amp;/g, '&'), next).href : null;
    }
    assert.equal(pages, Math.ceil((FILES + 1) / FOLDER_PAGE_ENTRIES));
    assert.equal(seen.length, FILES);
    assert.deepEqual(seen, [...seen].sort());
    assert.equal(new Set(seen).size, FILES);
  });

  test("a page's entries are looked up through the asynchronous statNames, not one synchronous stat each", async () => {
    fs.writeFileSync(path.join(dir(), 'a-change.jar'), 'x');
    reset();
    assert.equal((await fetch(url('?page=2'))).status, 200);
    assert.equal(counts.statNames, FOLDER_PAGE_ENTRIES, 'one page of entries');
    assert.ok(counts.stat <= 2, `${counts.stat} entries stat-ed one by one (the folder itself only)`);
    fs.rmSync(path.join(dir(), 'a-change.jar'));
  });

  test('a page is built once per version of its folder: repeated and concurrent requests read nothing more', async () => {
    fs.writeFileSync(path.join(dir(), 'a-new.jar'), 'x');
    reset();
    const pages = await Promise.all(Array.from({ length: 20 }, () => fetch(url()).then((r) => r.text())));
    for (const html of pages) assert.match(html, /<a href="a-new\.jar">/);
    assert.equal(counts.listings, 1, 'one listing for all');
    assert.equal(counts.statNamesCalls, 1, 'one page built for all');
    reset();
    for (let i = 0; i < 5; i++) assert.equal(await (await fetch(url())).text(), pages[0]);
    assert.deepEqual([counts.listings, counts.statNamesCalls, counts.statNames], [0, 0, 0], 'served from the cache');
    // Another page of the same version shares the listing.
    assert.equal((await fetch(url('?page=3'))).status, 200);
    assert.deepEqual([counts.listings, counts.statNamesCalls], [0, 1]);
    fs.rmSync(path.join(dir(), 'a-new.jar'));
  });

  test('the next request after a change shows it: an entry added, removed, or its times set through the storage', async () => {
    const first = await (await fetch(url())).text();
    assert.doesNotMatch(first, /a-first/);
    fs.writeFileSync(path.join(dir(), 'a-first.jar'), 'x');
    assert.match(await (await fetch(url())).text(), /<a href="a-first\.jar">/);
    fs.rmSync(path.join(dir(), 'a-first.jar'));
    assert.doesNotMatch(await (await fetch(url())).text(), /a-first/);

    // SFTP SETSTAT / `put -p`: the file's time changes in place, the folder's entries do not.
    const row = (html: string) => /<a href="b00001\.jar">b00001\.jar<\/a><\/td><td>([^<]+)<\/td>/.exec(html)?.[1];
    assert.notEqual(row(await (await fetch(url())).text()), '2001-02-03 04:05');
    await real.setTimes('big-site/releases/5.4/1/plugins/b00001.jar', Date.UTC(2001, 1, 3, 4, 5), Date.UTC(2001, 1, 3, 4, 5));
    assert.equal(row(await (await fetch(url())).text()), '2001-02-03 04:05');
  });

  test('pages are sent gzipped to clients that take it (the same HTML), with an ETag per coding that answers 304', async () => {
    const get = (headers: Record<string, string>) =>
      new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
        http
          .get(url('?page=2'), { headers }, (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
          })
          .on('error', reject);
      });
    const plain = await get({});
    const gz = await get({ 'accept-encoding': 'br;q=1, gzip;q=0.5' });
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.ok(gz.body.length * 4 < plain.body.length, `${gz.body.length} gzipped bytes for ${plain.body.length}`);
    assert.deepEqual(zlib.gunzipSync(gz.body), plain.body);
    assert.equal(gz.headers.vary, 'accept-encoding');
    assert.notEqual(gz.headers.etag, plain.headers.etag);
    assert.equal((await get({ 'if-none-match': String(plain.headers.etag) })).status, 304);
    assert.equal((await get({ 'accept-encoding': 'gzip', 'if-none-match': String(gz.headers.etag) })).status, 304);
    assert.equal((await get({ 'accept-encoding': 'gzip', 'if-none-match': String(plain.headers.etag) })).status, 200);
  });

  test('a subfolder shows no time (its changes are not its parent\'s), and pages past the end or not numbers are 404 problems', async () => {
    const html = await (await fetch(url())).text();
    assert.match(html, /<a href="b00000-sub\/">b00000-sub\/<\/a><\/td><td>-<\/td>/);
    assert.equal((await fetch(url('?page=99'))).status, 404);
    assert.equal((await fetch(url('?page=x'))).status, 404);
  });
});

test('the caches of names and pages stay within their byte bounds, whatever is asked', async () => {
  const folders = new Map<string, string[]>();
  for (let f = 0; f < 30; f++) folders.set(`p/update-site/l/f${f}`, Array.from({ length: 1200 }, (_, i) => `entry-${f}-${String(i).padStart(5, '0')}-${'x'.repeat(40)}.jar`));
  const storage = {
    async listNames(key: string) {
      return folders.get(key)?.slice() ?? null;
    },
    async statNames(_key: string, names: readonly string[]): Promise<(StoredEntry | null)[]> {
      return names.map((name) => ({ name, type: 'file', size: 1, mtimeMs: 0, version: '1' }));
    },
  };
  const limits = { namesBytes: 400 * 1024, pagesBytes: 300 * 1024 };
  const pages = new FolderPages(storage, limits);
  for (let round = 0; round < 2; round++) {
    for (const key of folders.keys()) {
      for (let page = 1; page <= 3; page++) {
        const p = await pages.page(key, `v${round}`, `/${key}/`, page);
        assert.equal(p.kind, 'page');
        const { names: n, pages: g } = pages.bytes;
        assert.ok(n <= limits.namesBytes && g <= limits.pagesBytes, JSON.stringify(pages.bytes));
      }
    }
  }
  assert.deepEqual(await pages.page('p/update-site/l/none', 'v', '/x/', 1), { kind: 'missing' });
  assert.deepEqual(await pages.page('p/update-site/l/f0', 'v9', '/x/', 4), { kind: 'beyond', pages: 3 });
});

test('property: Accept-Encoding takes gzip when gzip (or x-gzip) has a weight above 0, or * does and gzip is not named', () => {
  const coding = fc.constantFrom('gzip', 'GZIP', 'x-gzip', 'br', 'deflate', 'identity', '*', 'zstd');
  const weight = fc.option(fc.constantFrom('0', '0.0', '0.5', '1', '0.001', '1.0'), { nil: undefined });
  fc.assert(
    fc.property(fc.array(fc.tuple(coding, weight), { maxLength: 6 }), (list) => {
      const header = list.map(([c, q]) => (q === undefined ? c : `${c};q=${q}`)).join(', ');
      const ok = (q: string | undefined) => q === undefined || Number(q) > 0;
      const named = list.filter(([c]) => ['gzip', 'x-gzip'].includes(c.toLowerCase()));
      const star = list.filter(([c]) => c === '*');
      const expected = named.length ? named.some(([, q]) => ok(q)) : star.length ? ok(star.at(-1)?.[1]) : false;
      assert.equal(acceptsGzip(header || undefined), expected, header);
    }),
  );
});

test('the example workflows of a product have a folder index at /workflows/<id>/ (product pages link it); assets have none', async () => {
  const root = tempDir('pier-dl-workflows-');
  fs.mkdirSync(path.join(root, 'wf-site', 'workflows', 'demo'), { recursive: true });
  fs.mkdirSync(path.join(root, 'wf-site', 'assets'), { recursive: true });
  fs.writeFileSync(path.join(root, 'wf-site', 'workflows', 'a.knwf'), 'wf');
  fs.writeFileSync(path.join(root, 'wf-site', 'workflows', 'demo', 'b.knwf'), 'wf');
  fs.writeFileSync(path.join(root, 'wf-site', 'assets', 'x.png'), 'png');
  const server = createDownloadServer({ storage: localStorage(root), log: silent });
  const base = (await server.listen(0, '127.0.0.1')).url;
  try {
    const index = await fetch(`${base}/workflows/wf-site/`);
    assert.equal(index.status, 200);
    const html = await index.text();
    assert.match(html, /<a href="a\.knwf">/);
    assert.match(html, /<a href="demo\/">/);
    assert.equal((await fetch(`${base}/workflows/wf-site/demo/`)).status, 200);
    assert.equal((await fetch(`${base}/workflows/wf-site/a.knwf`)).status, 200);
    const bare = await fetch(`${base}/workflows/wf-site`, { redirect: 'manual' });
    assert.equal(bare.status, 301);
    assert.equal(bare.headers.get('location'), '/workflows/wf-site/');
    assert.equal((await fetch(`${base}/assets/wf-site/`)).status, 404);
    assert.equal((await fetch(`${base}/workflows/no-such-site/`)).status, 404);
  } finally {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
});

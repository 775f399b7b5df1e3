// The download host's HTML index of a big update-site folder: served in pages of bounded size,
// so one anonymous request never reads, stats and renders a whole huge folder at once.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { localStorage } from '../../../src/infra/storage-local.js';
import type { Storage } from '../../../src/infra/storage.js';
import { FOLDER_PAGE_ENTRIES } from '../../../src/publishing/downloads/index-page.js';
import { createDownloadServer, type DownloadServer } from '../../../src/publishing/downloads/server.js';
import { tempDir } from '../../helpers/db.js';
import { makeCurrent } from './released.js';

const silent = { info() {}, error() {} };
const FILES = 2 * 1000 + 345;

describe('download host folder index', () => {
  let root: string;
  let server: DownloadServer;
  let base: string;
  /** Files the server looked at (stat or list entries) for the last request. */
  let looked = 0;
  /** Whole listings of a folder the server read. */
  let listings = 0;

  before(async () => {
    root = tempDir('pier-dl-index-');
    const dir = path.join(root, 'big-site/releases/5.4/1/plugins');
    fs.mkdirSync(dir, { recursive: true });
    for (let i = 0; i < FILES; i++) fs.writeFileSync(path.join(dir, `b${String(i).padStart(5, '0')}.jar`), 'x');
    fs.writeFileSync(path.join(dir, '.pier-tmp-0123456789abcdef'), 'half an upload');
    makeCurrent(root, 'big-site', '5.4');
    const real = localStorage(root);
    // The real storage, counting how many entries each request has it stat.
    const counting: Storage = Object.assign(Object.create(real) as Storage, {
      stat: (key: string) => {
        looked++;
        return real.stat(key);
      },
      listNames: (key: string) => {
        listings++;
        return real.listNames(key);
      },
      list: async (key: string) => {
        const entries = await real.list(key);
        looked += entries?.length ?? 0;
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
    assert.ok(FOLDER_PAGE_ENTRIES <= 1000);
    const seen: string[] = [];
    let url: string | null = `${base}/big-site/5.4/plugins/`;
    let pages = 0;
    while (url) {
      looked = 0;
      const res: Response = await fetch(url);
      assert.equal(res.status, 200);
      const html: string = await res.text();
      const page = names(html);
      assert.ok(page.length <= FOLDER_PAGE_ENTRIES, `${page.length} rows on one page`);
      assert.ok(looked <= FOLDER_PAGE_ENTRIES + 5, `${looked} entries looked at for one page`);
      assert.doesNotMatch(html, /pier-tmp/);
      seen.push(...page);
      pages++;
      const next = /<a rel="next" href="([^"]+)">/.exec(html)?.[1];
      url = next ? new URL(next.replace(/&amp;/g, '&'), url).href : null;
    }
    assert.equal(pages, Math.ceil(FILES / FOLDER_PAGE_ENTRIES));
    assert.equal(seen.length, FILES);
    assert.deepEqual(seen, [...seen].sort());
    assert.equal(new Set(seen).size, FILES);
  });

  test('a page past the end or not a number is a 404 problem, and a new file shows on the next request', async () => {
    assert.equal((await fetch(`${base}/big-site/5.4/plugins/?page=99`)).status, 404);
    assert.equal((await fetch(`${base}/big-site/5.4/plugins/?page=x`)).status, 404);
    fs.writeFileSync(path.join(root, 'big-site/releases/5.4/1/plugins/a-first.jar'), 'x');
    const html = await (await fetch(`${base}/big-site/5.4/plugins/`)).text();
    assert.match(html, /<a href="a-first\.jar">/);
    fs.rmSync(path.join(root, 'big-site/releases/5.4/1/plugins/a-first.jar'));
    assert.doesNotMatch(await (await fetch(`${base}/big-site/5.4/plugins/`)).text(), /a-first/);
  });

  test('requests arriving together after the folder changed share one read of its listing', async () => {
    fs.writeFileSync(path.join(root, 'big-site/releases/5.4/1/plugins/a-new.jar'), 'x');
    listings = 0;
    const pages = await Promise.all(Array.from({ length: 20 }, () => fetch(`${base}/big-site/5.4/plugins/`).then((r) => r.text())));
    for (const html of pages) assert.match(html, /<a href="a-new\.jar">/);
    assert.equal(listings, 1);
    fs.rmSync(path.join(root, 'big-site/releases/5.4/1/plugins/a-new.jar'));
  });
});

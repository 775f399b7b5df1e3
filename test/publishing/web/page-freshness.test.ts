// Cached pages never outlive their data by more than the change counter's bound
// (docs/operators.md#caching-and-freshness-of-pages; DESIGN "Changes made by another process"):
// with answers filed for the fast path, a PATCH, a release change, an upload, a crawl and
// enabling/disabling made through another instance or connection show on the first request after
// FRESH_MS; a change made through the serving instance itself shows on its very next request; a
// restarted process serves fresh content at once. PostgreSQL runs it with two instances on one
// database.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { FRESH_MS } from '../../../src/publishing/downloads/file-cache.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { patchProduct } from '../../helpers/publishing.js';
import { type Site, startSite } from './helpers.js';
import { type Seeder, seeder } from './page-seed.js';
import { raw, request } from './raw-http.js';

/** Past the bound: a request now was made after the counter's last check expired. */
const pastBound = () => sleep(FRESH_MS + 5);

for (const dialect of dialects()) {
  describe(`page freshness on ${dialect.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let writer: Site;
    let reader: Site;
    let seed: Seeder;
    let token: string;

    /** A GET of `target` from the reader on a connection of its own (so the fast path gets it first). */
    const read = async (target: string) => {
      const a = await raw(reader.url, request('GET', target));
      return { status: Number(a.status.split(' ')[1]), text: a.body.toString() };
    };
    /** GETs `target` from the reader twice, so that its answer is filed and served by the fast path; returns the body. */
    const warm = async (target: string) => {
      await read(target);
      assert.ok(await reader.service.pageAnswers!.lookup(target), `${target} is filed`);
      return (await read(target)).text;
    };

    before(async () => {
      db = await dialect.create();
      writer = await startSite(db.url);
      // Instances share one storage, as they do in production (PIER_STORAGE_DIR): releases are there.
      reader = await startSite(db.url, { pageFreshMs: FRESH_MS }, { PIER_STORAGE_DIR: writer.storageDir });
      seed = await seeder(db.url, writer.storageDir);
      token = await writer.register('fresh', { name: 'Fresh', description: 'first words', text: 'Works with {{platformRelease}}.' });
      await seed.upload('fresh', ['update-site/5.4/content.xml']);
      await writer.setState('fresh', 'live');
    });
    after(async () => {
      await seed?.close();
      await writer?.close();
      await reader?.close();
      await db.drop();
    });

    it('a PATCH through another instance', async () => {
      assert.match(await warm('/product/fresh'), /first words/);
      assert.equal((await patchProduct(writer.url, 'fresh', token, { description: 'second words' })).status, 200);
      await pastBound();
      assert.match((await read('/product/fresh')).text, /second words/);
    });

    it('a platform release change', async () => {
      await writer.service.products.setPlatformRelease('6.1');
      await pastBound();
      assert.match(await warm('/product/fresh'), /Works with 6\.1/);
      await writer.service.products.setPlatformRelease('6.2');
      await pastBound();
      assert.match((await read('/product/fresh')).text, /Works with 6\.2/);
    });

    it('an upload', async () => {
      assert.doesNotMatch(await warm('/product/fresh'), /label-name">7\.0</);
      await seed.upload('fresh', ['update-site/7.0/content.xml']);
      await pastBound();
      // Listed at once, as not released yet: no URL until a crawl releases it (next test).
      const listed = (await read('/product/fresh')).text;
      assert.match(listed, /label-name">7\.0<\/span><span class="pill muted">Not released yet/);
      assert.doesNotMatch(listed, /fresh\/7\.0</);
    });

    it('a finished crawl', async () => {
      assert.doesNotMatch(await warm('/product/fresh'), /Stemmer/);
      assert.doesNotMatch(await warm('/nodes?q=stemmer'), /Stemmer/);
      await seed.crawl('fresh', '7.0', 'Stemmer');
      await pastBound();
      assert.match((await read('/product/fresh')).text, /Stemmer/);
      assert.match((await read('/product/fresh')).text, /fresh\/7\.0</, 'released by the crawl: offered with its URL');
      assert.match((await read('/nodes?q=stemmer')).text, /Stemmer/);
    });

    it('disabling and enabling', async () => {
      assert.match(await warm('/'), /href="\/product\/fresh"/);
      assert.equal((await read('/product/fresh/releases.atom')).status, 200);
      await warm('/product/fresh/releases.atom');
      await writer.setState('fresh', 'hidden');
      await pastBound();
      assert.doesNotMatch((await read('/')).text, /href="\/product\/fresh"/);
      assert.equal((await read('/product/fresh/releases.atom')).status, 404);
      assert.match((await read('/product/fresh')).text, /noindex/);
      await warm('/');
      await writer.setState('fresh', 'live');
      await pastBound();
      assert.match((await read('/')).text, /href="\/product\/fresh"/);
    });

    it("the serving instance's own change shows on its next request, however long the bound", async () => {
      const slowChecks = await startSite(db.url, { pageFreshMs: 3_600_000 });
      try {
        const get = async () => (await raw(slowChecks.url, request('GET', '/product/fresh'))).body.toString();
        await get();
        assert.match(await get(), /second words/);
        assert.equal((await patchProduct(slowChecks.url, 'fresh', token, { description: 'own words' })).status, 200);
        assert.match(await get(), /own words/);
        // A change made elsewhere waits for the bound (an hour here): the rule above is what showed ours.
        assert.equal((await patchProduct(writer.url, 'fresh', token, { description: 'elsewhere words' })).status, 200);
        assert.match(await get(), /own words/);
      } finally {
        await slowChecks.close();
      }
    });
  });
}

describe('page freshness across processes (pier serve, the staff CLI, SIGKILL)', () => {
  const env = (dir: string, port: number) => ({ ...process.env, PIER_DATA_DIR: dir, PIER_HTTP_PORT: String(port), PIER_LOG_LEVEL: 'warn' });
  const cli = (dir: string, port: number, ...args: string[]) => {
    const r = spawnSync(process.execPath, ['bin/pier.js', ...args], { env: env(dir, port), encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout;
  };
  let server: ChildProcess | null = null;
  const start = async (dir: string, port: number) => {
    server = spawn(process.execPath, ['bin/pier.js', 'serve', '--only', 'web'], { env: env(dir, port), stdio: 'ignore' });
    for (let i = 0; i < 100; i++) {
      if (await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false)) return;
      await sleep(100);
    }
    throw new Error('pier serve did not come up');
  };
  after(() => {
    server?.kill('SIGKILL');
  });

  it('a staff command in another process shows after the bound; after a SIGKILL the restarted server is fresh at once', async () => {
    const dir = tempDir('pier-fresh-');
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const token = JSON.parse(cli(dir, port, 'staff', 'register', 'proc', '--name', 'Proc', '--json')).editToken as string;
    cli(dir, port, 'staff', 'set-release', '5.1');
    await start(dir, port);
    const page = async () => (await raw(`http://127.0.0.1:${port}`, request('GET', '/product/proc'))).body.toString();
    assert.equal((await patchProduct(`http://127.0.0.1:${port}`, 'proc', token, { text: 'Release {{platformRelease}} here.' })).status, 200);
    assert.match(await page(), /Release 5\.1 here/);
    assert.match(await page(), /Release 5\.1 here/);
    cli(dir, port, 'staff', 'set-release', '5.2');
    await pastBound();
    assert.match(await page(), /Release 5\.2 here/);
    server!.kill('SIGKILL');
    await new Promise((r) => server!.once('exit', r));
    cli(dir, port, 'staff', 'set-release', '5.3');
    await start(dir, port);
    assert.match(await page(), /Release 5\.3 here/);
    server!.kill('SIGKILL');
  });
});

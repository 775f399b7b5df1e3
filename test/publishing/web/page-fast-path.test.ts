// Page answers on the fast path (infra/fast-path, web/page-answers.ts) against the same site with
// it off, on one database: for every kind of page, a plain GET or HEAD answered from a filed
// answer is the app's answer (status, every header and its value, the body; Date aside, and
// header names compared case-insensitively: helmet spells some with capitals, the fast path as
// the app lists them). Requests the fast path must leave to the app still get the app's answers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { dialects } from '../../helpers/db.js';
import { FULL_FIELDS, type Site, startSite } from './helpers.js';
import { NODE_FACTORY, type Seeder, seeder } from './page-seed.js';
import { type RawAnswer, raw, request } from './raw-http.js';

function same(a: RawAnswer, b: RawAnswer, what: string): void {
  assert.equal(a.status, b.status, what);
  // Date and the request id differ by request; both must be there.
  const strip = (h: Map<string, string>) => [...h].filter(([k]) => k !== 'date' && k !== 'x-request-id').sort(([x], [y]) => (x < y ? -1 : 1));
  assert.deepEqual(strip(a.headers), strip(b.headers), what);
  assert.ok(a.headers.get('date'), `${what}: Date`);
  for (const answer of [a, b]) assert.match(answer.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/, `${what}: X-Request-Id`);
  assert.notEqual(a.headers.get('x-request-id'), b.headers.get('x-request-id'), `${what}: one id per request`);
  assert.ok(a.body.equals(b.body), `${what}: body`);
}

for (const dialect of dialects()) {
  describe(`page fast path on ${dialect.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let fast: Site;
    let slow: Site;
    let seed: Seeder;
    let targets: string[];

    before(async () => {
      db = await dialect.create();
      fast = await startSite(db.url);
      slow = await startSite(db.url, { pageFastPath: false }, { PIER_STORAGE_DIR: fast.storageDir });
      seed = await seeder(db.url, fast.storageDir);
      await fast.register('text-tools', FULL_FIELDS);
      await seed.upload('text-tools', ['update-site/5.4/content.xml', 'update-site/5.4.zip', 'workflows/demo/Example.knwf']);
      await seed.crawl('text-tools', '5.4', 'Tokenizer');
      await fast.setState('text-tools', 'live');
      const page = await fetch(`${slow.url}/product/text-tools`).then((r) => r.text());
      const iconVersion = /\/product\/text-tools\/icon\?v=([\w-]+)/.exec(page)?.[1];
      assert.ok(iconVersion, 'the page links its icon with a version');
      const assets = [...page.matchAll(/\/static\/pier-[0-9a-f]+\.(?:css|js)/g)].map((m) => m[0]);
      assert.equal(assets.length, 2, 'the page links its stylesheet and script');
      const node = `/product/text-tools/nodes/${NODE_FACTORY}`;
      targets = [
        '/',
        '/?q=tokenize',
        '/?page=1',
        '/product/text-tools',
        '/product/text-tools/icon',
        `/product/text-tools/icon?v=${iconVersion}`,
        '/product/text-tools/badge.svg',
        '/product/text-tools/releases.atom',
        node,
        `${node}/icon`,
        '/nodes?q=tokenizer',
        '/releases.atom',
        '/sitemap.xml',
        '/robots.txt',
        ...assets,
      ];
    });
    after(async () => {
      await seed?.close();
      await fast?.close();
      await slow?.close();
      await db.drop();
    });

    it('answers every kind of page from its filed answer exactly as the app does, GET and HEAD', async () => {
      const answers = fast.service.pageAnswers!;
      for (const target of targets) {
        for (const method of ['GET', 'HEAD']) {
          const viaApp = await raw(fast.url, request(method, target));
          assert.equal(viaApp.status, 'HTTP/1.1 200 OK', `${method} ${target}`);
          assert.ok(await answers.lookup(target), `${target} is filed after the app answered it`);
          const viaFastPath = await raw(fast.url, request(method, target));
          const reference = await raw(slow.url, request(method, target));
          same(viaFastPath, reference, `${method} ${target}`);
          same(viaApp, reference, `${method} ${target} (app)`);
          if (method === 'HEAD') assert.equal(viaFastPath.body.length, 0);
          else assert.equal(Number(viaFastPath.headers.get('content-length')), viaFastPath.body.length);
        }
      }
      assert.match((await raw(fast.url, request('GET', '/product/text-tools'))).body.toString(), /Tokenizer/);
    });

    it('every page answers a conditional GET or HEAD with its ETag with 304 and the same validators', async () => {
      // Static assets are named by their hash and immutable: they need no validator.
      for (const target of targets.filter((t) => !t.startsWith('/static/'))) {
        const etag = (await raw(fast.url, request('GET', target))).headers.get('etag');
        assert.ok(etag, `${target} has an ETag`);
        for (const method of ['GET', 'HEAD']) {
          const a = await raw(fast.url, request(method, target, `If-None-Match: ${etag}\r\n`));
          assert.equal(a.status, 'HTTP/1.1 304 Not Modified', `${method} ${target}`);
          assert.equal(a.headers.get('etag'), etag, `${method} ${target}`);
          assert.equal(a.body.length, 0);
        }
      }
    });

    it('leaves conditional requests, unknown pages and other methods to the app', async () => {
      const first = await raw(fast.url, request('GET', '/product/text-tools'));
      const etag = first.headers.get('etag')!;
      for (const extra of [`If-None-Match: ${etag}\r\n`, 'If-None-Match: *\r\n', `If-None-Match: "other", W/${etag}\r\n`]) {
        const a = await raw(fast.url, request('GET', '/product/text-tools', extra));
        same(a, await raw(slow.url, request('GET', '/product/text-tools', extra)), extra);
        assert.equal(a.status, 'HTTP/1.1 304 Not Modified', extra);
      }
      const missing = await raw(fast.url, request('GET', '/product/no-such-product'));
      assert.equal(missing.status, 'HTTP/1.1 404 Not Found');
      assert.equal(await fast.service.pageAnswers!.lookup('/product/no-such-product'), null, 'a 404 is never filed');
      const post = await raw(fast.url, 'POST /product/text-tools HTTP/1.1\r\nHost: pier.test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      assert.equal(post.status, 'HTTP/1.1 404 Not Found');
    });

    it('a change drops every filed answer: the next request is the app\'s, with the new content', async () => {
      const answers = fast.service.pageAnswers!;
      await raw(fast.url, request('GET', '/product/text-tools'));
      assert.ok(await answers.lookup('/product/text-tools'));
      await fast.setState('text-tools', 'hidden');
      assert.equal(await answers.lookup('/product/text-tools'), null);
      assert.equal(await answers.lookup('/'), null);
      const hidden = await raw(fast.url, request('GET', '/product/text-tools'));
      assert.match(hidden.body.toString(), /noindex/);
      assert.equal((await raw(fast.url, request('GET', '/product/text-tools/releases.atom'))).status, 'HTTP/1.1 404 Not Found');
      await fast.setState('text-tools', 'live');
    });
  });
}

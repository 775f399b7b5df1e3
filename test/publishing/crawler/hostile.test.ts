import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { zipSync } from 'fflate';
import { type CrawlResult, crawlRepository, DEFAULT_CRAWL_LIMITS } from '../../../src/publishing/crawler/crawl.js';
import { tempDir } from '../../helpers/db.js';
import { buildComposite, buildSite, exampleSpec, type NodeSpec, type SiteSpec } from '../../helpers/p2-fixtures.js';
import { serveDir } from './serve.js';

// Hostile input becomes a reported problem, never a crash, a hang or unbounded memory.
// Small limits keep the suite fast; the same code paths run with the defaults.
const LIMITS = { ...DEFAULT_CRAWL_LIMITS, timeoutMs: 1_000, maxXmlBytes: 2 * 1024 * 1024, maxBytes: 8 * 1024 * 1024, maxJarBytes: 8 * 1024 * 1024 };

const enc = new TextEncoder();
const codes = (r: CrawlResult) => r.problems.filter((p) => p.code !== 'category_undeclared').map((p) => p.code);

async function crawlSpec(spec: SiteSpec, edit?: (dir: string) => void, hooks = {}) {
  const root = tempDir('pier-hostile-');
  buildSite(path.join(root, 'site'), spec);
  edit?.(path.join(root, 'site'));
  const server = await serveDir(root, hooks);
  try {
    return await crawlRepository(`${server.url}/site/`, LIMITS);
  } finally {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

function withBundle(extra: SiteSpec['bundles'][number]): SiteSpec {
  const spec = exampleSpec('jar');
  spec.bundles.push(extra);
  return spec;
}

const node = (factoryClass: string, over: Partial<NodeSpec> = {}): NodeSpec => ({
  factoryClass,
  categoryPath: '/community',
  name: 'Evil',
  shortDescription: 'evil',
  schema: 'v4.1',
  ...over,
});

test('zip bombs: an entry past the size cap and one with an absurd ratio are refused, the rest is indexed', async () => {
  const rssBefore = process.memoryUsage().rss;
  const big = new Uint8Array(20 * 1024 * 1024); // 20 MiB of zeros: over the 16 MiB entry cap
  const dense = new Uint8Array(4 * 1024 * 1024); // 4 MiB of zeros compress ~1000:1
  const r = await crawlSpec(
    withBundle({
      id: 'org.evil.bomb',
      version: '1.0.0',
      nodes: [node('org.evil.BigNodeFactory', { noDescription: true }), node('org.evil.DenseNodeFactory', { noDescription: true })],
      extraEntries: { 'org/evil/BigNodeFactory.xml': big, 'org/evil/DenseNodeFactory.xml': dense },
    }),
  );
  const bombs = r.problems.filter((p) => p.code === 'jar_unreadable').map((p) => p.message);
  assert.equal(bombs.length, 2, JSON.stringify(r.problems));
  assert.match(bombs.join('\n'), /BigNodeFactory\.xml: 20971520 bytes uncompressed is over the limit/);
  assert.match(bombs.join('\n'), /DenseNodeFactory\.xml: compression ratio \d+:1 looks like a zip bomb/);
  assert.equal(r.nodes.filter((n) => n.description).length, 4, 'the good bundle is still indexed');
  assert.ok(process.memoryUsage().rss - rssBefore < 256 * 1024 * 1024, 'memory stays bounded');
});

test('XML entities: external entities and entity expansion are refused, never resolved', async () => {
  const xxe = `<?xml version="1.0"?>\n<!DOCTYPE knimeNode [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n<knimeNode><name>&xxe;</name></knimeNode>`;
  const laughs = `<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>\n<knimeNode><name>&lol3;</name></knimeNode>`;
  const r = await crawlSpec(
    withBundle({ id: 'org.evil.xxe', version: '1.0.0', nodes: [node('org.evil.XxeNodeFactory', { rawDescription: xxe }), node('org.evil.LolNodeFactory', { rawDescription: laughs })] }),
  );
  const xml = r.problems.filter((p) => p.code === 'xml_error');
  assert.deepEqual(xml.map((p) => `${p.where.replace(/^.*!/, '')}:${p.line}`).sort(), ['org/evil/LolNodeFactory.xml:2', 'org/evil/XxeNodeFactory.xml:2']);
  assert.ok(!JSON.stringify(r).includes('root:'), 'nothing from /etc/passwd');
  assert.ok(!JSON.stringify(r).includes('lollol'), 'nothing expanded');

  // The same in the repository metadata: the crawl is fatal, not a hang.
  const meta = await crawlSpec(exampleSpec('xml'), (dir) => {
    const f = path.join(dir, 'content.xml');
    fs.writeFileSync(f, fs.readFileSync(f, 'utf8').replace("<?metadataRepository version='1.2.0'?>", laughs.split('\n')[1]!));
    fs.rmSync(path.join(dir, 'p2.index'));
  });
  assert.deepEqual(codes(meta), ['xml_error', 'metadata_unreadable']);
  assert.equal(meta.summary.fatal, true);
});

test('huge XML is refused by size before it is parsed, compressed or not', async () => {
  const pad = (dir: string) => {
    const f = path.join(dir, 'content.xml');
    fs.writeFileSync(f, fs.readFileSync(f, 'utf8').replace('<units', `<!-- ${'x'.repeat(3 * 1024 * 1024)} --><units`));
  };
  const plain = await crawlSpec(exampleSpec('xml'), pad);
  assert.deepEqual(codes(plain), ['fetch_failed', 'metadata_unreadable']);
  assert.match(plain.problems[0]!.message, /over the limit|more than/);
  // Inside content.jar the XML is small compressed but large inflated: the inflate cap holds.
  const jarred = await crawlSpec(exampleSpec('xml'), (dir) => {
    pad(dir);
    fs.writeFileSync(path.join(dir, 'content.jar'), zipSync({ 'content.xml': fs.readFileSync(path.join(dir, 'content.xml')) }));
    fs.rmSync(path.join(dir, 'content.xml'));
  });
  assert.deepEqual(codes(jarred), ['jar_unreadable', 'metadata_unreadable']);
});

test('traversal names inside jars and icon paths leaving the jar are never followed', async () => {
  const r = await crawlSpec(
    withBundle({ id: 'org.evil.traversal', version: '1.0.0', nodes: [node('org.evil.TraversalNodeFactory')], extraEntries: { '../../../../tmp/evil.xml': enc.encode('<x/>') } }),
  );
  assert.ok(r.problems.some((p) => p.code === 'jar_unreadable' && p.where.endsWith('org.evil.traversal_1.0.0.jar')), JSON.stringify(r.problems));
  const icon = await crawlSpec(
    withBundle({
      id: 'org.evil.icon',
      version: '1.0.0',
      nodes: [node('org.evil.IconNodeFactory', { rawDescription: '<knimeNode icon="../../../../../etc/passwd.png" type="Source"><name>Icon</name></knimeNode>' })],
    }),
  );
  const n = icon.nodes.find((x) => x.factoryClass === 'org.evil.IconNodeFactory');
  assert.equal(n?.description?.name, 'Icon');
  assert.equal(n?.icon, null);
});

test('composites: cycles and endless nesting end with a problem', async () => {
  const root = tempDir('pier-hostile-');
  for (let i = 0; i < 10; i++) buildComposite(path.join(root, `c${i}`), [`../c${i + 1}`]);
  buildComposite(path.join(root, 'self'), ['.']);
  const server = await serveDir(root);
  try {
    const deep = await crawlRepository(`${server.url}/c0/`, LIMITS);
    assert.ok(codes(deep).includes('composite_too_deep'));
    assert.equal(deep.summary.fatal, true);
    const self = await crawlRepository(`${server.url}/self/`, LIMITS);
    assert.ok(codes(self).includes('composite_cycle'));
  } finally {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('slow, endless and unreachable URLs end with a problem within the timeout', async () => {
  const stalled = await crawlSpec(exampleSpec('jar'), undefined, {
    // Headers, then nothing: the body never completes.
    '/site/artifacts.jar': (res: import('node:http').ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/java-archive' });
      res.write('PK');
    },
    // Never answers at all.
    '/site/p2.index': () => {},
  });
  assert.ok(stalled.problems.some((p) => p.code === 'fetch_failed' && /within 1000 ms/.test(p.message)), JSON.stringify(stalled.problems));
  assert.equal(stalled.summary.units, 9, 'metadata still read through the default factory order');

  const endless = await crawlSpec(exampleSpec('jar'), undefined, {
    '/site/content.jar': (res: import('node:http').ServerResponse) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 1);
      const pump = () => {
        while (res.write(chunk)) {}
        res.once('drain', pump);
      };
      res.on('error', () => {});
      pump();
    },
  });
  assert.ok(endless.problems.some((p) => p.code === 'fetch_failed' && /more than/.test(p.message)), JSON.stringify(endless.problems));

});

test('the crawl never leaves the download host: other origins and redirects to them are not fetched', async () => {
  // An "internal" server the vendor names in a composite, and one a redirect points at.
  const seen: string[] = [];
  const internal = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    res.writeHead(500).end();
  });
  await new Promise<void>((r) => internal.listen(0, '127.0.0.1', r));
  const internalUrl = `http://127.0.0.1:${(internal.address() as AddressInfo).port}`;
  const root = tempDir('pier-hostile-');
  buildComposite(path.join(root, 'top'), [`${internalUrl}/internal-secret/`, 'http://127.0.0.1:1/nothing/']);
  buildComposite(path.join(root, 'redirecting'), ['../moved/']);
  const server = await serveDir(root, {
    '/moved/p2.index': (res: http.ServerResponse) => res.writeHead(302, { location: `${internalUrl}/via-redirect/p2.index` }).end(),
    '/moved/compositeContent.xml': (res: http.ServerResponse) => res.writeHead(302, { location: `${internalUrl}/via-redirect/c.xml` }).end(),
    '/moved/content.jar': (res: http.ServerResponse) => res.writeHead(302, { location: `${internalUrl}/via-redirect/content.jar` }).end(),
  });
  try {
    const r = await crawlRepository(`${server.url}/top/`, LIMITS);
    assert.ok(r.problems.some((p) => p.code === 'fetch_failed' && /outside the download host/.test(p.message)), JSON.stringify(r.problems));
    assert.equal(r.summary.fatal, true);
    await crawlRepository(`${server.url}/redirecting/`, LIMITS);
    assert.deepEqual(seen, [], 'no request reached another origin');
  } finally {
    await server.close();
    await new Promise<void>((r) => internal.close(() => r()));
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('a crawl stops at its request budget with a problem', async () => {
  const root = tempDir('pier-hostile-');
  buildSite(path.join(root, 'site'), exampleSpec('jar'));
  const server = await serveDir(root);
  try {
    const r = await crawlRepository(`${server.url}/site/`, { ...LIMITS, maxRequests: 3 });
    assert.ok(r.problems.some((p) => /too many requests/.test(p.message)), JSON.stringify(r.problems));
  } finally {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
});

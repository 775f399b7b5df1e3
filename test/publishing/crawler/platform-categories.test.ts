// The platform's own node categories (PIER_PLATFORM_CATEGORIES, KNIME's top-level ones by
// default): a site that places its nodes under `/community/<vendor>` declares only its own
// category, as every real KNIME extension does; `/community` is not warned about as undeclared and
// is named as the platform names it. Anything neither the site nor the platform declares still is.
import assert from 'node:assert/strict';
import path from 'node:path';
import fs from 'node:fs';
import { test } from 'node:test';
import fc from 'fast-check';
import { ConfigError, KNIME_CATEGORIES, loadConfig } from '../../../src/infra/config.js';
import { crawlRepository, DEFAULT_CRAWL_LIMITS } from '../../../src/publishing/crawler/crawl.js';
import { DEFAULT_CORE_PREFIXES } from '../../../src/publishing/crawler/platform-range.js';
import { isolatedCrawler } from '../../../src/publishing/crawler/isolated.js';
import { tempDir } from '../../helpers/db.js';
import { buildSite, type NodeSpec, type SiteSpec } from '../../helpers/p2-fixtures.js';
import { serveDir } from './serve.js';

const node = (cls: string, categoryPath: string): NodeSpec => ({ factoryClass: `com.acme.nodes.${cls}NodeFactory`, categoryPath, name: cls, shortDescription: `${cls}.`, schema: 'v4.1' });

/** A site as vendors build them: its own category under /community, nodes there and in KNIME's IO, and one in a root nobody declares. */
function vendorSite(): SiteSpec {
  const v = '1.0.0.v20260101';
  return {
    name: 'Acme',
    metadata: 'xml',
    features: [{ id: 'com.acme.feature', version: v, label: 'Acme', provider: 'Acme', description: 'd', license: 'l', copyright: 'c', bundles: ['com.acme.nodes'] }],
    bundles: [
      {
        id: 'com.acme.nodes',
        version: v,
        categories: [{ path: '/community', levelId: 'acme', name: 'Acme Nodes' }],
        nodes: [node('Reader', '/community/acme'), node('Writer', '/io/write'), node('Odd', '/acmeroot/odd')],
      },
    ],
  };
}

const undeclared = (r: Pick<Awaited<ReturnType<typeof crawlRepository>>, 'problems'>) => r.problems.filter((p) => p.code === 'category_undeclared').map((p) => p.where).sort();
const names = (r: Awaited<ReturnType<typeof crawlRepository>>) => Object.fromEntries(r.nodes.map((n) => [n.factoryClass.replace('com.acme.nodes.', ''), n.categoryNames.join(' / ')]));

test("KNIME's categories by default: /community and /io are the platform's, /io/write and a root nobody declares are warned about", async () => {
  const root = tempDir('pier-platform-cats-');
  buildSite(path.join(root, 'site'), vendorSite());
  const server = await serveDir(root);
  try {
    const r = await crawlRepository(`${server.url}/site/`);
    assert.deepEqual(undeclared(r), ['/acmeroot', '/acmeroot/odd', '/io/write']);
    assert.deepEqual(names(r), { ReaderNodeFactory: 'Community Nodes / Acme Nodes', WriterNodeFactory: 'IO / write', OddNodeFactory: 'acmeroot / odd' });
    const message = r.problems.find((p) => p.where === '/acmeroot')?.message ?? '';
    assert.match(message, /nor by the platform \(PIER_PLATFORM_CATEGORIES\)/);

    // Configured otherwise: only what is listed is the platform's (here /acmeroot, named; no /community).
    const custom = loadConfig({ PIER_DATA_DIR: tempDir(), PIER_PLATFORM_CATEGORIES: '/acmeroot=Acme Root, /io' }).publishing.platformCategories;
    const other = await crawlRepository(`${server.url}/site/`, DEFAULT_CRAWL_LIMITS, undefined, DEFAULT_CORE_PREFIXES, custom);
    assert.deepEqual(undeclared(other), ['/acmeroot/odd', '/community', '/io/write']);
    assert.deepEqual(names(other), { ReaderNodeFactory: 'community / Acme Nodes', WriterNodeFactory: 'io / write', OddNodeFactory: 'Acme Root / odd' });

    // The crawl worker (what the server runs) gets the setting too.
    const isolated = isolatedCrawler(DEFAULT_CRAWL_LIMITS, undefined, DEFAULT_CORE_PREFIXES, []);
    try {
      assert.deepEqual(undeclared(await isolated.crawl(`${server.url}/site/`, `${server.url}/`)), ['/acmeroot', '/acmeroot/odd', '/community', '/io', '/io/write']);
    } finally {
      await isolated.close();
    }
  } finally {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('PIER_PLATFORM_CATEGORIES: KNIME by default, `none`, paths with optional names; anything else stops start-up naming the variable', () => {
  const load = (value?: string) => loadConfig({ PIER_DATA_DIR: '/tmp/x', ...(value === undefined ? {} : { PIER_PLATFORM_CATEGORIES: value }) }).publishing.platformCategories;
  const defaults = load();
  assert.deepEqual(defaults, KNIME_CATEGORIES);
  for (const p of ['/community', '/io', '/manipulation', '/analytics', '/scripting', '/toolintegration', '/flowcontrol', '/labs', '/db']) {
    assert.ok(defaults.some((c) => c.path === p), p);
  }
  assert.equal(defaults.find((c) => c.path === '/community')?.name, 'Community Nodes');
  assert.deepEqual(load('none'), []);
  assert.deepEqual(load('/community=Gemeinschaft,/io/read'), [
    { path: '/community', name: 'Gemeinschaft' },
    { path: '/io/read', name: 'read' },
  ]);
  for (const bad of ['community', '/a b', '/x//y', '/x/', '/ok,/bad path', `/x=${'n'.repeat(201)}`, '/x=tab\there']) {
    assert.throws(() => load(bad), (e: unknown) => e instanceof ConfigError && e.variable === 'PIER_PLATFORM_CATEGORIES', bad);
  }

  const segment = fc.stringMatching(/^[A-Za-z0-9_.+-]{1,12}$/);
  const category = fc.record({ path: fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => `/${s.join('/')}`), name: fc.stringMatching(/^[A-Za-z0-9 &()]{0,20}$/).map((n) => n.trim()) });
  fc.assert(
    fc.property(fc.array(category, { minLength: 1, maxLength: 8 }), (cats) => {
      const raw = cats.map((c) => (c.name ? `${c.path}=${c.name}` : c.path)).join(',');
      assert.deepEqual(
        load(raw),
        cats.map((c) => ({ path: c.path, name: c.name || (c.path.split('/').pop() as string) })),
      );
    }),
  );
  // Any value is either read or refused with the variable's name, never anything else.
  fc.assert(
    fc.property(fc.string({ maxLength: 60 }), (raw) => {
      try {
        for (const c of load(raw)) assert.match(c.path, /^(\/[A-Za-z0-9_.+-]+)+$/);
      } catch (e) {
        assert.ok(e instanceof ConfigError && e.variable === 'PIER_PLATFORM_CATEGORIES', String(e));
      }
    }),
  );
});

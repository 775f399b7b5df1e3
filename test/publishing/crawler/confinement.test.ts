import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { strFromU8, strToU8, unzipSync, zipSync } from 'fflate';
import { crawlRepository, DEFAULT_CRAWL_LIMITS } from '../../../src/publishing/crawler/crawl.js';
import { withinScope } from '../../../src/publishing/crawler/fetcher.js';
import { tempDir } from '../../helpers/db.js';
import { buildComposite, buildSite, exampleSpec } from '../../helpers/p2-fixtures.js';
import { serveDir } from './serve.js';

// The download host serves every product under `/<product>/`: a crawl of one product's label
// reads only that product's folder, whatever its composite children or mapping rules say.
test('a composite child in another product\'s folder is refused with a problem naming it; the product\'s own labels are read', async () => {
  const root = tempDir('pier-confine-');
  buildSite(path.join(root, 'victim', '1.0'), exampleSpec('jar', 'org.victim'));
  buildSite(path.join(root, 'evil', '1.0'), exampleSpec('jar', 'org.evil'));
  buildComposite(path.join(root, 'evil', 'latest'), ['../1.0', '../../victim/1.0/', '..%2F..%2Fvictim%2F1.0']);
  const server = await serveDir(root);
  try {
    const r = await crawlRepository(`${server.url}/evil/latest/`, DEFAULT_CRAWL_LIMITS, `${server.url}/evil/`);
    assert.ok(r.nodes.length > 0, 'the own label is indexed');
    assert.deepEqual(r.nodes.filter((n) => !n.factoryClass.startsWith('org.evil')).map((n) => n.factoryClass), [], 'no node of another product');
    assert.ok(r.units.every((u) => !u.id.startsWith('org.victim')), 'no unit of another product');
    const refused = r.problems.filter((p) => p.code === 'composite_child_refused');
    assert.ok(refused.some((p) => p.severity === 'error' && p.message.includes('"../../victim/1.0/"') && p.message.includes(`${server.url}/victim/1.0/`)), JSON.stringify(refused));
    assert.ok(refused.some((p) => p.message.includes('..%2F..%2Fvictim')), JSON.stringify(refused));
    assert.equal(new Set(refused.map((p) => p.message)).size, refused.length, 'each refusal listed once');
  } finally {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('scope: prefixes, dot segments and encoded separators', () => {
  const scope = 'http://h/evil/';
  assert.equal(withinScope(new URL('../1.0/', 'http://h/evil/latest/').href, scope), true);
  assert.equal(withinScope(new URL('../../victim/1.0/', 'http://h/evil/latest/').href, scope), false);
  assert.equal(withinScope(new URL('%2e%2e/%2e%2e/victim/', 'http://h/evil/latest/').href, scope), false);
  assert.equal(withinScope(new URL('..%2F..%2Fvictim/', 'http://h/evil/latest/').href, scope), false);
  assert.equal(withinScope('http://h/evil-twin/1.0/', scope), false);
  assert.equal(withinScope('http://other/evil/1.0/', scope), false);
});

test("an artifact mapping rule pointing into another product's folder is not fetched", async () => {
  const root = tempDir('pier-confine-');
  buildSite(path.join(root, 'victim', '1.0'), exampleSpec('xml', 'org.evil'));
  const site = path.join(root, 'evil', '1.0');
  buildSite(site, exampleSpec('xml', 'org.evil'));
  // The evil site's own jars are gone; its rule sends the crawl to the victim's copies.
  fs.rmSync(path.join(site, 'plugins'), { recursive: true });
  const jar = path.join(site, 'artifacts.jar');
  const xml = strFromU8(unzipSync(fs.readFileSync(jar))['artifacts.xml']!);
  fs.writeFileSync(jar, zipSync({ 'artifacts.xml': strToU8(xml.replace("/plugins/", '/../../victim/1.0/plugins/')) }));
  const server = await serveDir(root);
  try {
    const r = await crawlRepository(`${server.url}/evil/1.0/`, DEFAULT_CRAWL_LIMITS, `${server.url}/evil/`);
    assert.deepEqual(r.nodes, []);
    const refused = r.problems.filter((p) => p.code === 'fetch_failed');
    assert.ok(refused.length > 0 && refused.every((p) => p.message === `not fetched: outside the product's folder ${server.url}/evil/` && new URL(p.where).pathname.startsWith("/victim/")), JSON.stringify(r.problems));
  } finally {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
});

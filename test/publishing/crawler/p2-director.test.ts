import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { crawlRepository } from '../../../src/publishing/crawler/crawl.js';
import { tempDir } from '../../helpers/db.js';
import { buildComposite, buildSite, exampleSpec } from '../../helpers/p2-fixtures.js';
import { hasTool, IN_CI } from '../../helpers/tools.js';
import { run } from '../sftp/stack.js';
import { serveDir } from './serve.js';

/** The Equinox p2 director from Debian packages (.ci/p2client, set up by .ci/run). */
const P2_HOME = process.env.P2_HOME || '/tmp/p2client';
const P2 = path.resolve('.ci/p2client/p2');

function p2Ready(): { skip: string | false } {
  const ready = fs.existsSync(path.join(P2_HOME, 'configuration', 'config.ini')) && hasTool('java');
  if (!ready && IN_CI) throw new Error(`the p2 director is not set up at ${P2_HOME}; .ci/run runs .ci/p2client/setup.sh`);
  return { skip: ready ? false : `p2 director not set up at ${P2_HOME} (run .ci/p2client/setup.sh)` };
}

/** The `id=version` lines of `p2 -list`, sorted. */
async function directorUnits(url: string): Promise<string[]> {
  const r = await run(P2, ['-repository', url, '-list'], { env: { P2_HOME, P2_CONSOLELOG: '0' } });
  assert.equal(r.code, 0, `${url}: ${r.stderr}${r.stdout}`);
  return r.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^[\w.-]+=\d[\w.-]*$/.test(l))
    .sort();
}

test('the crawler reports exactly the installable units the Equinox p2 director lists, composites included', { ...p2Ready(), timeout: 600_000 }, async () => {
  const root = tempDir('pier-p2cmp-');
  const server = await serveDir(root);
  try {
    const sites = {
      jar: buildSite(path.join(root, 'jar'), exampleSpec('jar', 'org.jar')),
      xml: buildSite(path.join(root, 'xml'), exampleSpec('xml', 'org.xml')),
      xz: buildSite(path.join(root, 'xz'), exampleSpec('xz', 'org.xz')),
    };
    // Relative and absolute children, and a nested composite.
    buildComposite(path.join(root, 'inner'), ['../xz/']);
    buildComposite(path.join(root, 'composite'), ['../jar', `${server.url}/xml/`, '../inner']);
    const expected: Record<string, string[]> = {
      jar: sites.jar.units,
      xml: sites.xml.units,
      xz: sites.xz.units,
      composite: [...sites.jar.units, ...sites.xml.units, ...sites.xz.units].sort(),
    };
    for (const [name, units] of Object.entries(expected)) {
      const url = `${server.url}/${name}/`;
      const crawled = (await crawlRepository(url)).units.map((u) => `${u.id}=${u.version}`).sort();
      const listed = await directorUnits(url);
      assert.deepEqual(crawled, listed, `${name}: crawler and director agree`);
      assert.deepEqual(listed, units, `${name}: both list what the fixture wrote`);
    }
  } finally {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
});

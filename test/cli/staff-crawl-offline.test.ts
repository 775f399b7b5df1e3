// `pier staff crawl` and `pier staff rollback` read the update site from the download host. With
// nothing listening there they refuse up front, name the address and what to start, and record
// no crawl (a stored fatal crawl would block `pier staff enable`).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../helpers/db.js';
import { freePort } from '../helpers/net.js';

const PIER = path.resolve('bin/pier.js');

test('staff crawl and rollback with no download host answering: a clear refusal, nothing recorded', async () => {
  const port = await freePort();
  const env = { ...process.env, PIER_DATA_DIR: tempDir('pier-crawl-offline-'), PIER_DOWNLOAD_PORT: String(port), PIER_DOWNLOAD_URL: '', PIER_LOG_LEVEL: 'warn' };
  const pier = (...args: string[]) => spawnSync(process.execPath, [PIER, 'staff', ...args], { env, encoding: 'utf8' });
  assert.equal(pier('register', 'offline', '--name', 'Offline', '--json').status, 0);

  const crawl = pier('crawl', 'offline');
  assert.equal(crawl.status, 1, crawl.stderr);
  assert.match(crawl.stderr, new RegExp(`download host http://localhost:${port} does not answer \\(ECONNREFUSED\\)`));
  assert.match(crawl.stderr, /pier serve/);
  assert.match(crawl.stderr, /Nothing was crawled\./);

  const rollback = pier('rollback', 'offline', '1.0');
  assert.equal(rollback.status, 1, rollback.stderr);
  assert.match(rollback.stderr, /does not answer.*The label was not moved\./s);

  const shown = JSON.parse(pier('show', 'offline', '--json').stdout) as Record<string, unknown>;
  assert.deepEqual(shown.crawls, [], 'no crawl was recorded');

  // An unknown product is still named as such, whatever the download host does.
  const unknown = pier('crawl', 'nobody');
  assert.equal(unknown.status, 1);
  assert.match(unknown.stderr, /no product "nobody"/);
});

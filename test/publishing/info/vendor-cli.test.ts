/**
 * The vendor's one-file `pier` (src/cli/vendor.ts, bundled by src/cli/vendor-build.ts into
 * dist/cli/pier.mjs): served by the web part at /cli/pier.mjs and named by GET /api/publishing;
 * it runs from an empty folder outside this checkout with Node.js alone (no node_modules).
 * Its `publish` is run for real by test/cli/ci-init/workflow-run.test.ts, which installs it the
 * way the generated pipelines do.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import pkg from '../../../package.json' with { type: 'json' };
import { dialects, tempDir } from '../../helpers/db.js';
import { startPublishing } from '../../helpers/publishing.js';

test('GET /cli/pier.mjs serves the one-file vendor CLI named by /api/publishing; it runs with Node.js alone', { timeout: 120_000 }, async () => {
  const [sqlite] = dialects();
  const db = await sqlite!.create();
  const web = await startPublishing(db.url);
  const empty = tempDir('pier-vendor-cli-');
  try {
    const info = (await (await fetch(`${web.url}/api/publishing`)).json()) as { cli: { url: string; sha256: string } | null };
    assert.ok(info.cli, 'the test runner builds dist/cli/pier.mjs (scripts/build-ui.ts)');
    assert.equal(info.cli.url, 'http://pier.test/cli/pier.mjs');
    const res = await fetch(`${web.url}/cli/pier.mjs`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/javascript/);
    const body = Buffer.from(await res.arrayBuffer());
    assert.equal(createHash('sha256').update(body).digest('hex'), info.cli.sha256);
    assert.equal(res.headers.get('etag'), `"${info.cli.sha256}"`);
    assert.equal((await fetch(`${web.url}/cli/pier.mjs`, { headers: { 'if-none-match': `"${info.cli.sha256}"` } })).status, 304);

    // An empty folder far from this checkout: nothing to resolve packages from.
    const file = path.join(empty, 'pier.mjs');
    fs.writeFileSync(file, body);
    const node = (args: string[], env: Record<string, string> = {}) =>
      spawnSync(process.execPath, [file, ...args], { cwd: empty, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: empty, ...env } });
    const version = node(['--version']);
    assert.equal(version.status, 0, version.stderr);
    assert.equal(version.stdout.trim(), pkg.version);
    const help = node(['--help']);
    assert.match(help.stdout, /publish \[options\]/);
    assert.match(help.stdout, /\bci\b/);
    assert.doesNotMatch(help.stdout, /\bserve\b|\bstaff\b/, 'only the vendor commands');
    const label = node(['ci', 'label'], { GITHUB_REF_NAME: 'v5.3.1', GITHUB_REF_TYPE: 'tag', GITHUB_ACTIONS: 'true' });
    assert.equal(label.status, 0, label.stderr);
    assert.equal(label.stdout.trim(), '5.3');
    // A usage error is a clear message and exit 2, as from `pier publish` in the checkout.
    const bad = node(['publish', '--server', 'http://127.0.0.1:1', '--product', 'x', '--label', '5.3', '--site', empty], { PIER_EDIT_TOKEN: 'pier_et_x' });
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /pier/);
  } finally {
    await web.close();
    await db.drop();
    fs.rmSync(empty, { recursive: true, force: true });
  }
});

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { dialects, tempDir } from '../../helpers/db.js';
import { hasTool, IN_CI } from '../../helpers/tools.js';
import { openSshSftp, run, startStack } from '../sftp/stack.js';
import { generateP2Site } from './p2site.js';

/** The Equinox p2 director from Debian packages (.ci/p2client, set up by .ci/run). */
const P2_HOME = process.env.P2_HOME || '/tmp/p2client';
const P2 = path.resolve('.ci/p2client/p2');
const STUBREPO = path.resolve('.ci/p2client/stubrepo.py');

function p2Ready(): { skip: string | false } {
  const ready = fs.existsSync(path.join(P2_HOME, 'configuration', 'config.ini')) && hasTool('java') && hasTool('sshpass') && hasTool('python3');
  if (!ready && IN_CI) throw new Error(`the p2 director is not set up at ${P2_HOME}; .ci/run runs .ci/p2client/setup.sh`);
  return { skip: ready ? false : `p2 director not set up at ${P2_HOME} (run .ci/p2client/setup.sh)` };
}

const p2 = (args: string[]) => run(P2, args, { env: { P2_HOME, P2_CONSOLELOG: '0' } });

/** The `id=version` lines of `-list`, sorted. */
function units(stdout: string): string[] {
  return stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^[\w.-]+=\d[\w.-]*$/.test(l))
    .sort();
}

test('the p2 director lists and installs an update site from the download host exactly as from disk', { ...p2Ready(), timeout: 300_000 }, async () => {
  const [sqlite] = dialects();
  const db = await sqlite!.create();
  const stack = await startStack(db.url);
  const work = tempDir('pier-p2-');
  try {
    const site = await generateP2Site(path.join(work, 'site'));
    const creds = (await stack.register('csv-nodes')).sftp;
    const put = await openSshSftp(stack.sftp.port, creds, [`put -r ${site.dir} /update-site/5.4`]);
    assert.equal(put.code, 0, put.stderr);
    await stack.release('csv-nodes', '5.4');
    const served = `${stack.downloads.url}/csv-nodes/5.4/`;

    const fromHost = await p2(['-repository', served, '-list']);
    const fromDisk = await p2(['-repository', `file:${site.dir}/`, '-list']);
    assert.equal(fromHost.code, 0, fromHost.stderr + fromHost.stdout);
    assert.equal(fromDisk.code, 0, fromDisk.stderr + fromDisk.stdout);
    assert.deepEqual(units(fromHost.stdout), units(fromDisk.stdout));
    assert.deepEqual(units(fromHost.stdout), [
      `${site.bundles[0]?.id}=${site.bundles[0]?.version}`,
      `${site.bundles[1]?.id}=${site.bundles[1]?.version}`,
      `${site.feature.id}.feature.group=${site.feature.version}`,
      `${site.feature.id}.feature.jar=${site.feature.version}`,
    ].sort());

    // org.knime.core comes from the platform: a stub repository satisfies it.
    const stubs = path.join(work, 'stubs');
    const stub = await run('python3', [STUBREPO, served, stubs]);
    assert.equal(stub.code, 0, stub.stderr);
    const dest = path.join(work, 'install');
    const install = await p2([
      '-metadataRepository',
      `${served},file:${stubs}/`,
      '-artifactRepository',
      served,
      '-installIU',
      `${site.feature.id}.feature.group`,
      '-destination',
      dest,
      '-bundlepool',
      dest,
      '-profile',
      'PierTest',
    ]);
    assert.equal(install.code, 0, install.stderr + install.stdout);
    for (const b of site.bundles) {
      const name = `${b.id}_${b.version}.jar`;
      const installed = path.join(dest, 'plugins', name);
      assert.ok(fs.existsSync(installed), `${name} installed`);
      assert.ok(fs.readFileSync(installed).equals(fs.readFileSync(path.join(site.dir, 'plugins', name))), `${name} byte-identical`);
    }
    // Nothing was installed for the stubs, and nothing but what the site holds.
    assert.deepEqual(fs.readdirSync(path.join(dest, 'plugins')).sort(), site.bundles.map((b) => `${b.id}_${b.version}.jar`).sort());
  } finally {
    await stack.close();
    await db.drop();
    fs.rmSync(work, { recursive: true, force: true });
  }
});

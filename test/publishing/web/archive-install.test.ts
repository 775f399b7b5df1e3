// The archive-only install entry is honest: the file its link downloads installs in the
// platform's own p2 code the way the page says ("Add… › Archive…" makes p2 read the local zip
// as `jar:file:<zip>!/`), with the same units as the unzipped repository.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { dialects, tempDir } from '../../helpers/db.js';
import { startPublishing } from '../../helpers/publishing.js';
import { hasTool, IN_CI } from '../../helpers/tools.js';
import { generateP2Site } from '../downloads/p2site.js';
import { fetchBytes, openSshSftp, run, startStack } from '../sftp/stack.js';

/** The Equinox p2 director from Debian packages (.ci/p2client, set up by .ci/run). */
const P2_HOME = process.env.P2_HOME || '/tmp/p2client';
const P2 = path.resolve('.ci/p2client/p2');
const STUBREPO = path.resolve('.ci/p2client/stubrepo.py');

function p2Ready(): { skip: string | false } {
  const ready =
    fs.existsSync(path.join(P2_HOME, 'configuration', 'config.ini')) && hasTool('java') && hasTool('sshpass') && hasTool('python3') && hasTool('zip');
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

test('the archive linked from an archive-only label installs with the p2 director from the downloaded file', { ...p2Ready(), timeout: 300_000 }, async () => {
  const [sqlite] = dialects();
  const db = await sqlite!.create();
  const stack = await startStack(db.url);
  const web = await startPublishing(db.url, {}, { PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_CRAWL_SETTLE_SECONDS: '0' });
  const work = tempDir('pier-archive-p2-');
  try {
    const site = await generateP2Site(path.join(work, 'site'));
    const zip = path.join(work, 'built.zip');
    const zipped = await run('zip', ['-qrX', zip, '.'], { cwd: site.dir });
    assert.equal(zipped.code, 0, zipped.stderr);
    const creds = (await stack.register('csv-nodes')).sftp;
    const put = await openSshSftp(stack.sftp.port, creds, [`put ${zip} /update-site/5.4.zip`]);
    assert.equal(put.code, 0, put.stderr);

    // What a user does: follow the page's download link, save the file.
    const html = await (await fetch(`${web.url}/product/csv-nodes`)).text();
    const href = html.match(/<a class="button" href="([^"]+)">Download 5\.4\.zip<\/a>/)?.[1];
    assert.equal(href, `${stack.downloads.url}/csv-nodes/5.4.zip`);
    const got = await fetchBytes(href!);
    assert.equal(got.status, 200);
    const saved = path.join(work, 'downloads', 'csv-nodes-5.4.zip');
    fs.mkdirSync(path.dirname(saved), { recursive: true });
    fs.writeFileSync(saved, got.body);
    const archive = `jar:file:${saved}!/`;

    const fromArchive = await p2(['-repository', archive, '-list']);
    const fromDisk = await p2(['-repository', `file:${site.dir}/`, '-list']);
    assert.equal(fromArchive.code, 0, fromArchive.stderr + fromArchive.stdout);
    assert.equal(fromDisk.code, 0, fromDisk.stderr + fromDisk.stdout);
    assert.deepEqual(units(fromArchive.stdout), units(fromDisk.stdout));
    assert.ok(units(fromArchive.stdout).includes(`${site.feature.id}.feature.group=${site.feature.version}`));

    // Install the feature from the archive (org.knime.core stubbed, as the platform provides it).
    const stubs = path.join(work, 'stubs');
    const stub = await run('python3', [STUBREPO, site.dir, stubs]);
    assert.equal(stub.code, 0, stub.stderr);
    const dest = path.join(work, 'install');
    const install = await p2([
      '-metadataRepository',
      `${archive},file:${stubs}/`,
      '-artifactRepository',
      archive,
      '-installIU',
      `${site.feature.id}.feature.group`,
      '-destination',
      dest,
      '-bundlepool',
      dest,
      '-profile',
      'PierArchive',
    ]);
    assert.equal(install.code, 0, install.stderr + install.stdout);
    for (const b of site.bundles) {
      const name = `${b.id}_${b.version}.jar`;
      assert.ok(fs.readFileSync(path.join(dest, 'plugins', name)).equals(fs.readFileSync(path.join(site.dir, 'plugins', name))), `${name} byte-identical`);
    }
  } finally {
    await web.close();
    await stack.close();
    await db.drop();
    fs.rmSync(work, { recursive: true, force: true });
  }
});

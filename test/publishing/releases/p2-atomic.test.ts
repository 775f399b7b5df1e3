/**
 * Atomic label releases, as the platform's own installer sees it: while the Equinox p2 director
 * installs the label's feature in a loop, a new release of the same label is uploaded by each of
 * the three clients (OpenSSH `sftp put -r`, `lftp mirror -R --delete`, `rclone sync`), unmodified,
 * and released by the automatic crawl once the upload settled. Every install succeeds and installs
 * one release whole: the feature and both bundles of one version, never a mix, byte for byte.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { dialects, tempDir } from '../../helpers/db.js';
import { freePort } from '../../helpers/net.js';
import { startPublishing } from '../../helpers/publishing.js';
import { hasTool, IN_CI, needsTool } from '../../helpers/tools.js';
import { generateP2Site, type P2Site } from '../downloads/p2site.js';
import { lftp, openSshSftp, run, startStack } from '../sftp/stack.js';

const P2_HOME = process.env.P2_HOME || '/tmp/p2client';
const P2 = path.resolve('.ci/p2client/p2');
const STUBREPO = path.resolve('.ci/p2client/stubrepo.py');

function ready(): { skip: string | false } {
  const p2 = fs.existsSync(path.join(P2_HOME, 'configuration', 'config.ini')) && hasTool('java') && hasTool('python3');
  if (!p2 && IN_CI) throw new Error(`the p2 director is not set up at ${P2_HOME}; .ci/run runs .ci/p2client/setup.sh`);
  if (!p2) return { skip: `p2 director not set up at ${P2_HOME} (run .ci/p2client/setup.sh)` };
  return ['sshpass', 'sftp', 'lftp', 'rclone'].map(needsTool).find((t) => t.skip) ?? { skip: false };
}

async function rclone(port: number, creds: { username: string; password: string }, args: string[]) {
  const obscured = (await run('rclone', ['obscure', creds.password])).stdout.trim();
  const remote = `:sftp,host=127.0.0.1,port=${port},user=${creds.username},pass=${obscured}:`;
  return run('rclone', ['--config', '/dev/null', ...args.map((a) => a.replace('REMOTE:', remote))]);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A fresh build: every file of the site newer than anything uploaded before (lftp mirror compares times). */
function rebuilt(dir: string): string {
  const now = new Date();
  for (const e of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) if (e.isFile()) fs.utimesSync(path.join(e.parentPath, e.name), now, now);
  return dir;
}

test('p2 installs during releases by three SFTP clients: each gets one release whole, none fails', { ...ready(), timeout: 600_000 }, async (t) => {
  const [sqlite] = dialects();
  const db = await sqlite!.create();
  const port = await freePort();
  const downloadUrl = `http://127.0.0.1:${port}`;
  const env = { PIER_DOWNLOAD_PORT: String(port), PIER_DOWNLOAD_URL: downloadUrl, PIER_CRAWL_SETTLE_SECONDS: '2' };
  const stack = await startStack(db.url, { env });
  const web = await startPublishing(db.url, {}, { ...env, PIER_STORAGE_DIR: stack.storageDir });
  const work = tempDir('pier-p2-atomic-');
  try {
    const creds = (await stack.register('csv-nodes')).sftp;
    const versions = ['1.0.0.v1', '2.0.0.v22', '3.0.0.v333', '4.0.0.v4444'];
    const sites: P2Site[] = [];
    for (const v of versions) sites.push(await generateP2Site(path.join(work, `site-${v}`), { version: v }));
    const label = `${downloadUrl}/csv-nodes/5.4/`;
    // The label's pointer (releases/service.ts), as the download host reads it.
    const current = async () => fs.readlinkSync(path.join(stack.storageDir, 'csv-nodes/releases/5.4/current'), { encoding: 'utf8' });
    const waitForRelease = async (n: number) => {
      const deadline = Date.now() + 120_000;
      for (;;) {
        const now = await current().catch(() => null);
        if (now === String(n)) return;
        if (Date.now() > deadline) {
          const report = JSON.stringify(await web.service.crawler.report('csv-nodes'), null, 1).slice(0, 4000);
          throw new Error(`release ${n} did not become current (current: ${now}); crawl report: ${report}`);
        }
        await sleep(250);
      }
    };

    const first = await openSshSftp(stack.sftp.port, creds, ['mkdir /update-site/5.4', `put -r ${sites[0]!.dir}/* /update-site/5.4/`]);
    assert.equal(first.code, 0, first.stderr);
    await waitForRelease(1);

    // The platform's core units come from a stub repository (every release needs the same ones).
    const stubs = path.join(work, 'stubs');
    const stub = await run('python3', [STUBREPO, sites[0]!.dir, stubs]);
    assert.equal(stub.code, 0, stub.stderr);

    const installs: { code: number | null; version: string | null; output: string }[] = [];
    let stop = false;
    const loop = (async () => {
      for (let i = 0; !stop || installs.length === 0; i++) {
        const dest = path.join(work, `install-${i}`);
        const r = await run(P2, ['-metadataRepository', `${label},file:${stubs}/`, '-artifactRepository', label, '-installIU', 'org.example.csv.feature.feature.group', '-destination', dest, '-bundlepool', dest, '-profile', 'PierTest'], {
          env: { P2_HOME, P2_CONSOLELOG: '0' },
        });
        const plugins = fs.existsSync(path.join(dest, 'plugins')) ? fs.readdirSync(path.join(dest, 'plugins')).sort() : [];
        // One release whole: exactly its two bundles, each byte-identical to what was built.
        const match = sites.find((s) => {
          const names = s.bundles.map((b) => `${b.id}_${b.version}.jar`).sort();
          return names.length === plugins.length && names.every((n, k) => n === plugins[k] && fs.readFileSync(path.join(dest, 'plugins', n)).equals(fs.readFileSync(path.join(s.dir, 'plugins', n))));
        });
        installs.push({ code: r.code, version: match ? match.feature.version : null, output: `${plugins.join(', ')}\n${r.stdout}\n${r.stderr}`.slice(-3000) });
        fs.rmSync(dest, { recursive: true, force: true });
      }
    })();

    // Release 2 with OpenSSH's put -r over the folder (new jar names beside the old ones).
    const put = await openSshSftp(stack.sftp.port, creds, [`put -r ${rebuilt(sites[1]!.dir)}/* /update-site/5.4/`]);
    assert.equal(put.code, 0, put.stderr);
    await waitForRelease(2);
    await sleep(3000);
    // Release 3 with lftp mirror -R --delete (the folder becomes exactly the new site).
    const mirror = await lftp(stack.sftp.port, creds, `mirror -R --delete --no-perms ${rebuilt(sites[2]!.dir)} /update-site/5.4`, work);
    assert.equal(mirror.code, 0, mirror.stderr);
    await waitForRelease(3);
    await sleep(3000);
    // Release 4 with rclone sync.
    const sync = await rclone(stack.sftp.port, creds, ['sync', rebuilt(sites[3]!.dir), 'REMOTE:update-site/5.4']);
    assert.equal(sync.code, 0, sync.stderr);
    await waitForRelease(4);
    await sleep(3000);
    stop = true;
    await loop;

    const failed = installs.filter((i) => i.code !== 0 || i.version === null);
    assert.deepEqual(failed.map((f) => f.output), [], `${failed.length} of ${installs.length} installs failed or mixed releases`);
    const seen = new Set(installs.map((i) => i.version));
    t.diagnostic(`${installs.length} installs, releases installed: ${installs.map((i) => i.version).join(' ')}`);
    assert.ok(seen.size >= 2, `installs spanned releases (saw ${[...seen].join(', ')} in ${installs.length} installs)`);
    assert.equal(installs.at(-1)?.version, sites[3]!.feature.version, 'the last install got the last release');
  } finally {
    await web.close();
    await stack.close();
    await db.drop();
    fs.rmSync(work, { recursive: true, force: true });
  }
});

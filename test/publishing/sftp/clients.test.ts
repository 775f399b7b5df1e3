import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { IssuedCredentials } from '../../../src/publishing/products/service.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { needsTool } from '../../helpers/tools.js';
import { fetchBytes, generateSite, lftp, openSshSftp, run, type Stack, startStack } from './stack.js';

/** rclone with an on-the-fly remote (no config file); the password goes in obscured, as rclone wants. */
async function rclone(port: number, creds: { username: string; password: string }, args: string[]) {
  const obscured = (await run('rclone', ['obscure', creds.password])).stdout.trim();
  const remote = `:sftp,host=127.0.0.1,port=${port},user=${creds.username},pass=${obscured}:`;
  return run('rclone', ['--config', '/dev/null', ...args.map((a) => a.replace('REMOTE:', remote))]);
}

const [sqlite] = dialects();
const tools = ['sshpass', 'sftp', 'lftp', 'zip', 'rclone'].map(needsTool).find((t) => t.skip) ?? { skip: false };

/** Downloads every file of `local` from `base` and compares bytes. */
async function assertServed(base: string, local: string, files: string[]): Promise<void> {
  for (const rel of files) {
    const url = `${base}/${rel.split('/').map(encodeURIComponent).join('/')}`;
    const got = await fetchBytes(url);
    assert.equal(got.status, 200, url);
    assert.ok(got.body.equals(fs.readFileSync(path.join(local, rel))), `bytes of ${rel}`);
  }
}

/**
 * Compares every file of `local` with what storage holds in the product's upload folder: a label's
 * folder is the vendor's working copy, served only once released (docs/vendors.md "Releases"), and
 * these sites are random bytes that no crawl would release.
 */
function assertStored(storageDir: string, folder: string, local: string, files: string[]): void {
  for (const rel of files) assert.ok(fs.readFileSync(path.join(storageDir, folder, rel)).equals(fs.readFileSync(path.join(local, rel))), `bytes of ${rel}`);
}

describe('real SFTP clients against the SFTP server, checked through the download host', tools, () => {
  let stack: Stack;
  let creds: IssuedCredentials['sftp'];
  let work: string;

  before(async () => {
    const db = await sqlite!.create();
    stack = await startStack(db.url);
    const origClose = stack.close;
    stack.close = async () => {
      await origClose();
      await db.drop();
    };
    creds = (await stack.register('csv-nodes')).sftp;
    work = tempDir('pier-clients-');
  });
  after(async () => {
    await stack.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  test('OpenSSH sftp uploads an update site, its archive, assets and workflows; every byte comes back over HTTP', async () => {
    const site = path.join(work, 'site');
    const files = generateSite(site, 300);
    const zip = path.join(work, 'site.zip');
    assert.equal((await run('zip', ['-qr', zip, '.'], { cwd: site })).code, 0);
    const assets = path.join(work, 'assets');
    fs.mkdirSync(path.join(assets, 'img'), { recursive: true });
    fs.writeFileSync(path.join(assets, 'img', 'logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    fs.writeFileSync(path.join(assets, 'shot one.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]));
    const workflows = path.join(work, 'workflows');
    fs.mkdirSync(workflows);
    fs.writeFileSync(path.join(workflows, 'Demo.knwf'), Buffer.alloc(70_000, 7));

    const r = await openSshSftp(stack.sftp.port, creds, [
      'ls /',
      // The target folder does not exist yet: `put -r` creates it and uploads the contents.
      `put -r ${site} /update-site/5.4`,
      `put ${zip} /update-site/5.4.zip`,
      `put -r ${assets}/img /assets/img`,
      `put "${assets}/shot one.png" "/assets/shot one.png"`,
      `put ${workflows}/Demo.knwf /workflows/Demo.knwf`,
      // Overwrite (the spec: uploads overwrite) and the other commands users type.
      `put ${zip} /update-site/5.4.zip`,
      'ls -l /update-site',
      `get /update-site/5.4/plugins/large_1.0.0.jar ${work}/large-back.jar`,
      'chmod 600 /assets/img/logo.svg',
      'rename /assets/img/logo.svg /assets/img/renamed.svg',
      'rename /assets/img/renamed.svg /assets/img/logo.svg',
      'mkdir /assets/tmp',
      `put ${zip} /assets/tmp/x.zip`,
      'rm /assets/tmp/x.zip',
      'rmdir /assets/tmp',
    ]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /update-site/);
    assert.match(r.stdout, /5\.4\.zip/);
    assert.ok(fs.readFileSync(`${work}/large-back.jar`).equals(fs.readFileSync(path.join(site, 'plugins/large_1.0.0.jar'))));

    const base = stack.downloads.url;
    assertStored(stack.storageDir, 'csv-nodes/update-site/5.4', site, files);
    // Uploaded, never released: users get nothing from the label yet.
    assert.equal((await fetchBytes(`${base}/csv-nodes/5.4/p2.index`)).status, 404);
    const archive = await fetchBytes(`${base}/csv-nodes/5.4.zip`);
    assert.ok(archive.body.equals(fs.readFileSync(zip)));
    assert.equal(archive.headers.get('content-type'), 'application/zip');
    await assertServed(`${base}/assets/csv-nodes`, assets, ['img/logo.svg', 'shot one.png']);
    await assertServed(`${base}/workflows/csv-nodes`, workflows, ['Demo.knwf']);
    assert.equal((await fetchBytes(`${base}/assets/csv-nodes/tmp/x.zip`)).status, 404);

    const [label] = await stack.files.listLabels('csv-nodes');
    assert.equal(label?.label, '5.4');
    assert.equal(label?.files, files.length);
    assert.equal(label?.hasArchive, true);
    assert.equal(label?.bytes, files.reduce((n, f) => n + fs.statSync(path.join(site, f)).size, 0));
    assert.deepEqual(
      (await stack.files.listFiles('csv-nodes', 'assets')).map((f) => f.path),
      ['img/logo.svg', 'shot one.png'],
    );

    // `reput` would continue the stored file, which after an interrupted upload is the previous
    // version (uploads are atomic): it is refused, and the stored file stays as it was.
    fs.writeFileSync(path.join(work, 'resume.bin'), Buffer.alloc(300_000, 9));
    fs.writeFileSync(path.join(work, 'half.bin'), Buffer.alloc(100_000, 9));
    const resumed = await openSshSftp(stack.sftp.port, creds, [`put ${work}/half.bin /assets/resume.bin`, `reput ${work}/resume.bin /assets/resume.bin`]);
    assert.notEqual(resumed.code, 0, resumed.stderr);
    assert.ok((await fetchBytes(`${base}/assets/csv-nodes/resume.bin`)).body.equals(fs.readFileSync(`${work}/half.bin`)));
  });

  test('lftp mirror -R --delete publishes a site and a later mirror makes the server match exactly', async () => {
    const site = path.join(work, 'mirror');
    const files = generateSite(site, 120);
    let r = await lftp(stack.sftp.port, creds, 'mirror -R --delete --no-perms mirror /update-site/5.5', work);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assertStored(stack.storageDir, 'csv-nodes/update-site/5.5', site, files);

    // Next release of the site: some files gone, some changed, some new.
    const removed = files.filter((_, i) => i % 5 === 1);
    for (const f of removed) fs.rmSync(path.join(site, f));
    fs.writeFileSync(path.join(site, 'p2.index'), 'version=1\nchanged=yes\n');
    fs.mkdirSync(path.join(site, 'new-folder'));
    fs.writeFileSync(path.join(site, 'new-folder', 'added.jar'), 'added');
    const stampBefore = await stack.files.changeStamp('csv-nodes');
    r = await lftp(stack.sftp.port, creds, 'mirror -R --delete --no-perms mirror /update-site/5.5', work);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.notEqual(await stack.files.changeStamp('csv-nodes'), stampBefore);

    const now = fs.readdirSync(site, { recursive: true, encoding: 'utf8' }).filter((f) => fs.statSync(path.join(site, f)).isFile()).sort();
    assertStored(stack.storageDir, 'csv-nodes/update-site/5.5', site, now);
    for (const f of removed) assert.equal(fs.existsSync(path.join(stack.storageDir, 'csv-nodes/update-site/5.5', f)), false, f);
    const stored = fs
      .readdirSync(path.join(stack.storageDir, 'csv-nodes/update-site/5.5'), { recursive: true, encoding: 'utf8' })
      .filter((f) => fs.statSync(path.join(stack.storageDir, 'csv-nodes/update-site/5.5', f)).isFile())
      .sort();
    assert.deepEqual(stored, now);
    const label = (await stack.files.listLabels('csv-nodes')).find((l) => l.label === '5.5');
    assert.equal(label?.files, now.length);
  });

  test('rclone sync publishes workflows and a later sync removes what the source lost', async () => {
    const src = path.join(work, 'rclone');
    fs.mkdirSync(path.join(src, 'group'), { recursive: true });
    fs.writeFileSync(path.join(src, 'One.knwf'), Buffer.alloc(5000, 1));
    fs.writeFileSync(path.join(src, 'group', 'Two.knwf'), Buffer.alloc(200_000, 2));
    let r = await rclone(stack.sftp.port, creds, ['sync', src, 'REMOTE:/workflows/rc']);
    assert.equal(r.code, 0, r.stderr);
    await assertServed(`${stack.downloads.url}/workflows/csv-nodes/rc`, src, ['One.knwf', 'group/Two.knwf']);
    fs.rmSync(path.join(src, 'One.knwf'));
    r = await rclone(stack.sftp.port, creds, ['sync', src, 'REMOTE:/workflows/rc']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await fetchBytes(`${stack.downloads.url}/workflows/csv-nodes/rc/One.knwf`)).status, 404);
    r = await rclone(stack.sftp.port, creds, ['check', src, 'REMOTE:/workflows/rc']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /0 differences found/);
  });
});

import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dialects, tempDir } from '../../helpers/db.js';
import { buildSite, exampleSpec } from '../../helpers/p2-fixtures.js';
import { ssh2Sftp } from '../../publishing/sftp/stack.js';
import { type PublishStack, runPier, startProxy, startPublishStack, vendorEnv } from './stack.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** path → sha256 of every file below `dir`. */
function localFiles(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const rel of fs.readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const p = path.join(dir, rel);
    if (fs.statSync(p).isFile()) out.set(rel.split(path.sep).join('/'), sha(fs.readFileSync(p)));
  }
  return out;
}

/** A generated P2 site plus files no metadata names (a vendor's index page, notes). */
function makeSite(root: string, name: string, extra: Record<string, Buffer | string> = {}): string {
  const dir = path.join(root, name);
  buildSite(dir, exampleSpec('jar'));
  for (const [rel, data] of Object.entries({ 'index.html': '<h1>Example</h1>', 'notes/readme.txt': 'notes', ...extra })) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), data);
  }
  return dir;
}

const uploadedCount = (stdout: string) => Number(/uploaded: (\d+) files?/.exec(stdout)?.[1] ?? Number.NaN);

for (const target of dialects()) {
  describe(`pier publish on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let stack: PublishStack;
    let work: string;
    let server: string;

    before(async () => {
      db = await target.create();
      stack = await startPublishStack(db.url);
      server = stack.web.url;
      work = tempDir('pier-publish-work-');
    });
    after(async () => {
      await stack.close();
      await db.drop();
      fs.rmSync(work, { recursive: true, force: true });
    });

    const secrets = (c: { editToken: string; sftp: { password: string } }) => vendorEnv(work, { PIER_EDIT_TOKEN: c.editToken, PIER_SFTP_PASSWORD: c.sftp.password });
    const publish = (product: string, site: string, env: NodeJS.ProcessEnv, ...more: string[]) =>
      runPier(['publish', '--server', server, '--product', product, '--label', '5.4', '--site', site, ...more], env);

    test('publishes a built site with the secrets: the label equals the site, downloads serve it, the crawl report is printed; a re-publish of one changed file moves only that file and removes what the site no longer has', async () => {
      const creds = await stack.register('acme-nodes');
      const site = makeSite(work, 'acme');
      const first = await publish('acme-nodes', site, secrets(creds));
      assert.equal(first.code, 0, first.stderr + first.stdout);
      assert.match(first.stdout, /site check: 11 files, .*: OK/);
      assert.match(first.stdout, /SFTP 127\.0\.0\.1:\d+: host key SHA256:\S+ \(as GET \/api\/publishing lists\)/);
      assert.match(first.stdout, /upload: 11\/11 files/, 'plain progress lines when not on a terminal');
      assert.equal(uploadedCount(first.stdout), 11);
      assert.match(first.stdout, /release: label 5\.4 is now release 1 \(11 files/);
      assert.match(first.stdout, /crawl: 9 units, 2 features, 4 bundles, 4 nodes/);
      assert.match(first.stdout, /published acme-nodes 5\.4/);
      assert.ok(!first.stdout.includes(creds.editToken) && !first.stdout.includes(creds.sftp.password) && !first.stderr.includes(creds.editToken), 'no secret printed');

      const local = localFiles(site);
      const res = await fetch(`${server}/api/products/acme-nodes/labels/5.4/files`, { headers: { authorization: `Bearer ${creds.editToken}` } });
      const manifest = (await res.json()) as { files: { path: string; sha256: string }[] };
      assert.deepEqual(new Map(manifest.files.map((f) => [f.path, f.sha256])), local);
      const content = await fetch(`${stack.downloads.url}/acme-nodes/5.4/content.jar`);
      assert.equal(content.status, 200);
      assert.equal(sha(Buffer.from(await content.arrayBuffer())), local.get('content.jar'));

      // One changed file, one folder gone, one new empty folder.
      const before = await stack.stored('acme-nodes', '5.4');
      fs.writeFileSync(path.join(site, 'index.html'), '<h1>Example 2</h1>');
      fs.rmSync(path.join(site, 'notes'), { recursive: true });
      fs.mkdirSync(path.join(site, 'empty'));
      const second = await publish('acme-nodes', site, secrets(creds));
      assert.equal(second.code, 0, second.stderr + second.stdout);
      assert.equal(uploadedCount(second.stdout), 1);
      assert.match(second.stdout, /1 file and 1 folder removed, 9 unchanged/);
      const afterwards = await stack.stored('acme-nodes', '5.4');
      assert.deepEqual([...afterwards.keys()].sort(), [...localFiles(site).keys()].sort());
      for (const [p, version] of afterwards) {
        if (p === 'index.html') assert.notEqual(version, before.get(p), 'the changed file was uploaded');
        else assert.equal(version, before.get(p), `${p} was not uploaded again`);
      }
      const folder = path.join(stack.config.publishing.storageDir, 'acme-nodes/update-site/5.4');
      assert.equal(fs.existsSync(path.join(folder, 'notes')), false, 'the emptied folder is removed');
      assert.equal(fs.statSync(path.join(folder, 'empty')).isDirectory(), true, 'an empty folder of the site is created');
      assert.match(second.stdout, /release: label 5\.4 is now release 2/);

      // Nothing changed: nothing moves; the release says so.
      const third = await publish('acme-nodes', site, secrets(creds));
      assert.equal(third.code, 0, third.stderr);
      assert.equal(uploadedCount(third.stdout), 0);
    });

    test('--archive, --assets and --workflows: the archive as update-site/<label>.zip (again only when it changed), assets and workflows uploaded, nothing of theirs removed', async () => {
      const creds = await stack.register('extras-ext');
      const site = makeSite(work, 'extras');
      const zip = path.join(work, 'extras-site.zip');
      fs.writeFileSync(zip, randomBytes(5000));
      const assets = path.join(work, 'extras-assets');
      fs.mkdirSync(path.join(assets, 'img'), { recursive: true });
      fs.writeFileSync(path.join(assets, 'img', 'shot.png'), 'png');
      const workflows = path.join(work, 'extras-workflows');
      fs.mkdirSync(workflows);
      fs.writeFileSync(path.join(workflows, 'Example.knwf'), 'knwf');
      const args = ['--archive', zip, '--assets', assets, '--workflows', workflows];
      const first = await publish('extras-ext', site, secrets(creds), ...args);
      assert.equal(first.code, 0, first.stderr + first.stdout);
      assert.match(first.stdout, /, the archive, 2 asset\/workflow files in/);
      const stored = (rel: string) => path.join(stack.config.publishing.storageDir, 'extras-ext', rel);
      assert.equal(sha(fs.readFileSync(stored('update-site/5.4.zip'))), sha(fs.readFileSync(zip)));
      assert.equal(fs.readFileSync(stored('assets/img/shot.png'), 'utf8'), 'png');
      assert.equal(fs.readFileSync(stored('workflows/Example.knwf'), 'utf8'), 'knwf');
      const zipInode = fs.statSync(stored('update-site/5.4.zip')).ino;
      // Assets of earlier publishes stay; an unchanged archive is not sent again.
      fs.writeFileSync(stored('assets/old.png'), 'old');
      fs.rmSync(path.join(assets, 'img'), { recursive: true });
      fs.writeFileSync(path.join(assets, 'new.png'), 'new');
      const second = await publish('extras-ext', site, secrets(creds), ...args);
      assert.equal(second.code, 0, second.stderr + second.stdout);
      assert.doesNotMatch(second.stdout, /the archive/);
      assert.equal(fs.statSync(stored('update-site/5.4.zip')).ino, zipInode);
      assert.equal(fs.readFileSync(stored('assets/old.png'), 'utf8'), 'old');
      assert.equal(fs.readFileSync(stored('assets/img/shot.png'), 'utf8'), 'png');
      assert.equal(fs.readFileSync(stored('assets/new.png'), 'utf8'), 'new');
    });

    test('the release: refused when the folder changed under it (exit 7, the label stays on its release); a crawl that takes longer than --timeout is exit 8', async () => {
      const creds = await stack.register('release-ext');
      const site = makeSite(work, 'release');
      assert.equal((await publish('release-ext', site, secrets(creds))).code, 0);
      // Another client removes a bundle after the upload, before the release call reaches the server.
      const proxy = await startProxy(stack.web.url, {
        async before(method, url) {
          if (method !== 'POST' || !url.endsWith('/release')) return;
          const session = await ssh2Sftp(stack.sftp.port, 'release-ext', creds.sftp.password);
          await new Promise<void>((resolve, reject) =>
            session.sftp.unlink('/update-site/5.4/plugins/org.example.nodes_1.2.0.v20260101.jar', (e) => (e ? reject(e) : resolve())),
          );
          session.end();
        },
      });
      try {
        fs.writeFileSync(path.join(site, 'index.html'), 'changed');
        const r = await runPier(['publish', '--server', proxy.url, '--product', 'release-ext', '--label', '5.4', '--site', site], secrets(creds));
        assert.equal(r.code, 7, r.stderr + r.stdout);
        assert.match(r.stderr, /release refused: .*; users get release 1 from /);
        assert.match(r.stderr, /org\.example\.nodes/);
        const served = await fetch(`${stack.downloads.url}/release-ext/5.4/plugins/org.example.nodes_1.2.0.v20260101.jar`);
        assert.equal(served.status, 200, 'release 1 is still what downloads get');
      } finally {
        await proxy.close();
      }

      let release: () => void = () => {};
      const held = new Promise<void>((r) => {
        release = r;
      });
      const slow = await startProxy(stack.web.url, {
        async before(method, url) {
          if (method === 'POST' && url.endsWith('/release')) await held;
        },
      });
      try {
        const r = await runPier(['publish', '--server', slow.url, '--product', 'release-ext', '--label', '5.4', '--site', site, '--timeout', '2'], secrets(creds));
        assert.equal(r.code, 8, r.stderr + r.stdout);
        assert.match(r.stderr, /no answer within 2 s \(--timeout 2\); the upload is complete/);
      } finally {
        release();
        await slow.close();
      }
    });

    test('a broken site is refused before any upload with the list of problems (exit 3), nothing stored', async () => {
      const creds = await stack.register('broken-ext');
      const spec = exampleSpec('jar');
      // The core bundle holds no nodes: the crawl only checks that it exists; its checksum is
      // checked by the publish's own pass over every artifact.
      spec.bundles = spec.bundles.map((b) => (b.id === 'org.example.core' ? { ...b, badChecksum: true } : b.id === 'org.example.nodes.source' ? { ...b, missing: true } : b));
      const site = path.join(work, 'broken');
      buildSite(site, spec);
      const r = await publish('broken-ext', site, secrets(creds));
      assert.equal(r.code, 3, r.stderr + r.stdout);
      assert.match(r.stderr, /the site in .* is broken; nothing was uploaded/);
      assert.match(r.stderr, /checksum_mismatch: sha-256 of org\.example\.core_1\.2\.0\.v20260101/);
      assert.match(r.stderr, /artifact_missing: .*org\.example\.nodes\.source/);
      assert.equal((await stack.stored('broken-ext', '5.4')).size, 0);
      assert.equal(fs.existsSync(path.join(stack.config.publishing.storageDir, 'broken-ext', 'update-site', '5.4')), false);
      // The site is judged first: broken and a wrong password is still exit 3.
      const both = await publish('broken-ext', site, vendorEnv(work, { PIER_EDIT_TOKEN: creds.editToken, PIER_SFTP_PASSWORD: 'wrong' }));
      assert.equal(both.code, 3, both.stderr);

      // A feature jar changed after the build: the crawl compares the size of artifacts it does
      // not read; the publish's own pass over every artifact also compares checksums.
      const feature = makeSite(work, 'feature');
      fs.appendFileSync(path.join(feature, 'features/org.example.feature_1.2.0.v20260101.jar'), 'x');
      const f = await publish('broken-ext', feature, secrets(creds));
      assert.equal(f.code, 3, f.stderr + f.stdout);
      assert.match(f.stderr, /checksum_mismatch: artifact org\.eclipse\.update\.feature\/org\.example\.feature\/1\.2\.0\.v20260101 has \d+ bytes where the artifacts metadata says \d+/);
      // The same size, other bytes: only the publish's checksum pass sees it.
      const flipped = makeSite(work, 'flipped');
      const jar = path.join(flipped, 'features/org.example.feature_1.2.0.v20260101.jar');
      const bytes = fs.readFileSync(jar);
      bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 0xff;
      fs.writeFileSync(jar, bytes);
      const same = await publish('broken-ext', flipped, secrets(creds));
      assert.equal(same.code, 3, same.stderr + same.stdout);
      assert.match(same.stderr, /checksum_mismatch: (sha-256|md5) of org\.example\.feature_1\.2\.0\.v20260101/);
      assert.equal((await stack.stored('broken-ext', '5.4')).size, 0);

      // Metadata that does not parse: fatal, refused as well.
      const garbage = makeSite(work, 'garbage');
      fs.writeFileSync(path.join(garbage, 'content.jar'), 'not a zip');
      const g = await publish('broken-ext', garbage, secrets(creds));
      assert.equal(g.code, 3, g.stderr);
      assert.match(g.stderr, /metadata_unreadable|jar_unreadable/);
      assert.equal((await stack.stored('broken-ext', '5.4')).size, 0);
    });

    test('refused credentials exit 4 before anything is uploaded: a wrong edit token, a wrong SFTP password', async () => {
      const creds = await stack.register('auth-ext');
      const site = makeSite(work, 'auth');
      const token = await publish('auth-ext', site, vendorEnv(work, { PIER_EDIT_TOKEN: 'pier_et_notatokenatall', PIER_SFTP_PASSWORD: creds.sftp.password }));
      assert.equal(token.code, 4, token.stderr);
      assert.match(token.stderr, /refused \(401\)/);
      const password = await publish('auth-ext', site, vendorEnv(work, { PIER_EDIT_TOKEN: creds.editToken, PIER_SFTP_PASSWORD: 'wrong-password' }));
      assert.equal(password.code, 4, password.stderr);
      assert.match(password.stderr, /refused the password of auth-ext/);
      assert.ok(!password.stderr.includes('wrong-password'), 'the password is never printed');
      assert.equal((await stack.stored('auth-ext', '5.4')).size, 0);
    });

    test('settings: secrets as flags are refused, missing secrets and bad flags exit 2', async () => {
      const creds = await stack.register('flags-ext');
      const site = makeSite(work, 'flags');
      const flag = await publish('flags-ext', site, vendorEnv(work, { PIER_SFTP_PASSWORD: creds.sftp.password }), '--edit-token', creds.editToken);
      assert.equal(flag.code, 2, flag.stderr);
      assert.match(flag.stderr, /--edit-token is not accepted: secrets are read from the environment only/);
      const missing = await publish('flags-ext', site, vendorEnv(work, {}));
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, /no credentials: set PIER_EDIT_TOKEN and PIER_SFTP_PASSWORD/);
      const unknown = await publish('flags-ext', site, secrets(creds), '--no-such-flag');
      assert.equal(unknown.code, 2, unknown.stderr);
      const badKey = await publish('flags-ext', site, secrets(creds), '--host-key', 'md5:aa');
      assert.equal(badKey.code, 2);
      const plain = await runPier(['publish', '--server', 'http://pier.example.com', '--product', 'flags-ext', '--label', '5.4', '--site', site], secrets(creds));
      assert.equal(plain.code, 2);
      assert.match(plain.stderr, /must be https/);
      assert.equal((await stack.stored('flags-ext', '5.4')).size, 0);
    });

    test('host key: a pinned fingerprint the server does not have is refused before the password is sent (exit 6); the right one works', async () => {
      const creds = await stack.register('pin-ext');
      const site = makeSite(work, 'pin');
      const wrong = `SHA256:${randomBytes(32).toString('base64').replace(/=+$/, '')}`;
      const r = await publish('pin-ext', site, secrets(creds), '--host-key', wrong);
      assert.equal(r.code, 6, r.stderr);
      assert.match(r.stderr, /not the one pinned with --host-key/);
      assert.equal((await stack.stored('pin-ext', '5.4')).size, 0);
      const right = stack.sftp.hostKeys[0]!.fingerprint;
      const ok = await publish('pin-ext', site, secrets(creds), '--host-key', wrong, right, '--dry-run');
      assert.equal(ok.code, 0, ok.stderr);
      assert.match(ok.stdout, new RegExp(`host key ${right.replace(/[+/]/g, '\\$&')} \\(pinned\\)`));
    });

    test('page fields: a dry run the server refuses exits 5 with nothing uploaded; accepted fields are saved after the release', async () => {
      const creds = await stack.register('page-ext');
      const site = makeSite(work, 'page');
      const bad = path.join(work, 'page-bad');
      fs.mkdirSync(bad);
      fs.writeFileSync(path.join(bad, 'page.json'), JSON.stringify({ style: { color1: 'not a color' } }));
      const refused = await publish('page-ext', site, secrets(creds), '--page', bad);
      assert.equal(refused.code, 5, refused.stderr + refused.stdout);
      assert.match(refused.stderr, /page fields \(dry run\); nothing was uploaded/);
      assert.match(refused.stderr, /style\.color1/);
      assert.equal((await stack.stored('page-ext', '5.4')).size, 0);

      const good = path.join(work, 'page-good');
      fs.mkdirSync(good);
      fs.writeFileSync(path.join(good, 'page.json'), JSON.stringify({ description: 'Frobnicates widgets' }));
      fs.writeFileSync(path.join(good, 'text.md'), '# Widgets\n\nAll about them.\n');
      fs.writeFileSync(path.join(good, 'changelog.md'), '# Changelog\n\n## [1.2.0] - 2026-01-01\n### Added\n- Widgets\n');
      const ok = await publish('page-ext', site, secrets(creds), '--page', good);
      assert.equal(ok.code, 0, ok.stderr + ok.stdout);
      assert.match(ok.stdout, /page fields: description, text, changelog: accepted \(dry run\)/);
      const product = await stack.web.service.products.show('page-ext');
      assert.equal(product.fields.description, 'Frobnicates widgets');
      assert.equal(product.fields.text, '# Widgets\n\nAll about them.\n');
    });

    test('--dry-run checks the site, the credentials and the host key and changes nothing', async () => {
      const creds = await stack.register('dry-ext');
      const site = makeSite(work, 'dry');
      const r = await publish('dry-ext', site, secrets(creds), '--dry-run');
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /dry run: 11 files to upload .* 0 unchanged; nothing changed/);
      assert.equal((await stack.stored('dry-ext', '5.4')).size, 0);
      const wrong = await publish('dry-ext', site, vendorEnv(work, { PIER_EDIT_TOKEN: creds.editToken, PIER_SFTP_PASSWORD: 'nope' }), '--dry-run');
      assert.equal(wrong.code, 4, 'the dry run logs in');
    });

    test('an interrupted upload resumes: the re-run moves only what is missing or different, and the label ends equal to the site', async () => {
      const creds = await stack.register('resume-ext');
      const extra: Record<string, Buffer> = {};
      for (let i = 0; i < 300; i++) extra[`extras/part-${String(i).padStart(3, '0')}.bin`] = randomBytes(100_000);
      const site = makeSite(work, 'resume', extra);
      const total = localFiles(site).size;
      let killed = false;
      const first = await runPier(['publish', '--server', server, '--product', 'resume-ext', '--label', '5.4', '--site', site], secrets(creds), {
        onStart(kill) {
          const poll = setInterval(async () => {
            if ((await stack.stored('resume-ext', '5.4')).size >= 20) {
              clearInterval(poll);
              killed = true;
              kill();
            }
          }, 10);
        },
      });
      assert.ok(killed && first.code !== 0, `the upload was cut (exit ${first.code})`);
      // Requests the server had read before the cut still finish (a CLOSE puts its file in place):
      // the state to resume from is the one once the server is done with them.
      let partial = await stack.stored('resume-ext', '5.4');
      for (let quiet = 0; quiet < 10; ) {
        await new Promise((r) => setTimeout(r, 50));
        const now = await stack.stored('resume-ext', '5.4');
        quiet = now.size === partial.size ? quiet + 1 : 0;
        partial = now;
      }
      assert.ok(partial.size >= 20 && partial.size < total, `${partial.size} of ${total} files there after the cut`);

      const second = await publish('resume-ext', site, secrets(creds));
      assert.equal(second.code, 0, second.stderr + second.stdout);
      assert.equal(uploadedCount(second.stdout), total - partial.size);
      const done = await stack.stored('resume-ext', '5.4');
      for (const [p, v] of partial) assert.equal(done.get(p), v, `${p} was not uploaded again`);
      const res = await fetch(`${server}/api/products/resume-ext/labels/5.4/files`, { headers: { authorization: `Bearer ${creds.editToken}` } });
      const manifest = (await res.json()) as { files: { path: string; sha256: string }[] };
      assert.deepEqual(new Map(manifest.files.map((f) => [f.path, f.sha256])), localFiles(site));
    });
  });
}

describe('pier publish host key against GET /api/publishing', () => {
  test('an SFTP server whose key is not one the web part lists is refused (exit 6), nothing stored', async () => {
    const [target] = dialects();
    const db = await target!.create();
    const impostorKeys = tempDir('pier-impostor-');
    const stack = await startPublishStack(db.url, { sftpStorageDir: impostorKeys });
    const work = tempDir('pier-publish-work-');
    try {
      const creds = await stack.register('listed-ext');
      const site = path.join(work, 'site');
      buildSite(site, exampleSpec('jar'));
      const r = await runPier(
        ['publish', '--server', stack.web.url, '--product', 'listed-ext', '--label', '5.4', '--site', site],
        vendorEnv(work, { PIER_EDIT_TOKEN: creds.editToken, PIER_SFTP_PASSWORD: creds.sftp.password }),
      );
      assert.equal(r.code, 6, r.stderr + r.stdout);
      assert.match(r.stderr, /which is not one of the keys GET \/api\/publishing lists/);
      assert.equal(fs.readdirSync(impostorKeys).filter((n) => !n.startsWith('.pier-')).length, 0, 'nothing reached the impostor');
    } finally {
      await stack.close();
      await db.drop();
      fs.rmSync(work, { recursive: true, force: true });
      fs.rmSync(impostorKeys, { recursive: true, force: true });
    }
  });
});

describe('pier publish host key trusted on first use', () => {
  test('a service that lists no host keys: the first key is accepted, printed and remembered; a different key later is refused (exit 6)', async () => {
    const [target] = dialects();
    const db = await target!.create();
    const stack = await startPublishStack(db.url);
    const work = tempDir('pier-publish-work-');
    // The service as an older one answers: GET /api/publishing without host keys; the rest passed through.
    const proxy = await startProxy(stack.web.url, {
      rewrite(url, body) {
        if (url !== '/api/publishing') return body;
        const info = JSON.parse(body.toString('utf8'));
        info.sftp.hostKeys = [];
        return Buffer.from(JSON.stringify(info));
      },
    });
    const server = proxy.url;
    try {
      const creds = await stack.register('tofu-ext');
      const site = path.join(work, 'site');
      buildSite(site, exampleSpec('jar'));
      const env = vendorEnv(work, { PIER_EDIT_TOKEN: creds.editToken, PIER_SFTP_PASSWORD: creds.sftp.password });
      const args = ['publish', '--server', server, '--product', 'tofu-ext', '--label', '5.4', '--site', site];
      const first = await runPier(args, env);
      assert.equal(first.code, 0, first.stderr + first.stdout);
      const key = stack.sftp.hostKeys[0]!.fingerprint;
      assert.ok(first.stdout.includes(`(first use: not checked; pin it with --host-key ${key})`), first.stdout);
      const known = path.join(work, '.config', 'pier', 'known_hosts.json');
      const hostPort = `127.0.0.1:${stack.sftp.port}`;
      assert.deepEqual(JSON.parse(fs.readFileSync(known, 'utf8')), { [hostPort]: key });
      const again = await runPier(args, env);
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /\(as first seen\)/);
      // The server at that address now presents another key: refused before the password is sent.
      fs.writeFileSync(known, JSON.stringify({ [hostPort]: `SHA256:${randomBytes(32).toString('base64').replace(/=+$/, '')}` }));
      const changed = await runPier(args, env);
      assert.equal(changed.code, 6, changed.stderr);
      assert.match(changed.stderr, /not the one it presented first/);
    } finally {
      await proxy.close();
      await stack.close();
      await db.drop();
      fs.rmSync(work, { recursive: true, force: true });
    }
  });
});

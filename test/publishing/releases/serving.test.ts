/**
 * What a label serves, and what the vendor is told, around its releases (docs/vendors.md
 * "Releases"): nothing before the first release, a copy never at a release's address unless it
 * was accepted, a refused first release said as such everywhere (release call, crawl report,
 * labels list, product page, `pier staff crawl` and `show`) with addresses the vendor can open,
 * and a rollback of a label whose folder is gone refused rather than undone by its own crawl.
 * Real SFTP server (OpenSSH client), download host, web app and CLI on one storage; SQLite and
 * PostgreSQL.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { localStorage } from '../../../src/infra/storage-local.js';
import { crawlsRepository } from '../../../src/publishing/crawler/repository.js';
import { crawlerService } from '../../../src/publishing/crawler/service.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { productFilesReader } from '../../../src/publishing/files/reader.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { releasesRepository } from '../../../src/publishing/releases/repository.js';
import { releasesService } from '../../../src/publishing/releases/service.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';
import { needsTool } from '../../helpers/tools.js';
import { generateP2Site, type P2Site } from '../downloads/p2site.js';
import { fetchBytes, openSshSftp, run, type Stack, startStack } from '../sftp/stack.js';

async function api(base: string, token: string, method: string, url: string, body?: unknown) {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: answers are read field by field and asserted
  return { status: res.status, json: (await res.json()) as Record<string, any> };
}

for (const dialect of dialects()) {
  describe(`what a label serves around its releases (${dialect.name})`, needsTool('sshpass'), () => {
    let db: { url: string; drop(): Promise<void> };
    let stack: Stack;
    let web: RunningPublishing;
    let work: string;
    let env: NodeJS.ProcessEnv;
    const pier = (...args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        // Asynchronous: the download host the CLI crawls runs in this process.
        const child = spawn(process.execPath, ['bin/pier.js', ...args], { env });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c) => (stdout += c));
        child.stderr.on('data', (c) => (stderr += c));
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });

    before(async () => {
      db = await dialect.create();
      stack = await startStack(db.url);
      // The SFTP address the web part names in reports is the stack's real one; no automatic crawl.
      const shared = { PIER_DOWNLOAD_URL: stack.downloads.url, PIER_STORAGE_DIR: stack.storageDir, PIER_SFTP_HOST: '127.0.0.1', PIER_SFTP_PORT: String(stack.sftp.port) };
      web = await startPublishing(db.url, {}, { ...shared, PIER_CRAWL_SETTLE_SECONDS: '0' });
      env = { ...process.env, ...shared, PIER_DATA_DIR: stack.dataDir, PIER_DATABASE_URL: db.url, PIER_LOG_LEVEL: 'silent' };
      work = tempDir('pier-serving-');
    });
    after(async () => {
      await web.close();
      await stack.close();
      await db.drop();
      fs.rmSync(work, { recursive: true, force: true });
    });

    /** A site whose first feature jar is cut short: P2 would refuse its checksum, so its crawl refuses the release. */
    async function brokenSite(name: string): Promise<{ site: P2Site; feature: string; cut: Buffer }> {
      const site = await generateP2Site(path.join(work, name));
      const feature = fs.readdirSync(path.join(site.dir, 'features'))[0]!;
      const cut = fs.readFileSync(path.join(site.dir, 'features', feature)).subarray(0, 100);
      fs.writeFileSync(path.join(site.dir, 'features', feature), cut);
      return { site, feature, cut };
    }

    test('a first upload serves nothing until released; a refused first release says so everywhere, with addresses the vendor can open', async () => {
      const creds = await stack.register('first-nodes');
      const label = `${stack.downloads.url}/first-nodes/5.4`;
      const { site, feature, cut } = await brokenSite('first');
      const put = await openSshSftp(stack.sftp.port, creds.sftp, ['mkdir /update-site/5.4', `put -r ${site.dir}/* /update-site/5.4/`]);
      assert.equal(put.code, 0, put.stderr);

      // Uploaded, not released: users get nothing, however complete the folder looks.
      for (const p of ['/content.xml.xz', '/p2.index', '/compositeContent.xml', '/', '']) assert.equal((await fetchBytes(`${label}${p}`)).status, 404, p);
      assert.equal((await fetchBytes(`${label}@1/content.xml.xz`)).status, 404);

      // The release call: refused, saying there is no release, naming the upload folder over SFTP.
      const refused = await api(web.url, creds.editToken, 'POST', '/api/products/first-nodes/labels/5.4/release');
      assert.equal(refused.status, 422, JSON.stringify(refused.json));
      assert.equal(refused.json.code, 'release_refused');
      assert.match(refused.json.detail, new RegExp(`the label has no release yet: users get 404 Not Found from ${label}/`));
      assert.doesNotMatch(refused.json.detail, /current release stays/);
      const folder = `sftp://first-nodes@127.0.0.1:${stack.sftp.port}/update-site/5.4/`;
      const fields = (refused.json.errors as { field: string }[]).map((e) => e.field);
      assert.ok(fields.length > 0 && fields.every((f) => f.startsWith(folder)), JSON.stringify(fields));
      assert.ok(fields.every((f) => !f.includes('5.4@')), 'no release or copy address, none of which answers');
      // The address opens with an SFTP client: the cut jar, as uploaded.
      const cutField = fields.find((f) => f.endsWith(`/features/${feature}`));
      assert.ok(cutField, JSON.stringify(fields));
      const got = path.join(work, 'got.jar');
      const fetched = await run('sshpass', ['-e', 'sftp', '-oStrictHostKeyChecking=no', '-oUserKnownHostsFile=/dev/null', '-oLogLevel=ERROR', '-oPreferredAuthentications=password', cutField, got], {
        env: { SSHPASS: creds.sftp.password },
      });
      assert.equal(fetched.code, 0, fetched.stderr);
      assert.ok(fs.readFileSync(got).equals(cut));
      assert.equal((await fetchBytes(`${label}/content.xml.xz`)).status, 404, 'still nothing served');
      assert.equal((await fetchBytes(`${label}@1/content.xml.xz`)).status, 404, 'the refused copy is never at a release address');

      // The crawl report and the labels list say the same.
      const report = await api(web.url, creds.editToken, 'GET', '/api/products/first-nodes/crawl');
      const crawl = report.json.labels.find((l: { label: string }) => l.label === '5.4');
      assert.deepEqual({ outcome: crawl.release.outcome, number: crawl.release.number, serving: crawl.release.serving }, { outcome: 'refused', number: 1, serving: null });
      assert.match(crawl.release.message, /^release refused: .*the label has no release yet: users get 404 Not Found/);
      const labels = await api(web.url, creds.editToken, 'GET', '/api/products/first-nodes/labels');
      const listed = labels.json.labels.find((l: { label: string }) => l.label === '5.4');
      assert.equal(listed.current, null);
      assert.deepEqual(listed.releases, []);
      assert.equal(listed.attempt.number, 1);
      assert.equal(listed.attempt.status, 'refused');

      // The product page offers no URL for it and recommends nothing.
      const page = await (await fetch(`${web.url}/product/first-nodes`)).text();
      assert.match(page, /Not released yet/);
      assert.ok(!page.includes(`${label}</code>`) && !page.includes('Recommended'), 'neither the URL nor a recommendation');

      // `pier staff crawl`: says the release was refused and what users get; exits 1.
      const staffCrawl = await pier('staff', 'crawl', 'first-nodes');
      assert.equal(staffCrawl.code, 1, staffCrawl.stderr);
      assert.match(staffCrawl.stdout, /release refused: the crawl of this upload \(copy 2\) found problems that make installs fail, so it was not released; the label has no release yet: users get 404 Not Found from /);
      assert.ok(staffCrawl.stdout.includes(`${folder}features/${feature}`), staffCrawl.stdout);
      const show = await pier('staff', 'show', 'first-nodes');
      assert.match(show.stdout, /5\.4: serving nothing: no release yet \(users get 404\)\n +newest upload: copy 2 of .*, release refused/);

      // Fixed: released, served, offered and recommended.
      const whole = await generateP2Site(path.join(work, 'first-fixed'));
      const fix = await openSshSftp(stack.sftp.port, creds.sftp, [`put ${whole.dir}/features/${feature} /update-site/5.4/features/${feature}`]);
      assert.equal(fix.code, 0, fix.stderr);
      const released = await api(web.url, creds.editToken, 'POST', '/api/products/first-nodes/labels/5.4/release');
      assert.equal(released.status, 200, JSON.stringify(released.json));
      assert.equal(released.json.release.number, 3);
      assert.equal(released.json.crawl.release.outcome, 'released');
      assert.equal(released.json.crawl.release.message, `released as release 3; users get release 3 from ${label}/`);
      assert.ok((await fetchBytes(`${label}@3/features/${feature}`)).body.equals(fs.readFileSync(path.join(whole.dir, 'features', feature))));
      assert.equal((await fetchBytes(`${label}/p2.index`)).status, 200);
      const after = await (await fetch(`${web.url}/product/first-nodes`)).text();
      assert.ok(after.includes(`${label}</code>`) && after.includes('Recommended') && !after.includes('Not released yet'));

      // A later refused upload: users keep release 3, and the 422 says so.
      const { site: again } = await brokenSite('first-again');
      const broken = await openSshSftp(stack.sftp.port, creds.sftp, [`put ${again.dir}/features/${feature} /update-site/5.4/features/${feature}`]);
      assert.equal(broken.code, 0, broken.stderr);
      const kept = await api(web.url, creds.editToken, 'POST', '/api/products/first-nodes/labels/5.4/release');
      assert.equal(kept.status, 422);
      assert.match(kept.json.detail, new RegExp(`; users get release 3 from ${label}/$`));
      assert.equal((await fetchBytes(`${label}@4/content.xml.xz`)).status, 404);
    });

    test('a copy is never served at its release address while it is crawled; only the crawl reads it, at its own address', async () => {
      const creds = await stack.register('copy-nodes');
      const site = await generateP2Site(path.join(work, 'copy'));
      const put = await openSshSftp(stack.sftp.port, creds.sftp, ['mkdir /update-site/5.4', `put -r ${site.dir}/* /update-site/5.4/`]);
      assert.equal(put.code, 0, put.stderr);
      // A crawl through a proxy of the download host: for every file the crawl reads from a copy,
      // the same file at the copy's release address is asked of the real host at that moment.
      const seen: { path: string; status: number; atRelease: number }[] = [];
      const proxy = http.createServer((req, res) => {
        void (async () => {
          const copy = /^\/copy-nodes\/5\.4@([0-9]+)~[^/]+(\/.*)$/.exec(req.url ?? '');
          const atRelease = copy ? (await fetchBytes(`${stack.downloads.url}/copy-nodes/5.4@${copy[1]}${copy[2]}`)).status : 0;
          const real = await fetchBytes(`${stack.downloads.url}${req.url}`);
          seen.push({ path: req.url ?? '', status: real.status, atRelease });
          res.writeHead(real.status, { 'content-type': real.headers.get('content-type') ?? 'application/octet-stream' });
          res.end(real.body);
        })();
      });
      await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
      const database = await openPublishingDatabase(db.url);
      const releases = releasesService({ storage: localStorage(stack.storageDir), repo: releasesRepository(database.db), keep: 3 });
      const crawler = crawlerService({
        crawls: crawlsRepository(database.db, database.dialect),
        products: productsRepository(database.db, database.dialect),
        files: productFilesReader(filesRepository(database.db)),
        releases,
        downloadUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      });
      try {
        const done = await crawler.release('copy-nodes', '5.4', { kind: 'vendor' });
        assert.equal(done.released, true, JSON.stringify(done.crawl));
        const fromCopy = seen.filter((s) => s.atRelease !== 0);
        assert.ok(fromCopy.some((s) => s.path.endsWith('/content.xml.xz') && s.status === 200), JSON.stringify(seen));
        assert.deepEqual(
          fromCopy.filter((s) => s.atRelease !== 404),
          [],
          'while crawled, the copy is not at <label>@1/',
        );
        // Accepted: at its release address now; its crawl address answers no more.
        const copyPath = fromCopy[0]!.path;
        assert.equal((await fetchBytes(`${stack.downloads.url}/copy-nodes/5.4@1/content.xml.xz`)).status, 200);
        assert.equal((await fetchBytes(`${stack.downloads.url}${copyPath}`)).status, 404);
        // A made-up copy address answers nothing either.
        assert.equal((await fetchBytes(`${stack.downloads.url}/copy-nodes/5.4@1~AAAAAAAAAAAAAAAAAAAAAA/content.xml.xz`)).status, 404);

        // A copy that is refused: never at its release address, before or after.
        const c = await releases.candidate('copy-nodes', '5.4', 999);
        assert.equal((await fetchBytes(`${stack.downloads.url}/copy-nodes/5.4@${c.number}/content.xml.xz`)).status, 404);
        assert.equal((await fetchBytes(`${stack.downloads.url}/copy-nodes/5.4@${c.number}~${c.secret}/content.xml.xz`)).status, 200);
        await releases.discard(c);
        assert.equal((await fetchBytes(`${stack.downloads.url}/copy-nodes/5.4@${c.number}/content.xml.xz`)).status, 404);
        assert.equal((await fetchBytes(`${stack.downloads.url}/copy-nodes/5.4@${c.number}~${c.secret}/content.xml.xz`)).status, 404);
      } finally {
        await crawler.close();
        await database.close();
        proxy.close();
      }
    });

    test('a rollback of a label whose folder was removed is refused, and the label stays as its removal left it', async () => {
      const creds = await stack.register('gone-nodes');
      const label = `${stack.downloads.url}/gone-nodes/5.4`;
      const v1 = await generateP2Site(path.join(work, 'gone-v1'), { version: '1.0.0.v1' });
      const v2 = await generateP2Site(path.join(work, 'gone-v2'), { version: '2.0.0.v2' });
      const release = async () => {
        const r = await api(web.url, creds.editToken, 'POST', '/api/products/gone-nodes/labels/5.4/release');
        assert.equal(r.status, 200, JSON.stringify(r.json));
      };
      assert.equal((await openSshSftp(stack.sftp.port, creds.sftp, ['mkdir /update-site/5.4', `put -r ${v1.dir}/* /update-site/5.4/`])).code, 0);
      await release();
      assert.equal((await openSshSftp(stack.sftp.port, creds.sftp, [`put -r ${v2.dir}/* /update-site/5.4/`])).code, 0);
      await release();
      const content = (dir: string) => fs.readFileSync(path.join(dir, 'content.xml.xz'));

      // The folder moved away, and the removal crawled: the label is withdrawn.
      assert.equal((await openSshSftp(stack.sftp.port, creds.sftp, ['rename /update-site/5.4 /update-site/old'])).code, 0);
      await web.service.crawler.crawl('gone-nodes');
      assert.equal((await fetchBytes(`${label}/content.xml.xz`)).status, 404);

      const back = await api(web.url, creds.editToken, 'POST', '/api/products/gone-nodes/labels/5.4/rollback', {});
      assert.equal(back.status, 409, JSON.stringify(back.json));
      assert.equal(back.json.code, 'label_removed');
      assert.match(back.json.detail, /has no update-site\/5\.4\/ folder: a removed folder withdraws the label, so it is not rolled back\. Upload the label's folder again to release it; its kept releases \(2, 1\) can be rolled back to once it is there/);
      const staff = await pier('staff', 'rollback', 'gone-nodes', '5.4', '--to', '1');
      assert.notEqual(staff.code, 0);
      assert.match(staff.stderr, /label_removed|a removed folder withdraws the label/);
      await web.service.crawler.crawl('gone-nodes');
      assert.equal((await fetchBytes(`${label}/content.xml.xz`)).status, 404, 'nothing moved');
      const listed = (await api(web.url, creds.editToken, 'GET', '/api/products/gone-nodes/labels')).json.labels.find((l: { label: string }) => l.label === '5.4');
      assert.equal(listed.current, null);

      // The folder back: released again, and a rollback now works and stays through later crawls.
      assert.equal((await openSshSftp(stack.sftp.port, creds.sftp, ['rename /update-site/old /update-site/5.4'])).code, 0);
      await release();
      const rolled = await api(web.url, creds.editToken, 'POST', '/api/products/gone-nodes/labels/5.4/rollback', { release: 1 });
      assert.equal(rolled.status, 200, JSON.stringify(rolled.json));
      assert.equal(rolled.json.current, 1);
      await web.service.crawler.crawl('gone-nodes');
      assert.ok((await fetchBytes(`${label}@1/content.xml.xz`)).body.equals(content(v1.dir)));
      assert.equal((await fetchBytes(`${label}/compositeContent.xml`)).body.toString().includes('5.4@1/'), true, 'release 1 is still the one served');
    });
  });
}

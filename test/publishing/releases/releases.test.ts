/**
 * Atomic label releases (docs/vendors.md#releases-a-label-changes-all-at-once): what downloaders
 * get changes only when a release is made, all at once; a broken upload never replaces a working
 * release; rollback; pruning; the composite documents P2 clients are sent through. Real SFTP server
 * (OpenSSH client), download host and web app on one storage, SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { dialects, tempDir } from '../../helpers/db.js';
import { freePort } from '../../helpers/net.js';
import { startPublishing } from '../../helpers/publishing.js';
import { generateP2Site } from '../downloads/p2site.js';
import { fetchBytes, openSshSftp, startStack } from '../sftp/stack.js';

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
  test(`label releases: served all at once, broken uploads refused, rollback, pruning (${dialect.name})`, { timeout: 240_000 }, async () => {
    const db = await dialect.create();
    const port = await freePort();
    const downloadUrl = `http://127.0.0.1:${port}`;
    const env = { PIER_DOWNLOAD_PORT: String(port), PIER_DOWNLOAD_URL: downloadUrl, PIER_CRAWL_SETTLE_SECONDS: '0', PIER_RELEASES_KEPT: '2' };
    const stack = await startStack(db.url, { env });
    const web = await startPublishing(db.url, {}, { ...env, PIER_STORAGE_DIR: stack.storageDir });
    const work = tempDir('pier-releases-');
    try {
      const creds = await stack.register('csv-nodes');
      const v1 = await generateP2Site(path.join(work, 'v1'), { version: '1.0.0.v1' });
      const v2 = await generateP2Site(path.join(work, 'v2'), { version: '2.0.0.v2' });
      const jar = (v: string) => `plugins/org.example.csv_${v}.jar`;
      const label = `${downloadUrl}/csv-nodes/5.4`;
      const bytes = (dir: string, p: string) => fs.readFileSync(path.join(dir, p));
      const put = async (dir: string) => {
        const r = await openSshSftp(stack.sftp.port, creds.sftp, [`put -r ${dir}/* /update-site/5.4/`]);
        assert.equal(r.code, 0, r.stderr);
      };
      const mkdir = await openSshSftp(stack.sftp.port, creds.sftp, ['mkdir /update-site/5.4']);
      assert.equal(mkdir.code, 0, mkdir.stderr);

      // Before its first release a label serves nothing (docs/vendors.md "Releases").
      await put(v1.dir);
      assert.equal((await fetchBytes(`${label}/content.xml`)).status, 404);

      const first = await api(web.url, creds.editToken, 'POST', '/api/products/csv-nodes/labels/5.4/release');
      assert.equal(first.status, 200, JSON.stringify(first.json));
      assert.equal(first.json.release.number, 1);
      assert.equal(first.json.unchanged, false);
      assert.equal(first.json.crawl.summary.fatal, false);
      assert.equal(first.json.release.releasedBy.kind, 'vendor');

      // P2 clients are sent to the release's own address.
      const index = await fetchBytes(`${label}/p2.index`);
      assert.equal(index.status, 200);
      assert.match(index.body.toString(), /metadata\.repository\.factory\.order=compositeContent\.xml,\\!/);
      const composite = (await fetchBytes(`${label}/compositeContent.xml`)).body.toString();
      assert.match(composite, new RegExp(`<child location='${downloadUrl}/csv-nodes/5\\.4@1/'/>`));
      assert.ok((await fetchBytes(`${label}@1/content.xml`)).body.equals(bytes(v1.dir, 'content.xml')));

      // A new upload is invisible until it is released, then visible whole.
      await put(v2.dir);
      assert.ok((await fetchBytes(`${label}/content.xml`)).body.equals(bytes(v1.dir, 'content.xml')), 'the upload in progress is not served');
      assert.equal((await fetchBytes(`${label}/${jar('2.0.0.v2')}`)).status, 404, 'nor are its new jars');
      const second = await api(web.url, creds.editToken, 'POST', '/api/products/csv-nodes/labels/5.4/release');
      assert.equal(second.status, 200, JSON.stringify(second.json));
      assert.equal(second.json.release.number, 2);
      assert.ok((await fetchBytes(`${label}/content.xml`)).body.equals(bytes(v2.dir, 'content.xml')));
      assert.ok((await fetchBytes(`${label}/${jar('2.0.0.v2')}`)).body.equals(bytes(v2.dir, jar('2.0.0.v2'))));
      // The previous release's jars are still found (a client that read its metadata a moment ago).
      assert.ok((await fetchBytes(`${label}/${jar('1.0.0.v1')}`)).body.equals(bytes(v1.dir, jar('1.0.0.v1'))));
      const artifacts = (await fetchBytes(`${label}/compositeArtifacts.xml`)).body.toString();
      assert.ok(artifacts.indexOf('5.4@2/') < artifacts.indexOf('5.4@1/') && artifacts.includes('5.4@1/'), artifacts);

      // Nothing changed: nothing new is released.
      const again = await api(web.url, creds.editToken, 'POST', '/api/products/csv-nodes/labels/5.4/release');
      assert.equal(again.status, 200);
      assert.equal(again.json.unchanged, true);
      assert.equal(again.json.release.number, 2);

      // A broken upload (a jar its metadata names is gone) is refused; release 2 stays served.
      const rm = await openSshSftp(stack.sftp.port, creds.sftp, [`rm /update-site/5.4/${jar('2.0.0.v2')}`]);
      assert.equal(rm.code, 0, rm.stderr);
      const broken = await api(web.url, creds.editToken, 'POST', '/api/products/csv-nodes/labels/5.4/release');
      assert.equal(broken.status, 422, JSON.stringify(broken.json));
      assert.equal(broken.json.code, 'release_refused');
      assert.ok(broken.json.errors.some((e: { message: string }) => /artifact/i.test(e.message)), JSON.stringify(broken.json.errors));
      assert.ok((await fetchBytes(`${label}/${jar('2.0.0.v2')}`)).body.equals(bytes(v2.dir, jar('2.0.0.v2'))), 'release 2 is still served whole');
      assert.equal(fs.existsSync(path.join(stack.storageDir, 'csv-nodes/releases/5.4/3')), false, 'the refused copy is gone');

      // Rollback: release 1 is served again (and its nodes crawled).
      const back = await api(web.url, creds.editToken, 'POST', '/api/products/csv-nodes/labels/5.4/rollback', {});
      assert.equal(back.status, 200, JSON.stringify(back.json));
      assert.deepEqual(back.json, { label: '5.4', current: 1, previous: 2 });
      assert.ok((await fetchBytes(`${label}/content.xml`)).body.equals(bytes(v1.dir, 'content.xml')));
      const none = await api(web.url, creds.editToken, 'POST', '/api/products/csv-nodes/labels/5.4/rollback', {});
      assert.equal(none.status, 409, 'nothing before release 1');
      const forward = await api(web.url, creds.editToken, 'POST', '/api/products/csv-nodes/labels/5.4/rollback', { release: 2 });
      assert.equal(forward.json.current, 2);

      // Fix the upload and release: release 4 (3 was refused); with 2 kept, release 1 is pruned.
      await put(v2.dir);
      const fourth = await api(web.url, creds.editToken, 'POST', '/api/products/csv-nodes/labels/5.4/release');
      assert.equal(fourth.status, 200, JSON.stringify(fourth.json));
      assert.equal(fourth.json.release.number, 4, 'the refused copy kept its number: @3 never names another copy');
      assert.equal((await fetchBytes(`${label}@3/content.xml`)).status, 404);
      const listed = await api(web.url, creds.editToken, 'GET', '/api/products/csv-nodes/labels');
      assert.equal(listed.status, 200);
      const l = listed.json.labels.find((x: { label: string }) => x.label === '5.4');
      assert.equal(l.current, fourth.json.release.number);
      assert.deepEqual(
        l.releases.map((r: { number: number }) => r.number),
        [fourth.json.release.number, 2],
      );
      assert.equal((await fetchBytes(`${label}@1/content.xml`)).status, 404, 'release 1 was pruned');

      // Another product's token, a label that is no label, a label never uploaded.
      const other = await stack.register('other-nodes');
      assert.equal((await api(web.url, other.editToken, 'POST', '/api/products/csv-nodes/labels/5.4/release')).status, 401);
      assert.equal((await api(web.url, creds.editToken, 'POST', '/api/products/csv-nodes/labels/..%2F5.4/release')).status, 404);
      assert.equal((await api(web.url, creds.editToken, 'POST', '/api/products/csv-nodes/labels/6.0/release')).status, 404);

      // A feature jar of another size than its metadata says (P2 would refuse its checksum): refused too.
      const feature = fs.readdirSync(path.join(v2.dir, 'features'))[0]!;
      const short = path.join(work, feature);
      fs.writeFileSync(short, bytes(v2.dir, `features/${feature}`).subarray(0, 100));
      const cut = await openSshSftp(stack.sftp.port, creds.sftp, [`put ${short} /update-site/5.4/features/${feature}`]);
      assert.equal(cut.code, 0, cut.stderr);
      const wrongSize = await api(web.url, creds.editToken, 'POST', '/api/products/csv-nodes/labels/5.4/release');
      assert.equal(wrongSize.status, 422, JSON.stringify(wrongSize.json));
      assert.ok(wrongSize.json.errors.some((e: { message: string }) => /checksum_mismatch: .*has 100 bytes/.test(e.message)), JSON.stringify(wrongSize.json.errors));
      assert.ok((await fetchBytes(`${label}/features/${feature}`)).body.equals(bytes(v2.dir, `features/${feature}`)), 'the current release keeps the whole jar');

      // The label's folder removed: once crawled, downloaders get nothing; releases stay for staff.
      const rmdir = await openSshSftp(stack.sftp.port, creds.sftp, [`rename /update-site/5.4 /update-site/gone`]);
      assert.equal(rmdir.code, 0, rmdir.stderr);
      await web.service.crawler.crawl('csv-nodes');
      assert.equal((await fetchBytes(`${label}/content.xml`)).status, 404);
    } finally {
      await web.close();
      await stack.close();
      await db.drop();
      fs.rmSync(work, { recursive: true, force: true });
    }
  });
}

/**
 * Label releases attacked as a hostile HTTP client or vendor would: release addresses spelled
 * every odd way at the download host, and odd labels, numbers and bodies at the release API.
 * Every answer is a clear 4xx problem (never a 5xx), nothing outside the product's releases
 * is reached, and the label's current release stays served. SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';
import { dialects, tempDir } from '../../helpers/db.js';
import { freePort } from '../../helpers/net.js';
import { startPublishing } from '../../helpers/publishing.js';
import { generateP2Site } from '../downloads/p2site.js';
import { fetchBytes, openSshSftp, startStack } from '../sftp/stack.js';

/** A request with the path exactly as written (fetch would resolve `..` and re-encode). */
function raw(port: number, target: string, method = 'GET'): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: target, method }, (res) => {
      let body = '';
      res.setEncoding('latin1');
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function api(base: string, token: string, method: string, url: string, body?: string, type = 'application/json') {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': type }) },
    body,
  });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

for (const dialect of dialects()) {
  test(`hostile release addresses and release API inputs get 4xx problems, never a 5xx (${dialect.name})`, { timeout: 240_000 }, async () => {
    const db = await dialect.create();
    const port = await freePort();
    const downloadUrl = `http://127.0.0.1:${port}`;
    const env = { PIER_DOWNLOAD_PORT: String(port), PIER_DOWNLOAD_URL: downloadUrl, PIER_CRAWL_SETTLE_SECONDS: '0', PIER_RELEASES_KEPT: '2' };
    const stack = await startStack(db.url, { env });
    const web = await startPublishing(db.url, {}, { ...env, PIER_STORAGE_DIR: stack.storageDir });
    const work = tempDir('pier-releases-hostile-');
    try {
      const creds = await stack.register('csv-nodes');
      const other = await stack.register('other-nodes');
      const v1 = await generateP2Site(path.join(work, 'v1'), { version: '1.0.0.v1' });
      const content = fs.readFileSync(path.join(v1.dir, 'content.xml'));
      // Labels that look like release numbers or pointer names are labels like any other.
      for (const label of ['5.4', '7', 'current']) {
        const up = await openSshSftp(stack.sftp.port, creds.sftp, [`mkdir /update-site/${label}`, `put -r ${v1.dir}/* /update-site/${label}/`]);
        assert.equal(up.code, 0, up.stderr);
        const r = await api(web.url, creds.editToken, 'POST', `/api/products/csv-nodes/labels/${label}/release`);
        assert.equal(r.status, 200, r.text);
      }
      const up = await openSshSftp(stack.sftp.port, other.sftp, ['mkdir /update-site/5.4', `put -r ${v1.dir}/* /update-site/5.4/`]);
      assert.equal(up.code, 0, up.stderr);
      assert.equal((await api(web.url, other.editToken, 'POST', '/api/products/other-nodes/labels/5.4/release')).status, 200);

      for (const good of ['/csv-nodes/5.4@1/content.xml', '/csv-nodes/5.4%401/content.xml', '/csv-nodes/7@1/content.xml', '/csv-nodes/current@1/content.xml', '/csv-nodes/7/content.xml']) {
        const r = await raw(port, good);
        assert.equal(r.status, 200, good);
        assert.equal(Buffer.from(r.body, 'latin1').compare(content), 0, good);
      }
      const hostile = [
        '/csv-nodes/5.4@0/content.xml',
        '/csv-nodes/5.4@01/content.xml',
        '/csv-nodes/5.4@99999999999/content.xml',
        '/csv-nodes/5.4@1000000000/content.xml',
        '/csv-nodes/5.4@-1/content.xml',
        '/csv-nodes/5.4@1e0/content.xml',
        '/csv-nodes/5.4@%EF%BC%91/content.xml',
        '/csv-nodes/5.4@current/content.xml',
        '/csv-nodes/5.4@2/content.xml',
        '/csv-nodes/5.4@1@1/content.xml',
        '/csv-nodes/..@1/content.xml',
        '/csv-nodes/.@1/content.xml',
        '/csv-nodes/@1/content.xml',
        '/csv-nodes/%40/content.xml',
        '/csv-nodes/%2E%2E@1/content.xml',
        '/csv-nodes/5.4@1%2Fcontent.xml',
        '/csv-nodes/5.4@1%2F..%2F..%2F..%2Fother-nodes%2Freleases%2F5.4%2F1%2Fcontent.xml',
        '/csv-nodes/5.4@1/..%2F..%2F..%2Fother-nodes%2Fupdate-site%2F5.4%2Fcontent.xml',
        '/csv-nodes/5.4@1/../../other-nodes/5.4@1/content.xml',
        '/csv-nodes/5.4@1/%2e%2e/%2e%2e/other-nodes/5.4@1/content.xml',
        '/csv-nodes/5.4@1%5C..%5Ccontent.xml',
        '/csv-nodes/5.4@1%00/content.xml',
        '/csv-nodes/5.4/current',
        '/csv-nodes/5.4/current/content.xml',
        '/csv-nodes/releases/5.4/current/content.xml',
        '/csv-nodes/releases/5.4/1/content.xml',
        '/csv-nodes/.pier-tmp-0123456789abcdef_x@1/content.xml',
        '/csv-nodes/5.4@1/.pier-tmp-0123456789abcdef_x',
        `/csv-nodes/${'a'.repeat(250)}@1/content.xml`,
        `/csv-nodes/5.4@1/${'a/'.repeat(600)}x`,
        '/csv-nodes/5.4@1/p2.index/',
        '/csv-nodes/5.4/p2.index/',
        '/csv-nodes/5.4/compositeContent.xml/x',
        '/other-nodes/5.4@%31/../../csv-nodes/5.4@1/content.xml',
        '/assets/csv-nodes/../releases/5.4/1/content.xml',
        '/csv-nodes/5.4%2540/content.xml',
        '/csv-nodes/5.4@%E0%A4%A/content.xml',
      ];
      for (const target of hostile) {
        for (const method of ['GET', 'HEAD']) {
          const r = await raw(port, target, method);
          assert.ok(r.status >= 400 && r.status < 500, `${method} ${target}: ${r.status} ${r.body}`);
          if (method === 'GET') assert.match(r.type, /^application\/problem\+json/, `${target}: ${r.type}`);
        }
      }
      // Still served whole after all that.
      assert.ok((await fetchBytes(`${downloadUrl}/csv-nodes/5.4/content.xml`)).body.equals(content));

      // The release API: odd labels, numbers and bodies.
      const base = '/api/products/csv-nodes/labels';
      const cases: [string, string, string | undefined, string?][] = [
        ['POST', `${base}/5.4@1/release`, undefined],
        ['POST', `${base}/..%2F5.4/release`, undefined],
        ['POST', `${base}/%2E%2E/release`, undefined],
        ['POST', `${base}/.pier-tmp-x/release`, undefined],
        ['POST', `${base}/${'a'.repeat(201)}/release`, undefined],
        ['POST', `${base}/${'a'.repeat(199)}/release`, undefined],
        ['POST', `${base}/5.4%00/release`, undefined],
        ['POST', `${base}/never/release`, undefined],
        ['POST', `${base}/5.4/rollback`, '{"release":0}'],
        ['POST', `${base}/5.4/rollback`, '{"release":"1"}'],
        ['POST', `${base}/5.4/rollback`, '{"release":1.5}'],
        ['POST', `${base}/5.4/rollback`, '{"release":1e12}'],
        ['POST', `${base}/5.4/rollback`, '{"release":99}'],
        ['POST', `${base}/5.4/rollback`, '{"release":null}'],
        ['POST', `${base}/5.4/rollback`, '{"release":1,"extra":true}'],
        ['POST', `${base}/5.4/rollback`, '[1]'],
        ['POST', `${base}/5.4/rollback`, '{'],
        ['POST', `${base}/5.4/rollback`, 'release=1', 'application/x-www-form-urlencoded'],
        ['POST', `${base}/5.4/rollback`, '{}'],
        ['POST', `${base}/never/rollback`, '{}'],
        ['POST', `${base}/7@1/rollback`, '{}'],
        ['POST', '/api/products/no-such-product/labels/5.4/release', undefined],
        ['POST', '/api/products/..%2Fcsv-nodes/labels/5.4/release', undefined],
        ['GET', '/api/products/no-such-product/labels', undefined],
      ];
      for (const [method, url, body, type] of cases) {
        const r = await api(web.url, creds.editToken, method, url, body, type);
        assert.ok(r.status >= 400 && r.status < 500, `${method} ${url} ${body ?? ''}: ${r.status} ${r.text}`);
        assert.match(r.type, /^application\/problem\+json/, `${method} ${url} ${body ?? ''}: ${r.type}`);
      }
      // Another product's edit token, on each route.
      for (const [method, url] of [
        ['POST', `${base}/5.4/release`],
        ['POST', `${base}/5.4/rollback`],
        ['GET', base],
      ] as const) {
        const r = await api(web.url, other.editToken, method, url, method === 'GET' ? undefined : '{}');
        assert.equal(r.status, 401, `${method} ${url}: ${r.text}`);
      }
      assert.ok((await fetchBytes(`${downloadUrl}/csv-nodes/5.4/content.xml`)).body.equals(content));
      const listed = JSON.parse((await api(web.url, creds.editToken, 'GET', base)).text) as { labels: { label: string; current: number }[] };
      assert.deepEqual(listed.labels.map((l) => [l.label, l.current]).sort(), [['5.4', 1], ['7', 1], ['current', 1]]);

      // The download host's fast path and file cache never serve a release the pointer left,
      // also when another process (pier staff rollback, a second instance) moved it: this
      // process's change count does not move then.
      const v2 = await generateP2Site(path.join(work, 'v2'), { version: '2.0.0.v2' });
      const content2 = fs.readFileSync(path.join(v2.dir, 'content.xml'));
      const up2 = await openSshSftp(stack.sftp.port, creds.sftp, [`put -r ${v2.dir}/* /update-site/5.4/`]);
      assert.equal(up2.code, 0, up2.stderr);
      assert.equal((await api(web.url, creds.editToken, 'POST', `${base}/5.4/release`)).status, 200);
      const labelUrl = `${downloadUrl}/csv-nodes/5.4/content.xml`;
      for (let i = 0; i < 5; i++) assert.ok((await fetchBytes(labelUrl)).body.equals(content2), 'release 2, warm');
      const folder = path.join(stack.storageDir, 'csv-nodes/releases/5.4');
      for (const [to, want] of [
        ['1', content],
        ['2', content2],
        ['1', content],
      ] as const) {
        fs.symlinkSync(to, path.join(folder, 'elsewhere'));
        fs.renameSync(path.join(folder, 'elsewhere'), path.join(folder, 'current'));
        // A pointer read serves requests arriving within FRESH_MS (1 ms) after it
        // (downloads/releases.ts); a keep-alive request on loopback can come sooner than that.
        await new Promise((r) => setTimeout(r, 5));
        assert.ok((await fetchBytes(labelUrl)).body.equals(want), `pointer moved to ${to} elsewhere`);
      }
    } finally {
      await web.close();
      await stack.close();
      await db.drop();
      fs.rmSync(work, { recursive: true, force: true });
    }
  });
}

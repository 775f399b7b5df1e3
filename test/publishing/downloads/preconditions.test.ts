// Conditional requests on the download host (RFC 9110 §13): If-Match and If-Unmodified-Since
// refuse with 412, If-Range and If-Modified-Since never let a replaced file pass for the old
// one. Files are replaced as an upload does (a new file renamed over the old one).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { localStorage } from '../../../src/infra/storage-local.js';
import { evaluatePreconditions } from '../../../src/publishing/downloads/http-file.js';
import { createDownloadServer, type DownloadServer } from '../../../src/publishing/downloads/server.js';
import { tempDir } from '../../helpers/db.js';
import { makeCurrent } from './released.js';

const silent = { info() {}, error() {} };

function get(base: string, p: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${p}`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

// Both kinds of file: one small enough to be kept in memory, one streamed from disk.
const SIZES = { small: 1000, large: 300_000 };

describe('download host preconditions', () => {
  let root: string;
  let server: DownloadServer;
  let base: string;
  let seq = 0;

  /** Puts `bytes` in place at `rel` as an upload does, optionally keeping a given modification time. */
  function upload(rel: string, bytes: Buffer, mtime?: Date): void {
    const p = path.join(root, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    const temp = path.join(path.dirname(p), `.pier-tmp-${seq++}`);
    fs.writeFileSync(temp, bytes);
    if (mtime) fs.utimesSync(temp, mtime, mtime);
    fs.renameSync(temp, p);
  }
  const version = (n: number, size: number) => Buffer.alloc(size, n);

  before(async () => {
    root = tempDir('pier-dl-pre-');
    makeCurrent(root, 'csv-nodes', '5.4');
    server = createDownloadServer({ storage: localStorage(root), log: silent, freshMs: 0 });
    base = (await server.listen(0, '127.0.0.1')).url;
  });
  after(async () => {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  for (const [kind, size] of Object.entries(SIZES)) {
    test(`${kind} file: If-Match and If-Unmodified-Since answer 412 when they fail, and pass when they hold`, async () => {
      const rel = `csv-nodes/releases/5.4/1/plugins/${kind}-match.jar`;
      const url = `/csv-nodes/5.4/plugins/${kind}-match.jar`;
      upload(rel, version(1, size));
      const first = await get(base, url);
      const etag = String(first.headers.etag);
      const lastModified = String(first.headers['last-modified']);
      assert.equal((await get(base, url, { 'if-match': etag })).status, 200);
      assert.equal((await get(base, url, { 'if-match': `"other", ${etag}` })).status, 200);
      assert.equal((await get(base, url, { 'if-match': '*' })).status, 200);
      const partial = await get(base, url, { 'if-match': etag, range: 'bytes=0-9' });
      assert.equal(partial.status, 206);
      assert.equal(partial.body.length, 10);
      assert.equal((await get(base, url, { 'if-match': '"other"' })).status, 412);
      // If-Match uses the strong comparison (RFC 9110 §13.1.1): a weak tag never matches.
      assert.equal((await get(base, url, { 'if-match': `W/${etag}` })).status, 412);
      assert.equal((await get(base, url, { 'if-unmodified-since': lastModified })).status, 200);
      const refused = await get(base, url, { 'if-unmodified-since': 'Thu, 01 Jan 1970 00:00:00 GMT', range: 'bytes=0-9' });
      assert.equal(refused.status, 412);
      assert.equal(refused.headers['content-type'], 'application/problem+json; charset=utf-8');
      assert.equal(JSON.parse(refused.body.toString()).code, 'precondition_failed');
      // An invalid date is ignored (RFC 9110 §13.1.4).
      assert.equal((await get(base, url, { 'if-unmodified-since': 'yesterday-ish' })).status, 200);
      // If-Match is evaluated first; If-Unmodified-Since is then ignored (RFC 9110 §13.2.2).
      assert.equal((await get(base, url, { 'if-match': etag, 'if-unmodified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' })).status, 200);
      // A HEAD is refused as a GET.
      assert.equal((await new Promise<number>((resolve) => http.request(`${base}${url}`, { method: 'HEAD', headers: { 'if-match': '"other"' } }, (r) => resolve(r.statusCode ?? 0)).end())), 412);
    });

    test(`${kind} file: a download resumed after the file was replaced is never stitched from two versions`, async () => {
      const rel = `csv-nodes/releases/5.4/1/plugins/${kind}-resume.jar`;
      const url = `/csv-nodes/5.4/plugins/${kind}-resume.jar`;
      upload(rel, version(1, size));
      const old = await get(base, url);
      const oldEtag = String(old.headers.etag);
      upload(rel, version(2, size));
      // As wget/aria2/browsers resume: the old validator with the range.
      const ifMatch = await get(base, url, { 'if-match': oldEtag, range: 'bytes=10-' });
      assert.equal(ifMatch.status, 412);
      const ifRange = await get(base, url, { 'if-range': oldEtag, range: 'bytes=10-' });
      assert.equal(ifRange.status, 200, 'If-Range with a stale ETag: the whole new file');
      assert.deepEqual(ifRange.body, version(2, size));
      assert.equal(ifRange.headers['content-range'], undefined);
    });

    test(`${kind} file: a future-dated file replaced by a current one is neither 304 nor 206 against the old date`, async () => {
      const rel = `csv-nodes/releases/5.4/1/plugins/${kind}-future.jar`;
      const url = `/csv-nodes/5.4/plugins/${kind}-future.jar`;
      upload(rel, version(1, size), new Date('2031-05-01T00:00:00Z'));
      const old = await get(base, url);
      const oldDate = String(old.headers['last-modified']);
      assert.equal(oldDate, 'Thu, 01 May 2031 00:00:00 GMT');
      assert.equal((await get(base, url, { 'if-modified-since': oldDate })).status, 304, 'unchanged: its own date still revalidates');
      upload(rel, version(2, size));
      const revalidated = await get(base, url, { 'if-modified-since': oldDate });
      assert.equal(revalidated.status, 200, 'the replacement is not the copy the client holds');
      assert.deepEqual(revalidated.body, version(2, size));
      const resumed = await get(base, url, { 'if-unmodified-since': oldDate, range: 'bytes=10-' });
      assert.equal(resumed.status, 412, 'a range of the new file is not the rest of the old one');
      const current = String(revalidated.headers['last-modified']);
      assert.equal((await get(base, url, { 'if-modified-since': current })).status, 304);
    });
  }
});

test('property: a date that is not the file\'s own and lies in the future never revalidates or passes', () => {
  const now = Date.parse('2026-06-01T00:00:00Z');
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 4e12 }), fc.integer({ min: 1, max: 4e9 }), (lastModifiedMs, ahead) => {
      const since = new Date(now + ahead * 1000).toUTCString();
      if (Math.floor(lastModifiedMs / 1000) * 1000 === Date.parse(since)) return;
      assert.equal(evaluatePreconditions({ ifModifiedSince: since }, '"e"', lastModifiedMs, now), 'proceed');
      assert.equal(evaluatePreconditions({ ifUnmodifiedSince: since }, '"e"', lastModifiedMs, now), 'failed');
    }),
  );
});

test('property: If-Match without the current strong tag (or "*") always fails', () => {
  const tag = fc.stringMatching(/^[0-9a-f-]{1,12}$/).map((t) => `"${t}"`);
  fc.assert(
    fc.property(fc.array(fc.oneof(tag, tag.map((t) => `W/${t}`)), { minLength: 1, maxLength: 5 }), tag, (list, etag) => {
      const holds = list.includes(etag);
      const result = evaluatePreconditions({ ifMatch: list.join(', '), ifNoneMatch: etag }, etag, 0, 0);
      assert.equal(result, holds ? 'not-modified' : 'failed');
    }),
  );
});

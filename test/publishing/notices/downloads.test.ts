// A withdrawn label on the real download host: every request under it answers 410
// Gone naming the replacement's update site (GET, HEAD, conditional, Range, the fast path's
// cached file, the archive, a pinned release, the folder), its files stay in storage, and
// removing the notice serves them again. The host reads the notices from the database in the
// background (within about a second), so each step waits for the answer to change.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_LIMITS, loadConfig } from '../../../src/infra/config.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { type RunningDownloads, startDownloads } from '../../../src/publishing/downloads/index.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { filesService } from '../../../src/publishing/files/service.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { releaseAsIs } from '../releases/release-as-is.js';
import { patchProduct } from '../../helpers/publishing.js';
import { type Site, startSite } from '../web/helpers.js';
import { type RawAnswer, raw, request } from '../web/raw-http.js';

const ID = 'gone-tools';
const DOWNLOAD_URL = 'http://dl.pier.test';
const CONTENT = Buffer.from('<?xml version="1.0"?><repository name="4.7"/>');
const FILES: Record<string, Buffer> = {
  'update-site/4.7/content.xml': CONTENT,
  'update-site/4.7/plugins/a.jar': Buffer.alloc(300_000, 7),
  'update-site/4.7.zip': Buffer.from('PK\u0005\u0006'.padEnd(22, '\u0000')),
  'update-site/5.3/content.xml': Buffer.from('<repository name="5.3"/>'),
};

/** Asks until the answer's status starts with `status` (the host refreshes in the background). */
async function until(ask: () => Promise<RawAnswer>, status: string): Promise<RawAnswer> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const a = await ask();
    if (a.status.startsWith(`HTTP/1.1 ${status}`) || Date.now() > deadline) return a;
    await new Promise((r) => setTimeout(r, 50));
  }
}

for (const target of dialects()) {
  describe(`withdrawn labels on the download host on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let site: Site;
    let downloads: RunningDownloads;
    let token: string;
    let storageDir: string;
    const get = (p: string, extra = '') => raw(downloads.url, request('GET', p, extra));
    const head = (p: string, extra = '') => raw(downloads.url, request('HEAD', p, extra));
    const patch = (body: unknown) => patchProduct(site.url, ID, token, body);

    before(async () => {
      db = await target.create();
      const config = loadConfig({ PIER_DATA_DIR: tempDir('pier-gone-'), PIER_DATABASE_URL: db.url, PIER_LOG_LEVEL: 'silent', PIER_DOWNLOAD_URL: DOWNLOAD_URL });
      storageDir = config.publishing.storageDir;
      site = await startSite(db.url);
      token = await site.register(ID, { name: 'Gone Tools' });
      // Uploaded as the SFTP server stores them: in the shared storage, recorded in the database.
      const database = await openPublishingDatabase(db.url);
      const files = filesService({ storage: localStorage(storageDir), repo: filesRepository(database.db), limits: DEFAULT_LIMITS });
      await files.ensureTree(ID);
      for (const [p, data] of Object.entries(FILES)) {
        const parts = p.split('/');
        for (let i = 2; i < parts.length; i++) await files.makeDir(ID, parts.slice(0, i).join('/')).catch(() => {});
        const upload = await files.beginUpload(ID, p);
        await upload.write(data, 0, data.length, 0);
        await upload.commit();
      }
      await releaseAsIs(database.db, storageDir, ID, '4.7', '5.3');
      await database.close();
      downloads = await startDownloads(config, { port: 0 });
    });
    after(async () => {
      await downloads.close();
      await site.close();
      await db.drop();
    });

    test('withdrawn: 410 with the replacement for every request under the label; files kept; undone by removing the notice', async () => {
      // Twice before: the second answer of a small file comes from the fast path's cache.
      const first = await get(`/${ID}/4.7/content.xml`);
      assert.match(first.status, /^HTTP\/1\.1 200/);
      assert.deepEqual((await get(`/${ID}/4.7/content.xml`)).body, CONTENT);
      const etag = first.headers.get('etag')!;
      assert.match((await get(`/${ID}/4.7/plugins/a.jar`)).status, /^HTTP\/1\.1 200/);

      const withdrawn = await patch({ labels: { '4.7': { status: 'withdrawn', message: 'Broken on Windows.', replacement: '5.3' } } });
      assert.equal(withdrawn.status, 200, JSON.stringify(withdrawn.json));

      // The cached small file, as the fast path would answer it.
      const gone = await until(() => get(`/${ID}/4.7/content.xml`), '410');
      assert.match(gone.status, /^HTTP\/1\.1 410/);
      assert.match(gone.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(gone.headers.get('cache-control'), 'no-store');
      const problem = JSON.parse(gone.body.toString()) as Record<string, unknown>;
      assert.equal(problem.status, 410);
      assert.equal(problem.code, 'label_withdrawn');
      assert.equal(problem.replacement, '5.3');
      assert.equal(problem.replacementUrl, `${DOWNLOAD_URL}/${ID}/5.3`);
      assert.match(String(problem.detail), new RegExp(`${DOWNLOAD_URL}/${ID}/5\\.3`));

      const answers: [string, RawAnswer][] = [
        ['HEAD', await head(`/${ID}/4.7/content.xml`)],
        ['If-None-Match', await get(`/${ID}/4.7/content.xml`, `If-None-Match: ${etag}\r\n`)],
        ['If-Modified-Since', await get(`/${ID}/4.7/content.xml`, `If-Modified-Since: ${first.headers.get('last-modified')}\r\n`)],
        ['Range', await get(`/${ID}/4.7/plugins/a.jar`, 'Range: bytes=0-99\r\n')],
        ['large file', await get(`/${ID}/4.7/plugins/a.jar`)],
        ['folder', await get(`/${ID}/4.7/`)],
        ['label without slash', await get(`/${ID}/4.7`)],
        ['archive', await get(`/${ID}/4.7.zip`)],
        ['HEAD archive', await head(`/${ID}/4.7.zip`)],
        ['pinned release', await get(`/${ID}/4.7@1/content.xml`)],
        ['query string', await get(`/${ID}/4.7/content.xml?x=1`)],
        ['encoded', await get(`/${ID}/4%2E7/content.xml`)],
      ];
      for (const [what, a] of answers) assert.match(a.status, /^HTTP\/1\.1 410/, `${what}: ${a.status}`);
      assert.equal(answers[0]![1].body.length, 0, 'HEAD has no body');
      // Other labels are served as before.
      assert.match((await get(`/${ID}/5.3/content.xml`)).status, /^HTTP\/1\.1 200/);
      // The files stay in storage.
      assert.deepEqual(fs.readFileSync(path.join(storageDir, ID, 'update-site', '4.7', 'content.xml')), CONTENT);
      assert.ok(fs.existsSync(path.join(storageDir, ID, 'update-site', '4.7.zip')));

      // Undo: remove the notice; the same bytes are served again.
      assert.equal((await patch({ labels: { '4.7': null } })).status, 200);
      const back = await until(() => get(`/${ID}/4.7/content.xml`), '200');
      assert.match(back.status, /^HTTP\/1\.1 200/);
      assert.deepEqual(back.body, CONTENT);
      assert.match((await get(`/${ID}/4.7.zip`)).status, /^HTTP\/1\.1 200/);
    });

    test('withdrawn without a replacement: 410 naming none', async () => {
      assert.equal((await patch({ labels: { '4.7': { status: 'withdrawn' } } })).status, 200);
      const gone = await until(() => get(`/${ID}/4.7/content.xml`), '410');
      assert.match(gone.status, /^HTTP\/1\.1 410/);
      const problem = JSON.parse(gone.body.toString()) as Record<string, unknown>;
      assert.equal(problem.replacement, undefined);
      assert.match(String(problem.detail), /withdrawn by its vendor\.$/);
      assert.equal((await patch({ labels: null })).status, 200);
      assert.match((await until(() => get(`/${ID}/4.7/content.xml`), '200')).status, /^HTTP\/1\.1 200/);
    });
  });
}

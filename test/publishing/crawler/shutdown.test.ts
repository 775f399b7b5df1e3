// A crawl cut short by a shutdown (SIGTERM drains `pier serve`) records nothing against
// the upload and is handed back: the label is due at once, and the next start crawls it, instead of
// a "failed" crawl that would stay until the vendor uploads again.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Database } from '../../../src/infra/database/index.js';
import { crawlsRepository } from '../../../src/publishing/crawler/repository.js';
import { crawlerService } from '../../../src/publishing/crawler/service.js';
import { openPublishingDatabase, type PublishingDB } from '../../../src/publishing/db.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { releasesRepository } from '../../../src/publishing/releases/repository.js';
import { releasesService } from '../../../src/publishing/releases/service.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { buildSite, exampleSpec } from '../../helpers/p2-fixtures.js';
import { type Stack, startStack } from '../sftp/stack.js';

async function upload(stack: Stack, productId: string, dir: string, prefix: string): Promise<void> {
  await stack.fileStore.ensureTree(productId);
  await stack.fileStore.makeDir(productId, prefix);
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const rel = path.relative(dir, path.join(entry.parentPath, entry.name)).split(path.sep).join('/');
    if (entry.isDirectory()) await stack.fileStore.makeDir(productId, `${prefix}/${rel}`);
    if (!entry.isFile()) continue;
    const bytes = fs.readFileSync(path.join(entry.parentPath, entry.name));
    const u = await stack.fileStore.beginUpload(productId, `${prefix}/${rel}`);
    await u.write(bytes, 0, bytes.length, 0);
    await u.commit();
  }
}

for (const target of dialects()) {
  describe(`a crawl cut short by a shutdown (${target.name})`, () => {
    let db: { url: string; drop(): Promise<void> };
    let stack: Stack;
    let database: Database<PublishingDB>;
    let work: string;
    /** A download host that takes requests and never answers: the crawl waits on it. */
    let hanging: http.Server;
    let asked: () => void;
    const askedOnce = new Promise<void>((r) => {
      asked = r;
    });

    before(async () => {
      db = await target.create();
      stack = await startStack(db.url);
      database = await openPublishingDatabase(db.url);
      work = tempDir('pier-crawl-cut-');
      hanging = http.createServer(() => asked());
      await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
    });
    after(async () => {
      hanging.closeAllConnections();
      hanging.close();
      await database.close();
      await stack.close();
      await db.drop();
      fs.rmSync(work, { recursive: true, force: true });
    });

    test('is handed back, due at once, and crawled by the next start', async () => {
      await stack.register('cut');
      buildSite(path.join(work, 'cut'), exampleSpec('jar', 'org.cut'));
      await upload(stack, 'cut', path.join(work, 'cut'), 'update-site/5.4');
      const crawls = crawlsRepository(database.db, database.dialect);
      const releases = releasesService({ storage: localStorage(stack.storageDir), repo: releasesRepository(database.db), keep: 3 });
      const deps = { crawls, products: productsRepository(database.db, database.dialect), files: stack.files, releases };
      const first = crawlerService({ ...deps, downloadUrl: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}` });
      const pass = first.crawlSettled(0);
      await askedOnce;
      await first.close({ cut: true });
      assert.deepEqual(await pass, [], 'the pass ends without a crawl recorded');
      const [row] = await crawls.forProduct('cut');
      assert.equal(row?.status, 'running', 'no failed crawl is recorded against the upload');
      const due = await crawls.dueLabels(new Date().toISOString(), new Date(Date.now() - 15 * 60_000).toISOString());
      assert.deepEqual(
        due.map((d) => `${d.product_id}/${d.label}`),
        ['cut/5.4'],
        'due again at once, not after the stale-claim time',
      );

      const next = crawlerService({ ...deps, downloadUrl: stack.downloads.url });
      try {
        assert.deepEqual(await next.crawlSettled(0), ['cut/5.4']);
        const [report] = await next.report('cut');
        assert.equal(report?.status, 'finished');
        assert.equal(report?.summary?.nodes, 4);
      } finally {
        await next.close();
      }
    });
  });
}

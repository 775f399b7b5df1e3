// A product's label totals (files and bytes of each `update-site/<label>/` folder, and its
// `<label>.zip`) are summed over every file row of the label: on SQLite, for a product of
// thousands of files, that read runs in the catalog worker's thread, not on the serving thread,
// and it agrees with the repository's.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { productFilesReader } from '../../../src/publishing/files/reader.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { dialects } from '../../helpers/db.js';
import { seeder } from '../web/page-seed.js';
import { type Site, startSite } from '../web/helpers.js';

const ID = 'totals';
/** Files beyond which the service sums a product's label totals in the worker (service.ts INLINE_TOTALS_FILES). */
const EXTRA = 2_000;

for (const dialect of dialects()) {
  describe(`label totals on ${dialect.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let web: Site;
    let token: string;

    before(async () => {
      db = await dialect.create();
      web = await startSite(db.url);
      token = await web.register(ID, { name: 'Totals' });
      const seed = await seeder(db.url);
      try {
        await seed.upload(ID, [
          'update-site/5.0/content.jar',
          'update-site/5.0/plugins/a.jar',
          'update-site/5.0/plugins/b.jar',
          'update-site/5.0.zip',
          'update-site/5.1/content.jar',
          'update-site/only-zip.zip',
          'update-site/stray.txt',
          'assets/5.0/x.png',
        ]);
      } finally {
        await seed.close();
      }
      // Enough files that the service sums them in the worker (a small product's are summed inline).
      const other = await openPublishingDatabase(db.url);
      try {
        const at = new Date().toISOString();
        const rows = Array.from({ length: EXTRA }, (_, i) => ({ product_id: ID, path: `update-site/5.1/extra/f${String(i).padStart(5, '0')}`, size: 1, modified_at: at, uploaded_at: at }));
        for (let i = 0; i < rows.length; i += 500) await other.db.insertInto('product_files').values(rows.slice(i, i + 500)).execute();
      } finally {
        await other.close();
      }
    });
    after(async () => {
      await web.close();
      await db.drop();
    });

    it('read in the catalog worker, the same totals as the repository sums', async () => {
      const reads = web.service.catalogReads;
      assert.ok(reads);
      const other = await openPublishingDatabase(db.url);
      try {
        const repo = filesRepository(other.db);
        const before = reads.answered;
        const inWorker = await productFilesReader(repo, { labelTotals: (id) => reads.labelTotals(id) }).listLabels(ID);
        assert.equal(reads.answered, before + 1);
        const here = await productFilesReader(repo).listLabels(ID);
        assert.deepEqual(inWorker, here);
        assert.deepEqual(
          here.map((l) => [l.label, l.files, l.hasArchive]),
          [
            ['5.0', 3, true],
            ['5.1', 1 + EXTRA, false],
            ['only-zip', 0, true],
          ],
        );
      } finally {
        await other.close();
      }
    });

    it(`the service reads them ${dialect.name === 'sqlite' ? 'in the worker' : 'from PostgreSQL, not the worker'}`, async () => {
      const reads = web.service.catalogReads!;
      const before = reads.answeredOf('labelTotals');
      const res = await fetch(`${web.url}/api/products/${ID}/changes`, { headers: { authorization: `Bearer ${token}` } });
      assert.ok(res.status < 500, String(res.status));
      assert.equal(reads.answeredOf('labelTotals') - before, dialect.name === 'sqlite' ? 1 : 0);
    });
  });
}

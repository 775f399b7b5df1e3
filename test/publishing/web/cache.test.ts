// The page cache never outlives its data (docs/operators.md#caching-and-freshness-of-pages; DESIGN
// "Changes made by another process"): edits through a second instance, and two edits within one
// clock tick.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isolatedRenderer } from '../../../src/publishing/web/isolated-render.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { productFilesReader } from '../../../src/publishing/files/reader.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { productService } from '../../../src/publishing/products/service.js';
import { databasePageChanges } from '../../../src/publishing/web/page-changes.js';
import { pagesService } from '../../../src/publishing/web/service.js';
import { crawlsRepository } from '../../../src/publishing/crawler/repository.js';
import { dialects } from '../../helpers/db.js';
import { patchProduct } from '../../helpers/publishing.js';
import { type Site, startSite } from './helpers.js';

for (const dialect of dialects()) {
  describe(`page cache on ${dialect.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let a: Site;
    let b: Site;

    before(async () => {
      db = await dialect.create();
      a = await startSite(db.url);
      b = await startSite(db.url);
    });
    after(async () => {
      await a.close();
      await b.close();
      await db.drop();
    });

    it('an edit through one instance shows on the next request to another', async () => {
      const token = await a.register('shared', { name: 'Shared', description: 'first' });
      const page = () => fetch(`${b.url}/product/shared`).then((r) => r.text());
      assert.match(await page(), /<p class="tagline">first<\/p>/);
      assert.equal((await patchProduct(a.url, 'shared', token, { description: 'second' })).status, 200);
      assert.match(await page(), /<p class="tagline">second<\/p>/);
      await a.service.products.setPlatformRelease('7.1');
      assert.equal((await patchProduct(a.url, 'shared', token, { text: 'Release {{platformRelease}}' })).status, 200);
      assert.match(await page(), /Release 7\.1/);
      await a.service.products.setPlatformRelease('7.2');
      assert.match(await page(), /Release 7\.2/);
      await a.setState('shared', 'live');
      const feed = await fetch(`${b.url}/product/shared/releases.atom`);
      assert.equal(feed.status, 200);
      assert.match(await fetch(`${b.url}/`).then((r) => r.text()), /href="\/product\/shared"/);
      // The catalog and its search follow edits of a live product too.
      assert.equal((await patchProduct(a.url, 'shared', token, { name: 'Renamed', description: 'findable words' })).status, 200);
      assert.match(await fetch(`${b.url}/?q=findable`).then((r) => r.text()), /<h2>Renamed<\/h2>/);
      await a.setState('shared', 'hidden');
      assert.equal((await fetch(`${b.url}/product/shared/releases.atom`)).status, 404);
      assert.doesNotMatch(await fetch(`${b.url}/`).then((r) => r.text()), /href="\/product\/shared"/);
    });

    it('two edits within the same millisecond both show', async () => {
      const database = await openPublishingDatabase(db.url);
      const renderer = isolatedRenderer({ timeoutMs: 60_000 });
      try {
        const repo = productsRepository(database.db, database.dialect, { readNow: database.readNow });
        const frozen = new Date('2030-01-01T00:00:00.000Z');
        const products = productService({ repo, publishing: { baseUrl: 'http://pier.test' } as never, now: () => frozen });
        const pages = pagesService({ renderer, repo, files: productFilesReader(filesRepository(database.db)), released: () => null, crawls: crawlsRepository(database.db, database.dialect), changes: databasePageChanges(database), site: { name: 'Pier', baseUrl: 'http://pier.test', downloadUrl: 'http://dl.test' } });
        await products.register('frozen', { name: 'Frozen' });
        const row = await products.show('frozen');
        const rowOf = async () => (await repo.find('frozen'))!;
        await products.patch(await rowOf(), { description: 'one' }, { dryRun: false, clientAddress: '127.0.0.1' });
        assert.match((await pages.productPage('frozen'))!.body.toString(), /tagline">one</);
        await products.patch(await rowOf(), { description: 'two' }, { dryRun: false, clientAddress: '127.0.0.1' });
        assert.match((await pages.productPage('frozen'))!.body.toString(), /tagline">two</);
        assert.ok((await rowOf()).updated_at > row.updatedAt);
      } finally {
        await renderer.close();
        await database.close();
      }
    });
  });
}

// A product page lists at most PAGE_WORKFLOWS example workflows, whatever the vendor uploaded
// under `workflows/`, and links the download host's folder index for all of them; the page
// reads that many rows and a count, not every file. Real service, SQLite and PostgreSQL.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PAGE_WORKFLOWS } from '../../../src/publishing/web/presenter.js';
import { dialects } from '../../helpers/db.js';
import { type Site, startSite } from './helpers.js';
import { seeder } from './page-seed.js';

const MANY = PAGE_WORKFLOWS + 50;

const workflowsSection = (html: string) => {
  const start = html.indexOf('<h2 id="workflows">');
  return start < 0 ? '' : html.slice(start, html.indexOf('</section>', start));
};

for (const dialect of dialects()) {
  describe(`example workflows on the product page on ${dialect.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let web: Site;

    before(async () => {
      db = await dialect.create();
      web = await startSite(db.url);
      await web.register('many-wf', { name: 'Many' });
      await web.register('few-wf', { name: 'Few' });
      const seed = await seeder(db.url, web.storageDir);
      try {
        // Zero-padded, so that their order is the same whatever the database's collation.
        await seed.upload('many-wf', Array.from({ length: MANY }, (_, i) => `workflows/w${String(i).padStart(4, '0')}.knwf`));
        await seed.upload('few-wf', ['workflows/a.knwf', 'workflows/b/c.knwf']);
      } finally {
        await seed.close();
      }
      await web.setState('many-wf', 'live');
      await web.setState('few-wf', 'live');
    });
    after(async () => {
      await web.close();
      await db.drop();
    });

    it(`lists the first ${PAGE_WORKFLOWS} and links the folder index of all ${MANY}`, async () => {
      const html = await (await fetch(`${web.url}/product/many-wf`)).text();
      const section = workflowsSection(html);
      const listed = [...section.matchAll(/<a href="[^"]*\/workflows\/many-wf\/(w\d+\.knwf)">/g)].map((m) => m[1]);
      assert.deepEqual(
        listed,
        Array.from({ length: PAGE_WORKFLOWS }, (_, i) => `w${String(i).padStart(4, '0')}.knwf`),
      );
      assert.ok(section.includes(`The first ${PAGE_WORKFLOWS} of ${MANY} files.`), section.slice(-400));
      assert.match(section, /<a href="[^"]*\/workflows\/many-wf\/">All example workflow files<\/a>/);
    });

    it('lists every workflow of a product with few, without the link', async () => {
      const section = workflowsSection(await (await fetch(`${web.url}/product/few-wf`)).text());
      assert.deepEqual(
        [...section.matchAll(/<a href="[^"]*\/workflows\/few-wf\/([^"]+)">/g)].map((m) => m[1]),
        ['a.knwf', 'b/c.knwf'],
      );
      assert.ok(!section.includes('All example workflow files'));
    });
  });
}

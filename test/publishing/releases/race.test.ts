/**
 * Two instances (two database connections, one shared storage) release the same label at once:
 * every copy gets its own number, and the label ends on the newest passed copy whatever order
 * the releases finish in (a slow crawl of an older upload never moves the label back).
 * SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { productService } from '../../../src/publishing/products/service.js';
import { loadConfig } from '../../../src/infra/config.js';
import { releasesRepository } from '../../../src/publishing/releases/repository.js';
import { releasesService } from '../../../src/publishing/releases/service.js';
import { dialects, tempDir } from '../../helpers/db.js';

for (const dialect of dialects()) {
  test(`two instances releasing one label at once: distinct numbers, the newest wins (${dialect.name})`, { timeout: 120_000 }, async () => {
    const db = await dialect.create();
    const storageDir = tempDir('pier-release-race-');
    const a = await openPublishingDatabase(db.url);
    // SQLite: one process shares one handle per file (`pier serve`); two instances are PostgreSQL's case.
    const b = dialect.name === 'sqlite' ? a : await openPublishingDatabase(db.url);
    try {
      const config = loadConfig({ PIER_DATA_DIR: storageDir, PIER_DATABASE_URL: db.url, PIER_LOG_LEVEL: 'silent' });
      await productService({ repo: productsRepository(a.db, a.dialect), publishing: config.publishing }).register('race-nodes', { name: 'Race' });
      const folder = path.join(storageDir, 'race-nodes/update-site/5.4');
      fs.mkdirSync(folder, { recursive: true });
      const instances = [a, b].map((d) => releasesService({ storage: localStorage(storageDir), repo: releasesRepository(d.db), keep: 50 }));
      const [one, two] = instances as [(typeof instances)[0], (typeof instances)[0]];
      const current = () => fs.readlinkSync(path.join(storageDir, 'race-nodes/releases/5.4/current'), 'utf8');

      const numbers = new Set<number>();
      for (let round = 0; round < 10; round++) {
        fs.writeFileSync(path.join(folder, 'content.xml'), `round ${round}`);
        // Both copy at once; then the newer copy's release finishes first, the older one's after.
        const [x, y] = await Promise.all([one.candidate('race-nodes', '5.4', round), two.candidate('race-nodes', '5.4', round)]);
        assert.notEqual(x.number, y.number, 'each copy its own number');
        for (const c of [x, y]) {
          assert.ok(!numbers.has(c.number), `number ${c.number} used once`);
          numbers.add(c.number);
        }
        const [newer, older] = x.number > y.number ? [[one, x] as const, [two, y] as const] : [[two, y] as const, [one, x] as const];
        assert.equal(await newer[0].release(newer[1], { kind: 'automatic' }), true);
        assert.equal(await older[0].release(older[1], { kind: 'automatic' }), false, 'an older copy finishing later does not move the label');
        assert.equal(current(), String(newer[1].number));
        // And both at once.
        const [p, q] = await Promise.all([one.candidate('race-nodes', '5.4', round), two.candidate('race-nodes', '5.4', round)]);
        await Promise.all([one.release(p, { kind: 'vendor' }), two.release(q, { kind: 'vendor' })]);
        assert.equal(current(), String(Math.max(p.number, q.number)));
        numbers.add(p.number).add(q.number);
      }
      assert.equal(numbers.size, 40);
      const listed = (await one.list('race-nodes'))[0]!;
      assert.equal(listed.current, Math.max(...numbers));
      assert.equal(listed.releases.length, 40);
      assert.equal(fs.readFileSync(path.join(storageDir, `race-nodes/releases/5.4/${listed.current}/content.xml`), 'utf8'), 'round 9');
    } finally {
      await a.close();
      if (b !== a) await b.close();
      await db.drop();
      fs.rmSync(storageDir, { recursive: true, force: true });
    }
  });
}

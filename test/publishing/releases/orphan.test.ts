/**
 * A release folder on disk with no record (a backup's files are copied after its database
 * snapshot, so a release made meanwhile is restored as a folder only): the label's next copy
 * takes that number and must replace the folder, not fail on it for good. SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../../src/infra/config.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { productService } from '../../../src/publishing/products/service.js';
import { releasesRepository } from '../../../src/publishing/releases/repository.js';
import { releasesService } from '../../../src/publishing/releases/service.js';
import { dialects, tempDir } from '../../helpers/db.js';

for (const dialect of dialects()) {
  test(`a release folder without a record is replaced by the next copy, which is released (${dialect.name})`, { timeout: 120_000 }, async () => {
    const db = await dialect.create();
    const storageDir = tempDir('pier-release-orphan-');
    const d = await openPublishingDatabase(db.url);
    try {
      const config = loadConfig({ PIER_DATA_DIR: storageDir, PIER_DATABASE_URL: db.url, PIER_LOG_LEVEL: 'silent' });
      await productService({ repo: productsRepository(d.db, d.dialect), publishing: config.publishing }).register('orphan-nodes', { name: 'Orphan' });
      const folder = path.join(storageDir, 'orphan-nodes/update-site/5.4');
      fs.mkdirSync(folder, { recursive: true });
      fs.writeFileSync(path.join(folder, 'content.xml'), 'new upload');
      const orphanAt = (n: number) => path.join(storageDir, `orphan-nodes/releases/5.4/${n}`);
      let orphan = orphanAt(1);
      fs.mkdirSync(orphan, { recursive: true });
      fs.writeFileSync(path.join(orphan, 'content.xml'), 'restored without its record');
      fs.writeFileSync(path.join(orphan, 'stale.jar'), 'x');
      const releases = releasesService({ storage: localStorage(storageDir), repo: releasesRepository(d.db), keep: 3 });
      for (let attempt = 0; attempt < 2; attempt++) {
        const c = await releases.candidate('orphan-nodes', '5.4', 1);
        assert.equal(c.number, attempt + 1);
        // Never served as release n: the copy is crawled at its candidate address.
        assert.equal(fs.existsSync(orphan), false, 'the folder without a record is gone from the release address');
        const copy = path.join(storageDir, `orphan-nodes/releases/5.4/candidate-${c.number}-${c.secret}`);
        assert.deepEqual(fs.readdirSync(copy), ['content.xml'], 'only what the upload folder holds');
        assert.equal(fs.readFileSync(path.join(copy, 'content.xml'), 'utf8'), 'new upload');
        if (attempt === 1) {
          assert.equal(await releases.release(c, { kind: 'vendor' }), true);
          assert.equal(fs.readFileSync(path.join(orphan, 'content.xml'), 'utf8'), 'new upload', 'moved to the release address once accepted');
          assert.equal(fs.existsSync(copy), false);
          continue;
        }
        // Refused (its number stays taken); then a folder without a record at the next number.
        await releases.discard(c);
        assert.equal(fs.existsSync(copy), false);
        orphan = orphanAt(2);
        fs.mkdirSync(orphan);
        fs.writeFileSync(path.join(orphan, 'stale.jar'), 'x');
      }
      assert.equal(releases.current('orphan-nodes', '5.4'), 2);

      // The label's current release itself without a record (its pointer restored with it):
      // recorded as released, kept as served, and the next copy takes the next number.
      const served = orphanAt(3);
      fs.mkdirSync(served);
      fs.writeFileSync(path.join(served, 'content.xml'), 'served, no record');
      fs.symlinkSync('3', path.join(storageDir, 'orphan-nodes/releases/5.4/.pier-tmp-pointer'));
      fs.renameSync(path.join(storageDir, 'orphan-nodes/releases/5.4/.pier-tmp-pointer'), path.join(storageDir, 'orphan-nodes/releases/5.4/current'));
      const next = await releases.candidate('orphan-nodes', '5.4', 2);
      assert.equal(next.number, 4);
      assert.equal(fs.readFileSync(path.join(served, 'content.xml'), 'utf8'), 'served, no record');
      assert.equal(releases.current('orphan-nodes', '5.4'), 3, 'still what downloaders get');
      const listed = (await releases.list('orphan-nodes'))[0]!;
      assert.deepEqual(
        listed.releases.map((r) => [r.number, r.files]),
        [[3, 1], [2, 1]],
      );
      assert.equal(await releases.release(next, { kind: 'vendor' }), true);
      assert.equal(releases.current('orphan-nodes', '5.4'), 4);
      assert.equal(fs.readFileSync(path.join(storageDir, 'orphan-nodes/releases/5.4/4/content.xml'), 'utf8'), 'new upload');
    } finally {
      await d.close();
      await db.drop();
      fs.rmSync(storageDir, { recursive: true, force: true });
    }
  });
}

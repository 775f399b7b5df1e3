// A restore after a backup that caught copies mid-crawl (`candidate-<n>-<secret>` folders): no
// crawl resumes them, so the reconcile removes them, and a number no record holds stays taken
// (a later copy never reuses it). SQLite and PostgreSQL.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../../src/infra/config.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { filesService } from '../../../src/publishing/files/service.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { productService } from '../../../src/publishing/products/service.js';
import { releasesRepository } from '../../../src/publishing/releases/repository.js';
import { reconcileRestoredReleases } from '../../../src/publishing/releases/restored.js';
import { releaseKeys, releasesService } from '../../../src/publishing/releases/service.js';
import { deploymentEnv } from '../../cli/backup-source.js';
import { dialects, tempDir } from '../../helpers/db.js';

for (const dialect of dialects()) {
  test(`a restore removes copies caught mid-crawl and keeps their numbers taken (${dialect.name})`, async () => {
    const db = await dialect.create();
    const dir = tempDir('pier-restored-candidates-');
    const config = loadConfig(deploymentEnv(dir, db.url));
    const d = await openPublishingDatabase(db.url);
    try {
      await productService({ repo: productsRepository(d.db, d.dialect), publishing: config.publishing }).register('acme', { name: 'Acme' });
      const storage = localStorage(path.join(dir, 'storage'));
      const files = filesService({ storage, repo: filesRepository(d.db), limits: config.publishing.limits });
      await files.ensureTree('acme');
      await files.makeDir('acme', 'update-site/5.4');
      const u = await files.beginUpload('acme', 'update-site/5.4/content.xml');
      await u.write(Buffer.from('<repository/>'), 0, 13, 0);
      await u.commit();
      const repo = releasesRepository(d.db);
      const releases = releasesService({ storage, repo, keep: 3 });
      const released = await releases.candidate('acme', '5.4', 1);
      assert.equal(await releases.release(released, { kind: 'vendor' }), true);
      // Copy 2 recorded as a candidate; copy 7 made after the database snapshot (no record).
      const cut = await releases.candidate('acme', '5.4', 1);
      assert.equal(cut.number, 2);
      const unrecorded = releaseKeys.candidate('acme', '5.4', 7, 'A'.repeat(22));
      await storage.linkTree('acme/update-site/5.4', unrecorded);
      const folder = path.join(dir, 'storage', releaseKeys.folder('acme', '5.4'));
      assert.equal(fs.readdirSync(folder).filter((n) => n.startsWith('candidate-')).length, 2);

      await reconcileRestoredReleases(storage, repo, ['acme']);
      assert.deepEqual(fs.readdirSync(folder).sort(), ['1', 'current'], 'only the release and its pointer stay');
      assert.equal(releases.current('acme', '5.4'), 1);
      const next = await releases.candidate('acme', '5.4', 1);
      assert.equal(next.number, 8, 'numbers 2 and 7 stay taken');
    } finally {
      await d.close();
      await db.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}

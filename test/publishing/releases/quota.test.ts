/**
 * Releases inside the product's quota (docs/vendors.md "Releases and the quota"). A release is a
 * hard-linked copy of the label's folder: free while the folder keeps its files, but once the
 * vendor replaces or removes them the release alone holds their bytes. Attacked as a vendor
 * would: upload, release, remove the label, again under new label names (the releases of removed
 * labels stayed for good and grew without bound); and replace a label's files after its release.
 * What the product holds on disk (each stored file once) must stay within its quota. SQLite and
 * PostgreSQL.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../../src/infra/config.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { type FilesService, filesService, QuotaExceededError } from '../../../src/publishing/files/service.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { productService } from '../../../src/publishing/products/service.js';
import { releasesRepository } from '../../../src/publishing/releases/repository.js';
import { type ReleasesService, releasesService } from '../../../src/publishing/releases/service.js';
import { dialects, tempDir } from '../../helpers/db.js';

const KiB = 1024;
const QUOTA = 300 * KiB;

async function put(files: FilesService, productId: string, p: string, data: Buffer): Promise<void> {
  const u = await files.beginUpload(productId, p);
  try {
    await u.write(data, 0, data.length, 0);
    await u.commit();
  } catch (e) {
    await u.abort();
    throw e;
  }
}

/** Bytes of the product's stored files on disk, each stored file (inode) once. */
function onDisk(dir: string): number {
  const seen = new Set<number>();
  let bytes = 0;
  const visit = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) visit(p);
      else if (e.isFile()) {
        const st = fs.statSync(p);
        if (!seen.has(st.ino)) bytes += st.size;
        seen.add(st.ino);
      }
    }
  };
  visit(dir);
  return bytes;
}

async function release(releases: ReleasesService, productId: string, label: string, seq: number): Promise<number> {
  const c = await releases.candidate(productId, label, seq);
  assert.equal(await releases.release(c, { kind: 'vendor' }), true);
  return c.number;
}

for (const dialect of dialects()) {
  test(`releases count against the product's quota; kept ones give their room back (${dialect.name})`, { timeout: 120_000 }, async () => {
    const db = await dialect.create();
    const dataDir = tempDir('pier-release-quota-');
    const d = await openPublishingDatabase(db.url);
    try {
      const config = loadConfig({ PIER_DATA_DIR: dataDir, PIER_DATABASE_URL: db.url, PIER_LOG_LEVEL: 'silent' });
      const storageDir = config.publishing.storageDir;
      const products = productService({ repo: productsRepository(d.db, d.dialect), publishing: config.publishing });
      await products.register('acme', { name: 'Acme' });
      const storage = localStorage(storageDir);
      const files = filesService({ storage, repo: filesRepository(d.db), limits: config.publishing.limits });
      await files.ensureTree('acme');
      await files.setLimits('acme', { quotaBytes: QUOTA });
      const releases = releasesService({ storage, repo: releasesRepository(d.db), keep: 3, limits: config.publishing.limits });
      const product = path.join(storageDir, 'acme');

      // Eight rounds of upload -> release -> `rm -r` under new label names: each label's
      // release would stay, 8 x 240 KiB for a 300 KiB quota.
      for (let round = 1; round <= 8; round++) {
        const label = `l${round}`;
        await files.makeDir('acme', `update-site/${label}`);
        for (let i = 0; i < 3; i++) await put(files, 'acme', `update-site/${label}/f${i}.jar`, randomBytes(80 * KiB));
        assert.equal(await release(releases, 'acme', label, round), 1);
        for (let i = 0; i < 3; i++) await files.remove('acme', `update-site/${label}/f${i}.jar`);
        await files.removeDir('acme', `update-site/${label}`);
        // What the crawl of the removed label does once the removal settled.
        await releases.withdraw('acme', label);
        assert.ok(onDisk(product) <= QUOTA, `round ${round}: the product holds ${onDisk(product)} bytes on disk, its quota is ${QUOTA}`);
      }
      // Only the newest removed label's release fits beside nothing else.
      assert.deepEqual(
        (await releases.list('acme')).map((l) => [l.label, l.current, l.releases.map((r) => r.number)]),
        [['l8', null, [1]]],
      );
      assert.deepEqual(fs.readdirSync(path.join(product, 'releases')).sort(), ['l1', 'l2', 'l3', 'l4', 'l5', 'l6', 'l7', 'l8']);
      for (let round = 1; round < 8; round++) assert.deepEqual(fs.readdirSync(path.join(product, 'releases', `l${round}`)), [], `l${round}'s release is gone`);

      // A served label whose files are replaced after its release: the current release holds the
      // old ones, and they count.
      await files.makeDir('acme', 'update-site/5.4');
      for (let i = 0; i < 2; i++) await put(files, 'acme', `update-site/5.4/f${i}.jar`, randomBytes(100 * KiB));
      assert.equal(await release(releases, 'acme', '5.4', 20), 1);
      assert.equal(fs.existsSync(path.join(product, 'releases/l8/1')), false, 'the removed label gave its room to the new release');
      assert.deepEqual((await files.summary('acme')).releases, { files: 0, bytes: 0 }, 'release 1 shares every file with the upload folder');
      for (let i = 0; i < 2; i++) await put(files, 'acme', `update-site/5.4/f${i}.jar`, randomBytes(100 * KiB));
      // The new upload's crawl refused it: release 1 stays current, and alone holds the first files.
      const refused = await releases.candidate('acme', '5.4', 21);
      await releases.discard(refused);
      assert.deepEqual((await files.summary('acme')).releases, { files: 2, bytes: 200 * KiB });
      // 250 KiB of uploads would fit; with what release 1 holds they do not.
      await assert.rejects(put(files, 'acme', 'assets/more.bin', randomBytes(50 * KiB)), (e: unknown) => {
        assert.ok(e instanceof QuotaExceededError, String(e));
        assert.match(e.message, /storage quota exceeded: .*204800 bytes of it are files that only the current releases of its labels still hold/);
        return true;
      });
      assert.equal(onDisk(product), 400 * KiB, 'the refused upload left nothing');

      // Released: the earlier release is no label's current one, and gives its room back.
      assert.equal(await release(releases, 'acme', '5.4', 22), 3);
      assert.deepEqual((await releases.list('acme')).find((l) => l.label === '5.4')?.releases.map((r) => r.number), [3]);
      assert.deepEqual((await files.summary('acme')).releases, { files: 0, bytes: 0 });
      await put(files, 'acme', 'assets/more.bin', randomBytes(50 * KiB));
      assert.ok(onDisk(product) <= QUOTA, `${onDisk(product)} bytes on disk`);
    } finally {
      await d.close();
      await db.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
}

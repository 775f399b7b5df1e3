/**
 * A backup taken while a label is released again and again, then restored. The database is
 * snapshotted first and the files copied after (infra/backup/take.ts): releases made meanwhile
 * prune copies the records still name and add copies the records do not know. Restored as is,
 * the label's `current` named a copy with no record, records named copies that were missing or
 * empty (a rollback answered 200, then every file 404). The restore must leave only records of
 * whole copies and point `current` at the newest of them (publishing/releases/restored.ts); the
 * backup must copy a file that releases share once, not once per release (it took 88 MiB for
 * 46 MiB of storage). SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { deploymentPlan, reconcileRestored, restoreTargets } from '../../src/cli/backup-deployment.js';
import { restoreBackup } from '../../src/infra/backup/restore.js';
import { takeBackup } from '../../src/infra/backup/take.js';
import { loadConfig } from '../../src/infra/config.js';
import { localStorage } from '../../src/infra/storage-local.js';
import { openPublishingDatabase } from '../../src/publishing/db.js';
import { filesRepository } from '../../src/publishing/files/repository.js';
import { type FilesService, filesService } from '../../src/publishing/files/service.js';
import { productsRepository } from '../../src/publishing/products/repository.js';
import { productService } from '../../src/publishing/products/service.js';
import { releasesRepository } from '../../src/publishing/releases/repository.js';
import { releaseKeys, type ReleasesService, releasesService } from '../../src/publishing/releases/service.js';
import { dialects, tempDir } from '../helpers/db.js';
import { deploymentEnv } from './backup-source.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function put(files: FilesService, p: string, data: Buffer): Promise<void> {
  const u = await files.beginUpload('acme', p);
  await u.write(data, 0, data.length, 0);
  await u.commit();
}

/** Bytes of the files below `dir`, each stored file (inode) once. */
function onDisk(dir: string): number {
  const seen = new Set<number>();
  let bytes = 0;
  const visit = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) visit(p);
      else if (e.isFile() && !seen.has(fs.statSync(p).ino)) {
        seen.add(fs.statSync(p).ino);
        bytes += fs.statSync(p).size;
      }
    }
  };
  visit(dir);
  return bytes;
}

for (const dialect of dialects()) {
  test(`a backup taken while releases run restores only whole releases, each shared file copied once (${dialect.name})`, { timeout: 180_000 }, async () => {
    const cleanup: (() => Promise<void>)[] = [];
    const fresh = async () => {
      if (dialect.name === 'sqlite') return null;
      const db = await dialect.create();
      cleanup.push(db.drop);
      return db.url;
    };
    const scratch = (prefix: string) => {
      const dir = tempDir(prefix);
      cleanup.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
      return dir;
    };
    try {
      const config = loadConfig(deploymentEnv(scratch('pier-rel-backup-src-'), await fresh(), { PIER_RELEASES_KEPT: '4' }));
      const d = await openPublishingDatabase(config.publishing.databaseUrl);
      /** content.xml of each release, by number. */
      const contents = new Map<number, Buffer>();
      let releases: ReleasesService;
      const backupDir = path.join(scratch('pier-rel-backup-'), 'b');
      try {
        await productService({ repo: productsRepository(d.db, d.dialect), publishing: config.publishing }).register('acme', { name: 'Acme' });
        const storage = localStorage(config.publishing.storageDir);
        const files = filesService({ storage, repo: filesRepository(d.db), limits: config.publishing.limits });
        await files.ensureTree('acme');
        await files.makeDir('acme', 'update-site/5.4');
        await files.makeDir('acme', 'update-site/5.4/plugins');
        // Jars every release shares with the upload folder (hard links), 20 x 32 KiB.
        for (let i = 0; i < 20; i++) await put(files, `update-site/5.4/plugins/p${i}.jar`, randomBytes(32 * 1024));
        releases = releasesService({ storage, repo: releasesRepository(d.db), keep: 4, limits: config.publishing.limits });
        const release = async () => {
          const content = randomBytes(4096);
          await put(files, 'update-site/5.4/content.xml', content);
          const c = await releases.candidate('acme', '5.4', 1);
          assert.equal(await releases.release(c, { kind: 'vendor' }), true);
          contents.set(c.number, content);
        };
        for (let i = 0; i < 5; i++) await release();

        // The snapshot records releases 2-5 (current 5). Meanwhile release 6 prunes 2; after the
        // first pass listed the copies, releases 7 and 8 prune 3 and 4, whose files are gone when
        // they are copied (empty folders in the backup); the second pass finds 7 and 8 and the
        // pointer at 8, neither of which the snapshot knows.
        const manifest = await takeBackup(deploymentPlan(config), backupDir, {
          sink: { write: () => true },
          afterSnapshot: release,
          afterWalk: async (pass) => {
            if (pass === 1) for (let i = 0; i < 2; i++) await release();
          },
        });
        assert.equal(onDisk(path.join(backupDir, 'files/publishing/acme/releases/5.4/3')), 0, 'release 3 was backed up as empty folders');

        // Each shared jar once: the backup takes what the distinct contents take, not once per name.
        const distinct = new Map(manifest.files.map((f) => [f.sha256, f.size]));
        const listed = manifest.files.reduce((n, f) => n + f.size, 0);
        const unique = [...distinct.values()].reduce((n, s) => n + s, 0);
        assert.ok(listed > 4 * unique, `the manifest lists ${listed} bytes of names for ${unique} bytes of contents`);
        assert.equal(onDisk(path.join(backupDir, 'files')), unique, 'the backup holds each content once');
      } finally {
        await d.close();
      }

      // Restored into an empty deployment.
      const target = loadConfig(deploymentEnv(scratch('pier-rel-restored-'), await fresh(), { PIER_RELEASES_KEPT: '4' }));
      const manifest = await restoreBackup(backupDir, restoreTargets(target), { sink: { write: () => true } });
      const summary = await reconcileRestored(target, manifest);
      const sorted = (ns: number[]) => [...ns].sort((a, b) => a - b);
      assert.deepEqual(
        summary.releases.map((c) => ({ ...c, dropped: sorted(c.dropped), unrecorded: sorted(c.unrecorded) })),
        [{ productId: 'acme', label: '5.4', dropped: [2, 3, 4], unrecorded: [6, 7, 8], current: 5, restoredCurrent: 8 }],
      );

      const r = await openPublishingDatabase(target.publishing.databaseUrl);
      try {
        const storageDir = target.publishing.storageDir;
        const restored = releasesService({ storage: localStorage(storageDir), repo: releasesRepository(r.db), keep: 4, limits: target.publishing.limits });
        const listed = await restored.list('acme');
        assert.deepEqual(
          listed.map((l) => [l.label, l.current, l.releases.map((x) => x.number)]),
          [['5.4', 5, [5]]],
          'only the release whose copy is whole, and it is current',
        );
        // Every kept release serves every file it recorded.
        const tree = path.join(storageDir, 'acme/releases/5.4/5');
        assert.ok(fs.readFileSync(path.join(tree, 'content.xml')).equals(contents.get(5)!));
        assert.equal(fs.readdirSync(path.join(tree, 'plugins')).length, 20);
        assert.deepEqual(fs.readdirSync(path.join(storageDir, 'acme/releases/5.4')).sort(), ['5', 'current']);
        // The numbers of the copies that went stay taken: the next release is 9.
        const c = await restored.candidate('acme', '5.4', 100);
        assert.equal(c.number, 9);
        assert.equal(sha(fs.readFileSync(path.join(storageDir, releaseKeys.candidate('acme', '5.4', 9, c.secret), 'content.xml'))), sha(fs.readFileSync(path.join(storageDir, 'acme/update-site/5.4/content.xml'))));
      } finally {
        await r.close();
      }
    } finally {
      for (const c of cleanup.reverse()) await c();
    }
  });
}

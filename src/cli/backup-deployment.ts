import path from 'node:path';
import type { Config } from '../infra/config.js';
import { type BackupPlan, groupDatabases } from '../infra/backup/take.js';
import type { Manifest } from '../infra/backup/manifest.js';
import type { RestoreTargets } from '../infra/backup/restore.js';
import { localStorage } from '../infra/storage-local.js';
import { isTransientEntry } from '../infra/storage-local-temps.js';
import { openPublishingDatabase, PUBLISHING_MIGRATION_TABLE } from '../publishing/db.js';
import { filesRepository } from '../publishing/files/repository.js';
import { type RestoredFilesResult, reconcileRestoredFiles } from '../publishing/files/restored.js';
import { filesService } from '../publishing/files/service.js';
import { releasesRepository } from '../publishing/releases/repository.js';
import { type RestoredLabelReleases, reconcileRestoredReleases } from '../publishing/releases/restored.js';
import { releasesService } from '../publishing/releases/service.js';
import { reconcileRunnerFiles, type RunnerReconcileResult } from '../runner/backup/reconcile.js';
import { isRunnerTransient, RUNNER_STORAGE_FOLDERS } from '../runner/backup/scope.js';
import { openRunnerDatabase, RUNNER_MIGRATION_TABLE } from '../runner/db/index.js';

/**
 * A Pier deployment as `pier backup` and `pier restore` see it, from the same configuration as
 * `pier serve`: the two products' databases and storage locations. The generic work (dumps,
 * copies, checksums) is infra/backup; what each product's records mean stays with the product.
 */

export const PUBLISHING = 'publishing';
export const RUNNER = 'runner';

export function deploymentPlan(config: Config): BackupPlan {
  return {
    databases: groupDatabases([
      { product: PUBLISHING, url: config.publishing.databaseUrl },
      { product: RUNNER, url: config.runner.databaseUrl },
    ]),
    storages: [
      // Every product's uploads and the SFTP host keys (`.pier-host-keys/`); not the uploads in flight.
      { name: PUBLISHING, root: config.publishing.storageDir, include: [''], transient: (rel) => isTransientEntry(rel) },
      { name: RUNNER, root: config.runner.storageDir, include: RUNNER_STORAGE_FOLDERS, transient: isRunnerTransient },
    ],
  };
}

export function restoreTargets(config: Config): RestoreTargets {
  return {
    databases: { [PUBLISHING]: config.publishing.databaseUrl, [RUNNER]: config.runner.databaseUrl },
    storages: { [PUBLISHING]: config.publishing.storageDir, [RUNNER]: config.runner.storageDir },
    // Each product's migration table (infra/database `migrate`: `<prefix>_migrations`).
    markers: [`${PUBLISHING_MIGRATION_TABLE}_migrations`, `${RUNNER_MIGRATION_TABLE}_migrations`],
    // Update sites and their releases: uploads replace files by a rename, times are set on a
    // file of its own (storage-local-links.ts setTimes), so releases share unchanged files again.
    shareable: (storage, p) => storage === PUBLISHING && /^[^/]+\/(update-site|releases)\//.test(p),
  };
}

export interface ReconcileSummary {
  publishing: RestoredFilesResult;
  /** Labels whose release records or pointer changed to follow the restored release copies. */
  releases: RestoredLabelReleases[];
  runner: RunnerReconcileResult;
}

/**
 * Makes the restored records agree with the restored files, product by product (see
 * infra/backup/take.ts for why they may differ). Opening each database runs its migrations, as
 * `pier serve` would: a backup of an older Pier is brought forward first.
 */
export async function reconcileRestored(config: Config, manifest: Manifest): Promise<ReconcileSummary> {
  const publishingDb = await openPublishingDatabase(config.publishing.databaseUrl);
  let publishing: RestoredFilesResult;
  let releases: RestoredLabelReleases[];
  try {
    const repo = filesRepository(publishingDb.db);
    const storage = localStorage(config.publishing.storageDir);
    const files = filesService({ storage, repo, limits: config.publishing.limits });
    const runnerFolders = new Set(RUNNER_STORAGE_FOLDERS.map((f) => path.resolve(config.runner.storageDir, f)));
    publishing = await reconcileRestoredFiles(files, repo, config.publishing.storageDir, runnerFolders);
    // Then each label's releases follow the copies restored, and what they hold is counted again
    // (the quota counts it; the snapshot's count predates the copies).
    const releasesRepo = releasesRepository(publishingDb.db);
    const products = await repo.productIds();
    releases = await reconcileRestoredReleases(storage, releasesRepo, products);
    const service = releasesService({ storage, repo: releasesRepo, keep: config.publishing.releasesKept, limits: config.publishing.limits });
    for (const p of products) await service.settleUsage(p);
  } finally {
    await publishingDb.close();
  }
  const runnerDb = await openRunnerDatabase(config.runner.databaseUrl);
  try {
    const known = new Map(manifest.files.filter((f) => f.storage === RUNNER).map((f) => [f.path, f]));
    const runner = await reconcileRunnerFiles(runnerDb.db, config.runner.storageDir, (rel) => known.get(rel));
    return { publishing, releases, runner };
  } finally {
    await runnerDb.close();
  }
}

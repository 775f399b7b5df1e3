/**
 * The services a `pier staff` command works with, on the same database and storage as the
 * server. A module of its own so that the command line loads them only when an action runs.
 */
import { loadConfig } from '../infra/config.js';
import { localStorage } from '../infra/storage-local.js';
import { boundedSnapshots } from '../publishing/changes/snapshot-budget.js';
import { releaseNodesRepository } from '../publishing/changes/repository.js';
import { crawlsRepository } from '../publishing/crawler/repository.js';
import { type CrawlerService, crawlerService } from '../publishing/crawler/service.js';
import { openPublishingDatabase } from '../publishing/db.js';
import { productFilesReader } from '../publishing/files/reader.js';
import { filesRepository } from '../publishing/files/repository.js';
import { type FilesService, filesService } from '../publishing/files/service.js';
import { productsRepository } from '../publishing/products/repository.js';
import { releasesRepository } from '../publishing/releases/repository.js';
import { type ReleasesService, releasesService } from '../publishing/releases/service.js';
import { type ProductService, productService } from '../publishing/products/service.js';
import { trustRepository } from '../publishing/trust/repository.js';
import { uploadedLabelsOf } from '../publishing/notices/notices.js';
import { type TrustService, trustService } from '../publishing/trust/service.js';
import { checkStaffDatabase } from './staff-database.js';

/**
 * Opens the same database as the server (from the environment), runs one action, closes. Says
 * which database it is; only `create` commands may make a new one (staff-database.ts).
 */
export async function withProducts<T>(
  action: (products: ProductService, files: FilesService, crawler: CrawlerService, trust: TrustService, releases: ReleasesService) => Promise<T>,
  options: { create?: boolean } = {},
): Promise<T> {
  const config = loadConfig();
  await checkStaffDatabase(config, { create: options.create === true });
  const database = await openPublishingDatabase(config.publishing.databaseUrl);
  try {
    const files = filesService({
      storage: localStorage(config.publishing.storageDir),
      repo: filesRepository(database.db),
      limits: config.publishing.limits,
    });
    const repo = productsRepository(database.db, database.dialect);
    const releases = releasesService({ storage: localStorage(config.publishing.storageDir), repo: releasesRepository(database.db), keep: config.publishing.releasesKept, limits: config.publishing.limits });
    const crawler = crawlerService({
      crawls: crawlsRepository(database.db, database.dialect),
      products: repo,
      files: productFilesReader(filesRepository(database.db)),
      releases,
      // A release made by `pier staff crawl` keeps its node snapshot as the server's do.
      snapshots: boundedSnapshots(releaseNodesRepository(database.db), config.publishing.releaseSnapshotBytes),
      downloadUrl: config.publishing.downloadUrl,
      sftp: { host: config.publishing.sftpHost, port: config.publishing.sftpPort },
      isolation: { maxMemoryMb: config.publishing.crawlMaxMemoryMb, timeoutMs: config.publishing.crawlTimeoutSeconds * 1000 },
      platformCorePrefixes: config.publishing.platformCorePrefixes,
      platformCategories: config.publishing.platformCategories,
      nodeLimits: config.publishing.nodeLimits,
    });
    try {
      const trust = trustService({ repo: trustRepository(database.db), products: repo, oidc: config.publishing.oidc });
      const uploadedLabels = uploadedLabelsOf(productFilesReader(filesRepository(database.db)));
      return await action(productService({ repo, publishing: config.publishing, trust, uploadedLabels }), files, crawler, trust, releases);
    } finally {
      await crawler.close();
    }
  } finally {
    await database.close();
  }
}

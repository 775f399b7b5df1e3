import fs from 'node:fs';
import path from 'node:path';
import { RESERVED_NAME_PREFIX } from '../../infra/storage.js';
import type { FilesRepository } from './repository.js';
import type { FilesService, ReconcileResult } from './service.js';

export interface RestoredFilesResult {
  /** Products whose records changed to follow their restored files. */
  reconciled: (ReconcileResult & { productId: string })[];
  /** Folders of products the restored database does not have (registered after the snapshot), removed. */
  removedProducts: string[];
}

/**
 * Makes the publishing records of a restored deployment agree with its restored files. A
 * backup snapshots the database first and copies the files after (infra/backup/take.ts), so
 * uploads and deletes in between leave them apart; the reconcile every SFTP start runs already
 * makes each product's records follow what storage holds (files/service.ts `reconcile`). What
 * it does not visit are folders of products the snapshot does not know: the download host would
 * serve their files with no product behind them, so they are removed. `keep` are absolute
 * folders of other storage locations inside this one (the runner's, when they share a folder).
 */
export async function reconcileRestoredFiles(
  files: Pick<FilesService, 'reconcileAll'>,
  repo: Pick<FilesRepository, 'productIds'>,
  storageDir: string,
  keep: Set<string> = new Set(),
): Promise<RestoredFilesResult> {
  const products = new Set(await repo.productIds());
  const removedProducts: string[] = [];
  const entries = fs.existsSync(storageDir) ? fs.readdirSync(storageDir, { withFileTypes: true }) : [];
  for (const d of entries) {
    const abs = path.join(storageDir, d.name);
    // `.pier-…` names are the storage's own (host keys); no product can take one.
    if (d.name.startsWith(RESERVED_NAME_PREFIX) || products.has(d.name) || keep.has(abs)) continue;
    fs.rmSync(abs, { recursive: true, force: true });
    removedProducts.push(d.name);
  }
  const failed: string[] = [];
  const reconciled = await files.reconcileAll((productId, e) => failed.push(`${productId}: ${(e as Error).message}`));
  if (failed.length) throw new Error(`the records of restored files could not be reconciled: ${failed.join('; ')}`);
  return { reconciled, removedProducts };
}

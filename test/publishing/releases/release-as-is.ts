import type { Kysely } from 'kysely';
import { localStorage } from '../../../src/infra/storage-local.js';
import type { PublishingDB } from '../../../src/publishing/db.js';
import { releasesRepository } from '../../../src/publishing/releases/repository.js';
import { releasesService } from '../../../src/publishing/releases/service.js';

/**
 * Makes what `update-site/<label>/` holds the label's current release without a crawl (the copy
 * and the switch of releases/service.ts, by staff): for tests whose uploads are not real update
 * sites but must be served, since the download host serves a label only from a release.
 */
export async function releaseAsIs(db: Kysely<PublishingDB>, storageDir: string, productId: string, ...labels: string[]): Promise<void> {
  const releases = releasesService({ storage: localStorage(storageDir), repo: releasesRepository(db), keep: 3 });
  for (const label of labels) {
    const c = await releases.candidate(productId, label, 0);
    await releases.release(c, { kind: 'staff' });
  }
}

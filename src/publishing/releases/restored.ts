/**
 * Makes the release records of a restored deployment agree with its restored release copies. A
 * backup snapshots the database first and copies the files after (infra/backup/take.ts): releases
 * made meanwhile prune kept copies the records still name (restored missing, or as empty folders
 * when the copy was pruned between listing and copying its files), and add copies and a pointer
 * the records do not know. Served as restored, a label's `current` could name a copy with no
 * record and a rollback could name one with no files (200, then 404 for every file).
 *
 * Per label: a record is kept only when its copy is whole (the files and bytes it recorded are
 * there); a record whose copy is missing or incomplete goes, with the copy. A copy no record
 * names cannot be checked: it goes, and its number stays taken (a refused record), so
 * `<label>@<n>` never names two different copies. A candidate (its crawl was cut by the backup)
 * becomes a release if the pointer names it and it is whole, else it is refused. A pointer naming
 * a copy that went then names the label's newest whole release, or nothing. A copy still at its
 * candidate folder goes (its crawl does not resume).
 */
import type { Storage } from '../../infra/storage.js';
import { candidateNumberOf, releaseKeys, releaseNumberOf } from './keys.js';
import type { ReleaseRow, ReleasesRepository } from './repository.js';

/** What the reconcile changed for one label. */
export interface RestoredLabelReleases {
  productId: string;
  label: string;
  /** Records dropped because their copy was missing or incomplete. */
  dropped: number[];
  /** Copies no record named, removed (their numbers stay taken). */
  unrecorded: number[];
  /** The release the pointer names now, and what it named as restored. */
  current: number | null;
  restoredCurrent: number | null;
}

/** Whether the copy holds exactly the files and bytes its record counted when it was made. */
async function whole(storage: Storage, key: string, row: ReleaseRow): Promise<boolean> {
  const { files: [files], size } = await storage.fileLinks([key]);
  if (!files) return false;
  let bytes = 0;
  for (const i of files) bytes += size[i]!;
  return files.length === row.files && bytes === row.bytes;
}

export async function reconcileRestoredReleases(
  storage: Storage,
  repo: ReleasesRepository,
  productIds: string[],
  now: () => Date = () => new Date(),
): Promise<RestoredLabelReleases[]> {
  const changes: RestoredLabelReleases[] = [];
  for (const productId of productIds) {
    const rows = await repo.forProduct(productId);
    const labels = new Set([...rows.map((r) => r.label), ...((await storage.listNames(`${productId}/releases`)) ?? [])]);
    for (const label of labels) {
      const pointer = releaseKeys.pointer(productId, label);
      const restoredCurrent = releaseNumberOf(storage.pointer(pointer));
      const names = (await storage.listNames(releaseKeys.folder(productId, label))) ?? [];
      const onDisk = new Set(names.map(releaseNumberOf).filter((n): n is number => n !== null));
      const change: RestoredLabelReleases = { productId, label, dropped: [], unrecorded: [], current: null, restoredCurrent };
      // Copies whose crawl the backup cut (`candidate-<n>-<secret>`): no crawl resumes them after
      // a restore, so they go; a number no record holds stays taken.
      const recorded = new Set(rows.filter((r) => r.label === label).map((r) => r.number));
      for (const name of names) {
        const n = candidateNumberOf(name);
        if (n === null) continue;
        await storage.removeTree(`${releaseKeys.folder(productId, label)}/${name}`);
        if (!recorded.has(n) && !onDisk.has(n)) {
          await repo.reserve(productId, label, n, now().toISOString());
          recorded.add(n);
        }
      }
      const kept: number[] = [];
      for (const row of rows.filter((r) => r.label === label)) {
        const tree = releaseKeys.tree(productId, label, row.number);
        const present = onDisk.delete(row.number);
        if (row.status === 'refused') {
          if (present) await storage.removeTree(tree);
          continue;
        }
        const ok = present && (await whole(storage, tree, row));
        if (row.status === 'released' && ok) kept.push(row.number);
        else if (row.status === 'candidate' && ok && restoredCurrent === row.number) {
          // Its crawl passed after the snapshot: the pointer moves only then.
          await repo.markReleased(productId, label, row.number, row.created_at, null);
          kept.push(row.number);
        } else {
          if (present) await storage.removeTree(tree);
          if (row.status === 'released') {
            await repo.remove(productId, label, row.number);
            change.dropped.push(row.number);
          } else await repo.markRefused(productId, label, row.number);
        }
      }
      for (const n of onDisk) {
        await storage.removeTree(releaseKeys.tree(productId, label, n));
        await repo.reserve(productId, label, n, now().toISOString());
        change.unrecorded.push(n);
      }
      // No pointer stays none (a label withdrawn, or never released); one naming a copy that went
      // moves to the newest whole release.
      const target = restoredCurrent === null || kept.includes(restoredCurrent) ? restoredCurrent : kept.length ? Math.max(...kept) : null;
      if (target !== restoredCurrent) await storage.setPointer(pointer, target === null ? null : String(target));
      change.current = target;
      if (change.dropped.length || change.unrecorded.length || target !== restoredCurrent) changes.push(change);
    }
  }
  return changes;
}

/**
 * What a product's release copies hold on disk. A release is a copy of `update-site/<label>/`
 * whose files are hard links to the uploaded ones (releases/service.ts): while the upload folder
 * keeps a file, the release costs nothing; once the vendor replaces or removes it, the release
 * alone keeps its bytes. Those are counted here, each stored file once however many releases
 * link it: a file counts when every name it has is inside `<product>/releases/` (its link count
 * equals the names found there).
 *
 * Two parts of it matter (docs/vendors.md "Releases and the quota"):
 * - `pinned`: files a label's current release links. Downloaders get them; they count in the
 *   product's quota like uploaded files (product_storage.release_bytes / release_files).
 * - the rest: kept earlier releases (for a rollback) and the releases of removed labels. They use
 *   the room the quota leaves, and give it back when the product needs it: the oldest go first.
 */
import type { Storage } from '../../infra/storage.js';
import { candidateNumberOf, releaseKeys, releaseNumberOf } from './keys.js';

export interface Held {
  files: number;
  bytes: number;
}

/** One release copy on disk, as its stored files. */
export interface TreeOnDisk {
  label: string;
  number: number;
  /** The label's pointer names it: downloaders get it. */
  current: boolean;
  /** A copy being crawled (`candidate-<n>-<secret>`): counted, never removed for room. */
  candidate: boolean;
  /** Its folder in storage. */
  key: string;
  /** Its files, one per name, as indexes of their stored bytes (ReleaseHoldings). */
  files: Uint32Array;
}

/**
 * Every release copy of the product on disk (candidates being crawled included), and the count of
 * what they hold. The files are read in the storage's worker (one request for all copies).
 */
export async function releaseHoldings(storage: Storage, productId: string): Promise<{ trees: TreeOnDisk[]; holdings: ReleaseHoldings }> {
  const found: Omit<TreeOnDisk, 'files'>[] = [];
  for (const label of (await storage.listNames(`${productId}/releases`)) ?? []) {
    const current = releaseNumberOf(storage.pointer(releaseKeys.pointer(productId, label)));
    for (const name of (await storage.listNames(releaseKeys.folder(productId, label))) ?? []) {
      const key = `${releaseKeys.folder(productId, label)}/${name}`;
      const number = releaseNumberOf(name);
      if (number !== null) found.push({ label, number, current: number === current, candidate: false, key });
      const copy = candidateNumberOf(name);
      if (copy !== null) found.push({ label, number: copy, current: false, candidate: true, key });
    }
  }
  const links = await storage.fileLinks(found.map((t) => t.key));
  const trees: TreeOnDisk[] = [];
  found.forEach((t, i) => {
    const files = links.files[i];
    if (files) trees.push({ ...t, files }); // else removed meanwhile
  });
  return { trees, holdings: new ReleaseHoldings(links.size, links.links, trees) };
}

/**
 * The count of what release copies hold, and how it changes when copies are removed (`drop`),
 * so a caller can decide which to remove from one walk of the disk.
 */
export class ReleaseHoldings {
  private readonly size: Float64Array;
  /** Names the bytes have in the whole storage. */
  private readonly links: Uint32Array;
  /** Names inside the product's release copies. */
  private readonly inReleases: Uint32Array;
  /** Names inside current release copies. */
  private readonly inCurrent: Uint32Array;

  constructor(size: Float64Array, links: Uint32Array, trees: TreeOnDisk[]) {
    this.size = size;
    this.links = Uint32Array.from(links);
    this.inReleases = new Uint32Array(size.length);
    this.inCurrent = new Uint32Array(size.length);
    for (const t of trees) {
      for (const i of t.files) {
        this.inReleases[i]!++;
        if (t.current) this.inCurrent[i]!++;
      }
    }
  }

  /** Files only releases hold (`all`), and the part of them a current release links (`pinned`). */
  usage(): { all: Held; pinned: Held } {
    const all: Held = { files: 0, bytes: 0 };
    const pinned: Held = { files: 0, bytes: 0 };
    for (let i = 0; i < this.size.length; i++) {
      // Gone, or with a name outside the releases (the upload folder keeps the bytes whatever releases do).
      if (this.links[i] === 0 || this.inReleases[i]! < this.links[i]!) continue;
      all.files++;
      all.bytes += this.size[i]!;
      if (this.inCurrent[i]! > 0) {
        pinned.files++;
        pinned.bytes += this.size[i]!;
      }
    }
    return { all, pinned };
  }

  /** Counts `tree` as removed: the files only it held are freed. */
  drop(tree: TreeOnDisk): void {
    for (const i of tree.files) {
      if (this.links[i] === 0) continue;
      this.links[i]!--;
      this.inReleases[i]!--;
      if (tree.current) this.inCurrent[i]!--;
    }
  }
}

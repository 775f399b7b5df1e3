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
import { releaseKeys, releaseNumberOf } from './keys.js';

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
  /** Ids of its stored files (LinkedFile.id), one per name. */
  ids: string[];
}

interface Inode {
  size: number;
  /** Names the bytes have in the whole storage. */
  links: number;
  /** Names inside the product's release copies. */
  inReleases: number;
  /** Names inside current release copies. */
  inCurrent: number;
}

/** Every release copy of the product on disk (candidates being crawled included). */
export async function releaseTrees(storage: Storage, productId: string): Promise<{ trees: TreeOnDisk[]; inodes: Map<string, Inode> }> {
  const trees: TreeOnDisk[] = [];
  const inodes = new Map<string, Inode>();
  for (const label of (await storage.listNames(`${productId}/releases`)) ?? []) {
    const current = releaseNumberOf(storage.pointer(releaseKeys.pointer(productId, label)));
    for (const name of (await storage.listNames(releaseKeys.folder(productId, label))) ?? []) {
      const number = releaseNumberOf(name);
      if (number === null) continue;
      const files = await storage.fileLinks(releaseKeys.tree(productId, label, number));
      if (files === null) continue; // removed meanwhile
      const tree: TreeOnDisk = { label, number, current: number === current, ids: [] };
      for (const f of files) {
        let inode = inodes.get(f.id);
        if (!inode) {
          inode = { size: f.size, links: f.links, inReleases: 0, inCurrent: 0 };
          inodes.set(f.id, inode);
        }
        // The lowest count seen: a name removed meanwhile lowers it, and must not count twice.
        inode.links = Math.min(inode.links, f.links);
        inode.inReleases++;
        if (tree.current) inode.inCurrent++;
        tree.ids.push(f.id);
      }
      trees.push(tree);
    }
  }
  return { trees, inodes };
}

/**
 * The count of what release copies hold, and how it changes when copies are removed (`drop`),
 * so a caller can decide which to remove from one walk of the disk.
 */
export class ReleaseHoldings {
  private readonly inodes: Map<string, Inode>;

  constructor(inodes: Map<string, Inode>) {
    this.inodes = inodes;
  }

  /** Files only releases hold (`all`), and the part of them a current release links (`pinned`). */
  usage(): { all: Held; pinned: Held } {
    const all: Held = { files: 0, bytes: 0 };
    const pinned: Held = { files: 0, bytes: 0 };
    for (const i of this.inodes.values()) {
      // Names outside the releases (the upload folder) keep the bytes whatever releases do.
      if (i.inReleases < i.links) continue;
      all.files++;
      all.bytes += i.size;
      if (i.inCurrent > 0) {
        pinned.files++;
        pinned.bytes += i.size;
      }
    }
    return { all, pinned };
  }

  /** Counts `tree` as removed: the files only it held are freed. */
  drop(tree: TreeOnDisk): void {
    for (const id of tree.ids) {
      const i = this.inodes.get(id);
      if (!i) continue;
      i.links--;
      i.inReleases--;
      if (tree.current) i.inCurrent--;
      if (i.links <= 0) this.inodes.delete(id);
    }
  }
}

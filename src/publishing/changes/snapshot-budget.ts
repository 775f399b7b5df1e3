/**
 * A byte budget for the node snapshots of one product's releases (tables/changes.ts). A snapshot
 * is written for every release that passes, a compact signature per node: tens of KB for a usual
 * extension, megabytes for a catalog of thousands of nodes, times every kept release of every
 * label. Without a bound one vendor's releases grew the database by tens of MB. So each product's
 * snapshots together stay within `maxBytes` (PIER_RELEASE_SNAPSHOT_BYTES): before one is stored,
 * the product's oldest go until it fits, and one larger than the whole budget is not stored. A
 * release without a snapshot stays served and can be rolled back to; only the changes page no
 * longer offers it for a comparison.
 */
import type { NodeSignature } from './signature.js';
import type { ReleaseNodesRepository } from './repository.js';

export type SnapshotStore = Pick<ReleaseNodesRepository, 'save'>;

export function boundedSnapshots(repo: Pick<ReleaseNodesRepository, 'saveJson' | 'sizes' | 'drop'>, maxBytes: number): SnapshotStore {
  return {
    async save(productId: string, label: string, number: number, nodes: readonly NodeSignature[], createdAt: string): Promise<void> {
      const json = JSON.stringify(nodes);
      const bytes = Buffer.byteLength(json);
      // Its own earlier snapshot (a release crawled again) is replaced, so it does not count.
      const others = (await repo.sizes(productId)).filter((s) => !(s.label === label && s.number === number));
      if (bytes > maxBytes) {
        // Too large to keep at all: an earlier snapshot of this release would compare with nodes it no longer has.
        await repo.drop(productId, label, number);
        return;
      }
      let total = others.reduce((n, s) => n + s.bytes, 0) + bytes;
      for (const s of others) {
        if (total <= maxBytes) break;
        await repo.drop(productId, s.label, s.number);
        total -= s.bytes;
      }
      await repo.saveJson(productId, label, number, json, createdAt);
    },
  };
}

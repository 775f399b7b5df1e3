import { type Kysely, PostgresAdapter, sql } from 'kysely';
import type { PublishingDB } from '../db.js';
import type { NodeRowLike, NodeSignature } from './signature.js';

/** A release whose node snapshot is kept. */
export interface SnapshotKey {
  label: string;
  number: number;
}

/** A stored snapshot and its size (snapshot-budget.ts). */
export interface SnapshotSize extends SnapshotKey {
  bytes: number;
  createdAt: string;
}

/** SQL of release node snapshots (tables/changes.ts). */
export function releaseNodesRepository(db: Kysely<PublishingDB>) {
  // Bytes of the stored JSON text (SQLite's length() of text counts characters).
  const bytesOf = db.getExecutor().adapter instanceof PostgresAdapter ? sql<number>`octet_length(nodes)` : sql<number>`length(cast(nodes as blob))`;
  /** `save` of a snapshot already serialized (`JSON.stringify` of the NodeSignature[]). */
  async function saveJson(productId: string, label: string, number: number, json: string, createdAt: string): Promise<void> {
    await db
      .insertInto('release_nodes')
      .values({ product_id: productId, label, number, nodes: json, created_at: createdAt })
      .onConflict((oc) => oc.columns(['product_id', 'label', 'number']).doUpdateSet({ nodes: json, created_at: createdAt }))
      .execute();
  }

  return {
    /** Stores (or replaces) the node snapshot of a release; its label_releases row must exist. */
    async save(productId: string, label: string, number: number, nodes: readonly NodeSignature[], createdAt: string): Promise<void> {
      await saveJson(productId, label, number, JSON.stringify(nodes), createdAt);
    },

    saveJson,

    /** Every snapshot the product has and its size, oldest first. */
    async sizes(productId: string): Promise<SnapshotSize[]> {
      const rows = await db
        .selectFrom('release_nodes')
        .select(['label', 'number', 'created_at', bytesOf.as('bytes')])
        .where('product_id', '=', productId)
        .orderBy('created_at')
        .orderBy('label')
        .orderBy('number')
        .execute();
      return rows.map((r) => ({ label: r.label, number: Number(r.number), bytes: Number(r.bytes), createdAt: r.created_at }));
    },

    /** Drops one release's snapshot (the release stays; comparisons with it are no longer offered). */
    async drop(productId: string, label: string, number: number): Promise<void> {
      await db.deleteFrom('release_nodes').where('product_id', '=', productId).where('label', '=', label).where('number', '=', number).execute();
    },

    /** The snapshot of a kept, released release (a candidate's or a refused copy's never counts). */
    async find(productId: string, label: string, number: number): Promise<NodeSignature[] | undefined> {
      const row = await db
        .selectFrom('release_nodes as n')
        .innerJoin('label_releases as r', (j) => j.onRef('r.product_id', '=', 'n.product_id').onRef('r.label', '=', 'n.label').onRef('r.number', '=', 'n.number'))
        .select('n.nodes')
        .where('n.product_id', '=', productId)
        .where('n.label', '=', label)
        .where('n.number', '=', number)
        .where('r.status', '=', 'released')
        .executeTakeFirst();
      return row ? (JSON.parse(row.nodes) as NodeSignature[]) : undefined;
    },

    /** The columns of a label's crawled nodes a signature reads (not the icons). */
    async labelNodes(productId: string, label: string): Promise<NodeRowLike[]> {
      const rows = await db
        .selectFrom('crawl_nodes')
        .select(['factory_class', 'name', 'deprecated', 'data'])
        .where('product_id', '=', productId)
        .where('label', '=', label)
        .execute();
      return rows.map((r) => ({ ...r, deprecated: Number(r.deprecated) }));
    },

    /** Which of `factories` the product has crawled in any label: the nodes that have a page (from the index crawl_nodes_factory). */
    async factoriesWithPage(productId: string, factories: readonly string[]): Promise<string[]> {
      if (factories.length === 0) return [];
      const rows = await db.selectFrom('crawl_nodes').select('factory_class').distinct().where('product_id', '=', productId).where('factory_class', 'in', factories).execute();
      return rows.map((r) => r.factory_class);
    },

    /** Every kept, released release of the product with a snapshot, by label, newest first. */
    async list(productId: string): Promise<SnapshotKey[]> {
      const rows = await db
        .selectFrom('release_nodes as n')
        .innerJoin('label_releases as r', (j) => j.onRef('r.product_id', '=', 'n.product_id').onRef('r.label', '=', 'n.label').onRef('r.number', '=', 'n.number'))
        .select(['n.label', 'n.number'])
        .where('n.product_id', '=', productId)
        .where('r.status', '=', 'released')
        .orderBy('n.label')
        .orderBy('n.number', 'desc')
        .execute();
      // PostgreSQL may return integers of a join as strings.
      return rows.map((r) => ({ label: r.label, number: Number(r.number) }));
    },
  };
}

export type ReleaseNodesRepository = ReturnType<typeof releaseNodesRepository>;

import { type Kysely, type Migration, sql } from 'kysely';
import { createPageChangeTriggers } from '../page-change-triggers.js';

/**
 * The nodes of one release of a label (docs/vendors.md#what-changed-between-labels): a compact
 * signature per node (changes/signature.ts), written when the crawl of a release's copy passes.
 * `crawl_nodes` keeps only the label's latest crawl, so without this nothing of an earlier
 * release's nodes would be left to compare with. The row goes with its release (pruned,
 * product deleted).
 */
export interface ReleaseNodesTable {
  product_id: string;
  label: string;
  number: number;
  /** JSON NodeSignature[] sorted by factory class. */
  nodes: string;
  created_at: string;
}

export interface ChangesTables {
  release_nodes: ReleaseNodesTable;
}

export const releaseNodesMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`CREATE TABLE release_nodes (
      product_id varchar(64) NOT NULL,
      label varchar(128) NOT NULL,
      number integer NOT NULL,
      nodes text NOT NULL,
      created_at text NOT NULL,
      PRIMARY KEY (product_id, label, number),
      FOREIGN KEY (product_id, label, number) REFERENCES label_releases (product_id, label, number) ON DELETE CASCADE
    )`.execute(db);
    // The changes page compares releases: a snapshot written or dropped, and a release made,
    // refused or pruned, must move the page change counter (migration 0009) like any other
    // write the public pages are built from.
    await createPageChangeTriggers(db, [
      ['release_nodes', ['INSERT', 'DELETE']],
      ['label_releases', ['INSERT', 'UPDATE', 'DELETE']],
    ]);
  },
};

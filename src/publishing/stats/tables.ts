import { type Kysely, type Migration, sql } from 'kysely';

/**
 * Download counts (issue 20 "Download counts"): how many complete downloads of one artifact (a
 * feature jar by its feature id, or the label's archive: stats/artifact.ts) the download host
 * served on one UTC day. Nothing about the client is stored. No foreign key to products: the
 * download host adds to these rows without knowing the product rows, and a flush must never
 * fail on one of them (it would keep every other increment waiting).
 */
export interface DownloadCountsTable {
  product_id: string;
  label: string;
  /** The UTC day, `YYYY-MM-DD` (text compares in calendar order in both dialects). */
  day: string;
  /** The feature id, or `#archive` for `<label>.zip`. */
  artifact: string;
  downloads: number;
}

export interface StatsTables {
  download_counts: DownloadCountsTable;
}

export const downloadCountsMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`CREATE TABLE download_counts (
      product_id varchar(64) NOT NULL,
      label varchar(128) NOT NULL,
      day char(10) NOT NULL,
      artifact varchar(255) NOT NULL,
      downloads bigint NOT NULL,
      PRIMARY KEY (product_id, label, day, artifact)
    )`.execute(db);
  },
};

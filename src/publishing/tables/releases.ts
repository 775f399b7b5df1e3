import { type Kysely, type Migration, sql } from 'kysely';

/**
 * Releases of a label (docs/vendors.md#releases-a-label-changes-all-at-once). A release is an
 * immutable copy of `update-site/<label>/` taken when an upload is complete; downloaders get the
 * label's current release, which moves in one step. `candidate`: copied and being crawled;
 * `released`: it passed and was (or is) current; `refused`: its crawl found problems and its copy
 * is gone (the row keeps the number taken, so a `<label>@<n>/` address never names two different
 * copies).
 */
export interface LabelReleasesTable {
  product_id: string;
  label: string;
  number: number;
  status: 'candidate' | 'released' | 'refused';
  created_at: string;
  /** When it became current (null while a candidate). */
  released_at: string | null;
  files: number;
  bytes: number;
  /** The product's file change counter when the copy was taken (label_changes.changed_seq compares with it). */
  files_seq: number;
  /** JSON: who released it (a trusted publisher, the vendor's edit token, staff, the automatic crawl). */
  released_by: string | null;
}

export interface ReleasesTables {
  label_releases: LabelReleasesTable;
}

export const labelReleasesMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`CREATE TABLE label_releases (
      product_id varchar(64) NOT NULL REFERENCES products(id) ON DELETE CASCADE,
      label varchar(128) NOT NULL,
      number integer NOT NULL,
      status varchar(16) NOT NULL,
      created_at text NOT NULL,
      released_at text,
      files bigint NOT NULL,
      bytes bigint NOT NULL,
      files_seq bigint NOT NULL,
      released_by text,
      PRIMARY KEY (product_id, label, number)
    )`.execute(db);
  },
};

/**
 * What a product's release copies hold on disk beyond its upload folders (releases/usage.ts):
 * files (and their bytes) whose every name is inside `releases/` and that a label's current
 * release links. Uploads count them against the product's quota with its own files
 * (files/repository.ts); written by each count, after a release is made, refused, rolled back or
 * withdrawn.
 */
export const releaseUsageMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`ALTER TABLE product_storage ADD COLUMN release_bytes bigint NOT NULL DEFAULT 0`.execute(db);
    await sql`ALTER TABLE product_storage ADD COLUMN release_files bigint NOT NULL DEFAULT 0`.execute(db);
  },
};

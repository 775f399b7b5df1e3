import type { Generated } from 'kysely';
import { openMigratedDatabase } from '../infra/database/index.js';
import type { ChangesTables } from './tables/changes.js';
import { publishingMigrations } from './migrations.js';
import type { ReleasesTables } from './tables/releases.js';
import type { StatsTables } from './tables/stats.js';
import type { TrustTables } from './tables/trust.js';

export interface ProductsTable {
  id: string;
  name: string;
  state: 'hidden' | 'live';
  /** JSON of the page fields (ProductFields); `name` is kept in its own column too. */
  fields: string;
  edit_token_hash: string;
  /** Public id of the current edit token, recorded in revisions (never the secret). */
  edit_token_id: string;
  sftp_username: string;
  sftp_password_hash: string;
  created_at: string;
  updated_at: string;
}

export interface ProductRevisionsTable {
  id: string;
  product_id: string;
  created_at: string;
  /** JSON array of field names. */
  changed_fields: string;
  /** JSON object of the new values of those fields. */
  changes: string;
  token_id: string;
  client_address: string;
}

export interface SettingsTable {
  key: string;
  value: string;
}

/** One finished upload (the bytes live in storage; this row makes quotas, labels and stamps cheap). */
export interface ProductFilesTable {
  product_id: string;
  /** Path in the product's tree, e.g. `update-site/5.4/content.jar`. */
  path: string;
  size: number;
  modified_at: string;
  uploaded_at: string;
}

/** Per-product file state: the change counter behind `changeStamp`, usage totals and staff-set limits. */
export interface ProductStorageTable {
  product_id: string;
  change_seq: number;
  last_upload_at: string | null;
  /**
   * Sum of sizes and count of the product's `product_files` rows, kept by triggers on that table
   * (migration 0004) so an SFTP OPEN reads one row instead of summing every file, and the quota
   * check at commit sees a total that cannot drift from the rows.
   */
  used_bytes: Generated<number>;
  used_files: Generated<number>;
  /**
   * Folders of the product below its three fixed ones (migration 0006), counted by MKDIR and
   * RMDIR under the product's lock and set from the disk by a reconcile.
   */
  used_folders: Generated<number>;
  /**
   * Bytes and files the current releases of the product's labels hold that its upload folders no
   * longer have (migration 0015; measured by releases/usage.ts): counted in its quota.
   */
  release_bytes: Generated<number>;
  release_files: Generated<number>;
  /** null = the configured default. */
  quota_bytes: number | null;
  quota_files: number | null;
  max_file_bytes: number | null;
}

/** The latest crawl of one label of a product: its state, summary and integrity report. */
export interface CrawlsTable {
  product_id: string;
  label: string;
  status: 'running' | 'finished';
  url: string;
  started_at: string;
  finished_at: string | null;
  /** The files change counter when the crawl started: a later upload makes it stale. */
  files_seq: number;
  /** JSON CrawlSummary. */
  summary: string;
  /** JSON CrawlProblem[]. */
  problems: string;
  /** JSON InstallableUnit[]. */
  units: string;
  /** The label's platform range, OSGi notation (migration 0012); null: none found, or not crawled since. */
  platform_range?: string | null;
  /** Nodes the latest crawl that replaced the label's nodes stored (migration 0015). */
  node_count?: number | null;
  /** Bytes of those nodes' stored data (crawler/node-limits.ts `nodeBytes`, migration 0015). */
  node_bytes?: number | null;
}

/**
 * When the files of one update-site label (`update-site/<label>/…`) last changed: any add,
 * replace, remove or rename in or out, kept by the triggers on `product_files` (migration 0005).
 * The automatic re-crawl compares `changed_seq` with the crawl's `files_seq` (clock-free), and
 * waits until `changed_at` is older than the settle time. A row outlives its label's files, so
 * a label whose files are all gone is still crawled once (which drops its nodes).
 */
export interface LabelChangesTable {
  product_id: string;
  label: string;
  /** The product's `change_seq` right after the change. */
  changed_seq: number;
  /** Upload time of the file for an add or replace, the database clock for a removal. */
  changed_at: string;
}

/** One node found by the last finished crawl of a label. */
export interface CrawlNodesTable {
  product_id: string;
  label: string;
  factory_class: string;
  name: string;
  /** The product's name when crawled: node search matches it too. */
  product_name: string;
  bundle: string;
  category_path: string;
  /** Named category path, segments joined with ` / `. */
  category_names: string;
  short_description: string;
  deprecated: number;
  /** JSON of the node: description (intro, options, tabs, ports, views, keywords), flags. */
  data: string;
  icon_type: string | null;
  /** Base64 of the icon bytes. */
  icon: string | null;
  /**
   * NODE_SANITIZER_VERSION (crawler/sanitize-node.ts) the description in `data` and the icon went
   * through when stored; 0: rows crawled before migration 0008, stored as read from the jar.
   */
  sanitized: number;
}

/**
 * One row (id 1): a counter raised by triggers (migration 0009) in the same transaction as every
 * write the public pages are built from, so one read of it tells whether any cached page may be
 * out of date (web/page-changes.ts).
 */
export interface PageChangesTable {
  id: number;
  seq: number;
}

/** Every table of the publishing database: these here, and the groups declared in tables/ with their migrations. */
export interface PublishingDB extends TrustTables, ReleasesTables, ChangesTables, StatsTables {
  products: ProductsTable;
  product_revisions: ProductRevisionsTable;
  settings: SettingsTable;
  product_files: ProductFilesTable;
  product_storage: ProductStorageTable;
  crawls: CrawlsTable;
  crawl_nodes: CrawlNodesTable;
  label_changes: LabelChangesTable;
  page_changes: PageChangesTable;
}


/** The ordered migrations (tests migrate part of the way to check a backfill). */
export { publishingMigrations };

/** Opens the publishing database and brings its schema up to date. */
/** Prefix of the publishing service's migration tables (`pier_migrations`): the runner may share the database. */
export const PUBLISHING_MIGRATION_TABLE = 'pier';

export function openPublishingDatabase(url: string) {
  return openMigratedDatabase<PublishingDB>(url, PUBLISHING_MIGRATION_TABLE, publishingMigrations);
}

import { type Kysely, type Migration, sql } from 'kysely';

/**
 * Download counts (README "Download counts"): how many complete downloads of one artifact (a
 * feature jar by its feature id, or the label's archive: stats/artifact.ts) the download host
 * served on one UTC day. No foreign key to products: the download host adds to these rows
 * without knowing the product rows, and a flush must never fail on one of them (it would keep
 * every other increment waiting).
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

/**
 * Installs of one label on one day (its most-downloaded feature's downloads plus its archive's,
 * stats/repository.ts), kept in step with `download_counts` by every write, so that reports
 * read one row per label and day whatever number of features a label has.
 */
export interface DownloadLabelDaysTable {
  product_id: string;
  label: string;
  day: string;
  installs: number;
}

/** Every install of one label so far: what orders a report's labels without reading their days. */
export interface DownloadLabelTotalsTable {
  product_id: string;
  label: string;
  installs: number;
}

/** Installs of every label of a product on one day: a report's and the product page's daily totals. */
export interface DownloadProductDaysTable {
  product_id: string;
  day: string;
  installs: number;
}

/**
 * A download counted today or yesterday, as a keyed hash of the client and the file
 * (stats/client-digest.ts) whose key is that day's row of `download_day_keys`: a file counts
 * once per client and day across every download host sharing the database. Both tables lose
 * a day's rows the day after (stats/counter.ts), so no hash outlives the key that made it
 * guessable, and no address is ever written.
 */
export interface DownloadClientsTable {
  day: string;
  digest: string;
}

export interface DownloadDayKeysTable {
  day: string;
  /** 32 random bytes, hex. */
  secret: string;
}

export interface StatsTables {
  download_counts: DownloadCountsTable;
  download_label_days: DownloadLabelDaysTable;
  download_label_totals: DownloadLabelTotalsTable;
  download_product_days: DownloadProductDaysTable;
  download_clients: DownloadClientsTable;
  download_day_keys: DownloadDayKeysTable;
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

/**
 * The installs rolled up by label and day, by label and by day (filled from the counts so far),
 * and the tables that count a file once per client and day.
 */
export const downloadInstallsMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`CREATE TABLE download_label_days (
      product_id varchar(64) NOT NULL,
      label varchar(128) NOT NULL,
      day char(10) NOT NULL,
      installs bigint NOT NULL,
      PRIMARY KEY (product_id, label, day)
    )`.execute(db);
    await sql`CREATE TABLE download_label_totals (
      product_id varchar(64) NOT NULL,
      label varchar(128) NOT NULL,
      installs bigint NOT NULL,
      PRIMARY KEY (product_id, label)
    )`.execute(db);
    // A report's labels, most installed first (stats/installs-repository.ts topLabels).
    await sql`CREATE INDEX download_label_totals_rank ON download_label_totals (product_id, installs DESC, label)`.execute(db);
    await sql`CREATE TABLE download_product_days (
      product_id varchar(64) NOT NULL,
      day char(10) NOT NULL,
      installs bigint NOT NULL,
      PRIMARY KEY (product_id, day)
    )`.execute(db);
    await sql`CREATE TABLE download_clients (
      day char(10) NOT NULL,
      digest char(22) NOT NULL,
      PRIMARY KEY (day, digest)
    )`.execute(db);
    await sql`CREATE TABLE download_day_keys (
      day char(10) NOT NULL PRIMARY KEY,
      secret char(64) NOT NULL
    )`.execute(db);
    await sql`INSERT INTO download_label_days (product_id, label, day, installs)
      SELECT product_id, label, day,
        max(CASE WHEN artifact <> '#archive' THEN downloads ELSE 0 END) + sum(CASE WHEN artifact = '#archive' THEN downloads ELSE 0 END)
      FROM download_counts GROUP BY product_id, label, day`.execute(db);
    await sql`INSERT INTO download_label_totals (product_id, label, installs)
      SELECT product_id, label, sum(installs) FROM download_label_days GROUP BY product_id, label`.execute(db);
    await sql`INSERT INTO download_product_days (product_id, day, installs)
      SELECT product_id, day, sum(installs) FROM download_label_days GROUP BY product_id, day`.execute(db);
  },
};

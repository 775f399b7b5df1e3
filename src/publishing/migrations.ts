// The publishing database's migrations, in order: each start applies the ones not yet applied
// (infra/database openMigratedDatabase). Later ones live beside the tables they create.
import { type Kysely, type Migration, PostgresAdapter, sql } from 'kysely';
import { releaseNodesMigration } from './tables/changes.js';
import { nodeListsMigration } from './tables/node-lists.js';
import { platformRangesMigration } from './tables/platform-ranges.js';
import { MAX_LABEL_LENGTH } from './model/label-limit.js';
import { createPageChangeTriggers, type WatchedTable } from './page-change-triggers.js';
import { labelReleasesMigration, releaseUsageMigration } from './tables/releases.js';
import { downloadCountsMigration, downloadInstallsMigration } from './tables/stats.js';
import { trustedPublishingMigration, trustRefKindsMigration } from './tables/trust.js';

export const publishingMigrations: Record<string, Migration> = {
  '0001_products': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('products')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('state', 'varchar(16)', (c) => c.notNull().defaultTo('hidden'))
        .addColumn('fields', 'text', (c) => c.notNull())
        .addColumn('edit_token_hash', 'varchar(64)', (c) => c.notNull().unique())
        .addColumn('edit_token_id', 'varchar(32)', (c) => c.notNull())
        .addColumn('sftp_username', 'varchar(64)', (c) => c.notNull().unique())
        .addColumn('sftp_password_hash', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('product_revisions')
        .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
        .addColumn('product_id', 'varchar(64)', (c) => c.notNull().references('products.id').onDelete('cascade'))
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('changed_fields', 'text', (c) => c.notNull())
        .addColumn('changes', 'text', (c) => c.notNull())
        .addColumn('token_id', 'varchar(32)', (c) => c.notNull())
        .addColumn('client_address', 'varchar(64)', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('product_revisions_by_product')
        .on('product_revisions')
        .columns(['product_id', 'created_at'])
        .execute();
      await db.schema
        .createTable('settings')
        .addColumn('key', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0002_files': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('product_files')
        .addColumn('product_id', 'varchar(64)', (c) => c.notNull().references('products.id').onDelete('cascade'))
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('modified_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('uploaded_at', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('product_files_pk', ['product_id', 'path'])
        .execute();
      await db.schema
        .createTable('product_storage')
        .addColumn('product_id', 'varchar(64)', (c) => c.primaryKey().references('products.id').onDelete('cascade'))
        .addColumn('change_seq', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('last_upload_at', 'varchar(32)')
        .addColumn('quota_bytes', 'bigint')
        .addColumn('quota_files', 'bigint')
        .addColumn('max_file_bytes', 'bigint')
        .execute();
    },
  },
  '0003_crawls': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('crawls')
        .addColumn('product_id', 'varchar(64)', (c) => c.notNull().references('products.id').onDelete('cascade'))
        .addColumn('label', 'varchar(64)', (c) => c.notNull())
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('started_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('finished_at', 'varchar(32)')
        .addColumn('files_seq', 'bigint', (c) => c.notNull())
        .addColumn('summary', 'text', (c) => c.notNull())
        .addColumn('problems', 'text', (c) => c.notNull())
        .addColumn('units', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('crawls_pk', ['product_id', 'label'])
        .execute();
      await db.schema
        .createTable('crawl_nodes')
        .addColumn('product_id', 'varchar(64)', (c) => c.notNull().references('products.id').onDelete('cascade'))
        .addColumn('label', 'varchar(64)', (c) => c.notNull())
        .addColumn('factory_class', 'varchar(512)', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('product_name', 'text', (c) => c.notNull())
        .addColumn('bundle', 'text', (c) => c.notNull())
        .addColumn('category_path', 'text', (c) => c.notNull())
        .addColumn('category_names', 'text', (c) => c.notNull())
        .addColumn('short_description', 'text', (c) => c.notNull())
        .addColumn('deprecated', 'integer', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('icon_type', 'varchar(32)')
        .addColumn('icon', 'text')
        .addPrimaryKeyConstraint('crawl_nodes_pk', ['product_id', 'label', 'factory_class'])
        .execute();
      // Full-text search over name, short description, category and product (the node search, /nodes).
      if (db.getExecutor().adapter instanceof PostgresAdapter) {
        // Punctuation becomes spaces first: PostgreSQL's parser would keep "Input/Output" or
        // "a.b.c" as one file/host token, unlike the words a user types (and FTS5 splits).
        await sql`ALTER TABLE crawl_nodes ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('simple', regexp_replace(
          name || ' ' || short_description || ' ' || category_names || ' ' || product_name || ' ' || product_id, '[^[:alnum:]]+', ' ', 'g'))) STORED`.execute(db);
        await sql`CREATE INDEX crawl_nodes_search ON crawl_nodes USING gin (search)`.execute(db);
      } else {
        // FTS5 over the table's rows (external content), kept in step by triggers; crawls
        // only insert and delete node rows, never update them.
        await sql`CREATE VIRTUAL TABLE crawl_nodes_fts USING fts5(name, short_description, category_names, product_name, product_id,
          content='crawl_nodes', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2')`.execute(db);
        await sql`CREATE TRIGGER crawl_nodes_fts_ai AFTER INSERT ON crawl_nodes BEGIN
          INSERT INTO crawl_nodes_fts(rowid, name, short_description, category_names, product_name, product_id)
          VALUES (new.rowid, new.name, new.short_description, new.category_names, new.product_name, new.product_id); END`.execute(db);
        await sql`CREATE TRIGGER crawl_nodes_fts_ad AFTER DELETE ON crawl_nodes BEGIN
          INSERT INTO crawl_nodes_fts(crawl_nodes_fts, rowid, name, short_description, category_names, product_name, product_id)
          VALUES ('delete', old.rowid, old.name, old.short_description, old.category_names, old.product_name, old.product_id); END`.execute(db);
      }
    },
  },
  '0004_file_usage_totals': {
    async up(db: Kysely<unknown>) {
      await sql`ALTER TABLE product_storage ADD COLUMN used_bytes bigint NOT NULL DEFAULT 0`.execute(db);
      await sql`ALTER TABLE product_storage ADD COLUMN used_files bigint NOT NULL DEFAULT 0`.execute(db);
      await sql`INSERT INTO product_storage (product_id, change_seq, used_bytes, used_files)
        SELECT product_id, 1, sum(size), count(*) FROM product_files GROUP BY product_id
        ON CONFLICT (product_id) DO UPDATE SET used_bytes = excluded.used_bytes, used_files = excluded.used_files`.execute(db);
      // Every change of a product_files row moves the totals and counts as a change of the
      // product's files (change_seq), in the statement that changes the row. Deletions only
      // update: a product's rows and its storage row go together when the product is deleted.
      if (db.getExecutor().adapter instanceof PostgresAdapter) {
        await sql`CREATE FUNCTION pier_product_files_usage() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            IF TG_OP = 'INSERT' THEN
              INSERT INTO product_storage (product_id, change_seq, last_upload_at, used_bytes, used_files)
                VALUES (NEW.product_id, 1, NEW.uploaded_at, NEW.size, 1)
                ON CONFLICT (product_id) DO UPDATE SET change_seq = product_storage.change_seq + 1,
                  last_upload_at = NEW.uploaded_at, used_bytes = product_storage.used_bytes + NEW.size,
                  used_files = product_storage.used_files + 1;
            ELSIF TG_OP = 'UPDATE' THEN
              UPDATE product_storage SET used_bytes = used_bytes - OLD.size, used_files = used_files - 1
                WHERE product_id = OLD.product_id;
              UPDATE product_storage SET used_bytes = used_bytes + NEW.size, used_files = used_files + 1,
                change_seq = change_seq + 1,
                last_upload_at = CASE WHEN NEW.uploaded_at <> OLD.uploaded_at THEN NEW.uploaded_at ELSE last_upload_at END
                WHERE product_id = NEW.product_id;
            ELSE
              UPDATE product_storage SET used_bytes = used_bytes - OLD.size, used_files = used_files - 1,
                change_seq = change_seq + 1 WHERE product_id = OLD.product_id;
            END IF;
            RETURN NULL;
          END $$`.execute(db);
        await sql`CREATE TRIGGER product_files_usage AFTER INSERT OR UPDATE OR DELETE ON product_files
          FOR EACH ROW EXECUTE FUNCTION pier_product_files_usage()`.execute(db);
      } else {
        await sql`CREATE TRIGGER product_files_usage_ai AFTER INSERT ON product_files BEGIN
          INSERT INTO product_storage (product_id, change_seq, last_upload_at, used_bytes, used_files)
            VALUES (new.product_id, 1, new.uploaded_at, new.size, 1)
            ON CONFLICT (product_id) DO UPDATE SET change_seq = change_seq + 1, last_upload_at = excluded.last_upload_at,
              used_bytes = used_bytes + excluded.used_bytes, used_files = used_files + 1;
          END`.execute(db);
        await sql`CREATE TRIGGER product_files_usage_au AFTER UPDATE ON product_files BEGIN
          UPDATE product_storage SET used_bytes = used_bytes - old.size, used_files = used_files - 1
            WHERE product_id = old.product_id;
          UPDATE product_storage SET used_bytes = used_bytes + new.size, used_files = used_files + 1,
            change_seq = change_seq + 1,
            last_upload_at = CASE WHEN new.uploaded_at <> old.uploaded_at THEN new.uploaded_at ELSE last_upload_at END
            WHERE product_id = new.product_id;
          END`.execute(db);
        await sql`CREATE TRIGGER product_files_usage_ad AFTER DELETE ON product_files BEGIN
          UPDATE product_storage SET used_bytes = used_bytes - old.size, used_files = used_files - 1,
            change_seq = change_seq + 1 WHERE product_id = old.product_id;
          END`.execute(db);
      }
    },
  },
  '0005_label_changes': {
    async up(db: Kysely<unknown>) {
      const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
      await db.schema
        .createTable('label_changes')
        .addColumn('product_id', 'varchar(64)', (c) => c.notNull().references('products.id').onDelete('cascade'))
        .addColumn('label', 'text', (c) => c.notNull())
        .addColumn('changed_seq', 'bigint', (c) => c.notNull())
        .addColumn('changed_at', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('label_changes_pk', ['product_id', 'label'])
        .execute();
      // The label of a path `update-site/<label>/…` (null for archives, assets, workflows).
      const find = postgres ? 'strpos' : 'instr';
      const labelOf = (p: string) =>
        `CASE WHEN substr(${p}, 1, 12) = 'update-site/' AND ${find}(substr(${p}, 13), '/') > 1 THEN substr(${p}, 13, ${find}(substr(${p}, 13), '/') - 1) END`;
      const dbNow = postgres
        ? `to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
        : `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;

      // Backfill: a label whose latest crawl started after its last upload is up to date (its
      // crawl's counter); any other label with files, or a crawled label whose files changed
      // since (removed before this migration), is due (the product's counter).
      await sql
        .raw(`INSERT INTO label_changes (product_id, label, changed_seq, changed_at)
        SELECT f.product_id, f.label,
          CASE WHEN c.label IS NOT NULL AND c.started_at >= f.last THEN c.files_seq ELSE s.change_seq END, f.last
        FROM (SELECT product_id, ${labelOf('path')} AS label, max(uploaded_at) AS last FROM product_files
              WHERE ${labelOf('path')} IS NOT NULL GROUP BY product_id, ${labelOf('path')}) f
        JOIN product_storage s ON s.product_id = f.product_id
        LEFT JOIN crawls c ON c.product_id = f.product_id AND c.label = f.label`)
        .execute(db);
      await sql
        .raw(`INSERT INTO label_changes (product_id, label, changed_seq, changed_at)
        SELECT c.product_id, c.label, s.change_seq, coalesce(s.last_upload_at, c.started_at)
        FROM crawls c JOIN product_storage s ON s.product_id = c.product_id
        WHERE s.change_seq > c.files_seq
          AND NOT EXISTS (SELECT 1 FROM label_changes l WHERE l.product_id = c.product_id AND l.label = c.label)`)
        .execute(db);

      // The usage triggers of 0004 gain one step, after the product's counter moved (so the
      // label's counter is the new one): an add or a replace records the upload time, a
      // removal the database's clock (no upload time exists for it; it only delays the
      // re-crawl by the settle time, the counter decides whether one is due). Changing only
      // the modification time (SETSTAT) is no change of content. Removals only update, as in
      // 0004: every label with files has its row, and a deleted product takes its rows along.
      if (postgres) {
        await sql
          .raw(`CREATE OR REPLACE FUNCTION pier_product_files_usage() RETURNS trigger LANGUAGE plpgsql AS $$
          DECLARE lbl text;
          BEGIN
            IF TG_OP = 'INSERT' THEN
              INSERT INTO product_storage (product_id, change_seq, last_upload_at, used_bytes, used_files)
                VALUES (NEW.product_id, 1, NEW.uploaded_at, NEW.size, 1)
                ON CONFLICT (product_id) DO UPDATE SET change_seq = product_storage.change_seq + 1,
                  last_upload_at = NEW.uploaded_at, used_bytes = product_storage.used_bytes + NEW.size,
                  used_files = product_storage.used_files + 1;
              lbl := ${labelOf('NEW.path')};
              IF lbl IS NOT NULL THEN
                INSERT INTO label_changes (product_id, label, changed_seq, changed_at)
                  SELECT NEW.product_id, lbl, change_seq, NEW.uploaded_at FROM product_storage WHERE product_id = NEW.product_id
                  ON CONFLICT (product_id, label) DO UPDATE SET changed_seq = excluded.changed_seq, changed_at = excluded.changed_at;
              END IF;
            ELSIF TG_OP = 'UPDATE' THEN
              UPDATE product_storage SET used_bytes = used_bytes - OLD.size, used_files = used_files - 1
                WHERE product_id = OLD.product_id;
              UPDATE product_storage SET used_bytes = used_bytes + NEW.size, used_files = used_files + 1,
                change_seq = change_seq + 1,
                last_upload_at = CASE WHEN NEW.uploaded_at <> OLD.uploaded_at THEN NEW.uploaded_at ELSE last_upload_at END
                WHERE product_id = NEW.product_id;
              lbl := ${labelOf('NEW.path')};
              IF lbl IS NOT NULL AND (NEW.uploaded_at <> OLD.uploaded_at OR NEW.size <> OLD.size) THEN
                INSERT INTO label_changes (product_id, label, changed_seq, changed_at)
                  SELECT NEW.product_id, lbl, change_seq, NEW.uploaded_at FROM product_storage WHERE product_id = NEW.product_id
                  ON CONFLICT (product_id, label) DO UPDATE SET changed_seq = excluded.changed_seq, changed_at = excluded.changed_at;
              END IF;
            ELSE
              UPDATE product_storage SET used_bytes = used_bytes - OLD.size, used_files = used_files - 1,
                change_seq = change_seq + 1 WHERE product_id = OLD.product_id;
              UPDATE label_changes SET changed_at = ${dbNow},
                changed_seq = (SELECT change_seq FROM product_storage WHERE product_id = OLD.product_id)
                WHERE product_id = OLD.product_id AND label = ${labelOf('OLD.path')};
            END IF;
            RETURN NULL;
          END $$`)
          .execute(db);
      } else {
        const step = (row: 'new' | 'old', at: string, when = 'true') =>
          row === 'new'
            ? `INSERT INTO label_changes (product_id, label, changed_seq, changed_at)
            SELECT new.product_id, ${labelOf('new.path')}, change_seq, ${at} FROM product_storage
            WHERE product_id = new.product_id AND ${labelOf('new.path')} IS NOT NULL AND ${when}
            ON CONFLICT (product_id, label) DO UPDATE SET changed_seq = excluded.changed_seq, changed_at = excluded.changed_at;`
            : `UPDATE label_changes SET changed_at = ${at},
            changed_seq = (SELECT change_seq FROM product_storage WHERE product_id = old.product_id)
            WHERE product_id = old.product_id AND label = ${labelOf('old.path')};`;
        // One trigger per event, its statements in order (the product's counter moves first):
        // SQLite gives no order among several triggers on one event.
        await sql`DROP TRIGGER product_files_usage_ai`.execute(db);
        await sql`DROP TRIGGER product_files_usage_au`.execute(db);
        await sql`DROP TRIGGER product_files_usage_ad`.execute(db);
        await sql
          .raw(`CREATE TRIGGER product_files_usage_ai AFTER INSERT ON product_files BEGIN
          INSERT INTO product_storage (product_id, change_seq, last_upload_at, used_bytes, used_files)
            VALUES (new.product_id, 1, new.uploaded_at, new.size, 1)
            ON CONFLICT (product_id) DO UPDATE SET change_seq = change_seq + 1, last_upload_at = excluded.last_upload_at,
              used_bytes = used_bytes + excluded.used_bytes, used_files = used_files + 1;
          ${step('new', 'new.uploaded_at')}
          END`)
          .execute(db);
        await sql
          .raw(`CREATE TRIGGER product_files_usage_au AFTER UPDATE ON product_files BEGIN
          UPDATE product_storage SET used_bytes = used_bytes - old.size, used_files = used_files - 1
            WHERE product_id = old.product_id;
          UPDATE product_storage SET used_bytes = used_bytes + new.size, used_files = used_files + 1,
            change_seq = change_seq + 1,
            last_upload_at = CASE WHEN new.uploaded_at <> old.uploaded_at THEN new.uploaded_at ELSE last_upload_at END
            WHERE product_id = new.product_id;
          ${step('new', 'new.uploaded_at', '(new.uploaded_at <> old.uploaded_at OR new.size <> old.size)')}
          END`)
          .execute(db);
        await sql
          .raw(`CREATE TRIGGER product_files_usage_ad AFTER DELETE ON product_files BEGIN
          UPDATE product_storage SET used_bytes = used_bytes - old.size, used_files = used_files - 1,
            change_seq = change_seq + 1 WHERE product_id = old.product_id;
          ${step('old', dbNow)}
          END`)
          .execute(db);
      }
    },
  },
  '0006_folder_count': {
    async up(db: Kysely<unknown>) {
      // Counted from the disk by the reconcile every start runs (files/service.ts).
      await sql`ALTER TABLE product_storage ADD COLUMN used_folders bigint NOT NULL DEFAULT 0`.execute(db);
    },
  },
  // Labels may be MAX_LABEL_LENGTH characters (files/tree.ts); 0003 made the crawl tables'
  // label columns varchar(64), so on PostgreSQL a longer label failed every crawl pass. SQLite
  // does not enforce a varchar length.
  '0007_crawl_label_length': {
    async up(db: Kysely<unknown>) {
      if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
      for (const table of ['crawls', 'crawl_nodes']) {
        await sql.raw(`ALTER TABLE ${table} ALTER COLUMN label TYPE varchar(${MAX_LABEL_LENGTH})`).execute(db);
      }
    },
  },
  // Node pages served the stored description and icon through the sanitizers on every request;
  // crawls now store them sanitized (crawler/sanitize-node.ts). Existing rows keep what the jar
  // held, marked 0: they are sanitized once when first served, and stored again.
  '0008_crawl_nodes_sanitized': {
    async up(db: Kysely<unknown>) {
      await sql`ALTER TABLE crawl_nodes ADD COLUMN sanitized integer NOT NULL DEFAULT 0`.execute(db);
    },
  },
  // The pages' change counter (PageChangesTable). Raised by triggers, not by the services, so a
  // write from any process (the staff CLI, a second instance, a future service) counts. Crawls
  // only insert and delete node rows; the one update of a node row (storing it sanitized) leaves
  // what a page shows unchanged.
  '0009_page_changes': {
    async up(db: Kysely<unknown>) {
      await sql`CREATE TABLE page_changes (id integer PRIMARY KEY, seq bigint NOT NULL)`.execute(db);
      await sql`INSERT INTO page_changes (id, seq) VALUES (1, 1)`.execute(db);
      const watched: WatchedTable[] = [
        ['products', ['INSERT', 'UPDATE', 'DELETE']],
        ['settings', ['INSERT', 'UPDATE', 'DELETE']],
        ['product_files', ['INSERT', 'UPDATE', 'DELETE']],
        ['crawls', ['INSERT', 'UPDATE', 'DELETE']],
        ['crawl_nodes', ['INSERT', 'DELETE']],
      ];
      if (db.getExecutor().adapter instanceof PostgresAdapter) {
        // Once per transaction (a transaction-local flag), run at COMMIT by the deferred triggers.
        await sql`CREATE FUNCTION pier_page_changed() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            IF coalesce(current_setting('pier.page_changed', true), '') <> '1' THEN
              PERFORM set_config('pier.page_changed', '1', true);
              UPDATE page_changes SET seq = seq + 1 WHERE id = 1;
            END IF;
            RETURN NULL;
          END $$`.execute(db);
      }
      await createPageChangeTriggers(db, watched);
    },
  },
  '0010_label_releases': labelReleasesMigration,
  '0011_trusted_publishing': trustedPublishingMigration,
  '0012_platform_ranges': platformRangesMigration,
  '0013_release_nodes': releaseNodesMigration,
  '0014_download_counts': downloadCountsMigration,
  '0015_download_installs': downloadInstallsMigration,
  '0016_trust_ref_kinds': trustRefKindsMigration,
  '0017_node_lists': nodeListsMigration,
  '0018_release_usage': releaseUsageMigration,
};

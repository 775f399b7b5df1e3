import { type Kysely, sql, type Transaction } from 'kysely';
import { preparedRead, type ReadNow } from '../../infra/database/index.js';
import type { ProductFilesTable, ProductStorageTable, PublishingDB } from '../db.js';

/** All SQL about finished uploads (`product_files`) and per-product file state (`product_storage`). */
export type FileRow = ProductFilesTable;
export type StorageRow = ProductStorageTable;

type Db = Kysely<PublishingDB> | Transaction<PublishingDB>;

/**
 * "path starts with `prefix`", exact and case-sensitive on both databases (SQLite's LIKE ignores
 * ASCII case and has no default escape character). substr counts characters on both.
 */
function startsWith(prefix: string) {
  return sql<boolean>`substr(path, 1, ${[...prefix].length}) = ${prefix}`;
}

async function bump(db: Db, productId: string, now: string): Promise<void> {
  // Every change of a product's files counts once: the page cache and the crawler compare this.
  await db
    .insertInto('product_storage')
    .values({ product_id: productId, change_seq: 1, last_upload_at: now })
    .onConflict((oc) =>
      oc.column('product_id').doUpdateSet({ change_seq: sql`product_storage.change_seq + 1`, last_upload_at: now }),
    )
    .execute();
}

async function bumpOnly(db: Db, productId: string): Promise<void> {
  await db
    .insertInto('product_storage')
    .values({ product_id: productId, change_seq: 1, last_upload_at: null })
    .onConflict((oc) => oc.column('product_id').doUpdateSet({ change_seq: sql`product_storage.change_seq + 1` }))
    .execute();
}

/** What starting an upload needs to know, read in one statement (see `uploadContext`). */
export interface UploadContext {
  files: number;
  bytes: number;
  quota_bytes: number | null;
  quota_files: number | null;
  max_file_bytes: number | null;
  /** Size of the recorded file at the path, null when there is none. */
  existing_size: number | null;
}

const num = (v: unknown) => (v == null ? null : Number(v));

/** `hot.readNow` lets the one read on every SFTP OPEN run synchronously on an idle SQLite connection. */
export function filesRepository(db: Kysely<PublishingDB>, hot: { readNow?: ReadNow } = {}) {
  // One statement instead of three (limits, usage, the file replaced): an SFTP client waits for
  // the OPEN reply of every file, and each query through the pool costs a round trip.
  const uploadContextRead = preparedRead<Record<string, unknown>>(
    { db, readNow: hot.readNow ?? (() => null) },
    sql<Record<string, unknown>>`select u.files, u.bytes, s.quota_bytes, s.quota_files, s.max_file_bytes, f.size as existing_size
      from (select count(*) as files, coalesce(sum(size), 0) as bytes from product_files where product_id = ${''}) u
      left join product_storage s on s.product_id = ${''}
      left join product_files f on f.product_id = ${''} and f.path = ${''}`.compile(db),
  );
  return {
    async uploadContext(productId: string, path: string): Promise<UploadContext> {
      const [r = {}] = await uploadContextRead([productId, productId, productId, path]);
      return {
        files: Number(r.files ?? 0),
        bytes: Number(r.bytes ?? 0),
        quota_bytes: num(r.quota_bytes),
        quota_files: num(r.quota_files),
        max_file_bytes: num(r.max_file_bytes),
        existing_size: num(r.existing_size),
      };
    },

    /** Records a finished upload (new or replacing) and counts the change. */
    async recordUpload(row: FileRow): Promise<void> {
      await db.transaction().execute(async (trx) => {
        await trx
          .insertInto('product_files')
          .values(row)
          .onConflict((oc) =>
            oc.columns(['product_id', 'path']).doUpdateSet({ size: row.size, modified_at: row.modified_at, uploaded_at: row.uploaded_at }),
          )
          .execute();
        await bump(trx, row.product_id, row.uploaded_at);
      });
    },

    async setModifiedAt(productId: string, path: string, modifiedAt: string): Promise<void> {
      await db.transaction().execute(async (trx) => {
        const r = await trx
          .updateTable('product_files')
          .set({ modified_at: modifiedAt })
          .where('product_id', '=', productId)
          .where('path', '=', path)
          .executeTakeFirst();
        if (Number(r.numUpdatedRows) > 0) await bumpOnly(trx, productId);
      });
    },

    async removeFile(productId: string, path: string): Promise<void> {
      await db.transaction().execute(async (trx) => {
        await trx.deleteFrom('product_files').where('product_id', '=', productId).where('path', '=', path).execute();
        await bumpOnly(trx, productId);
      });
    },

    /** Moves one file's row, or every row below a folder, replacing rows at the target. */
    async move(productId: string, from: string, to: string, now: string): Promise<void> {
      await db.transaction().execute(async (trx) => {
        const rows = await trx
          .selectFrom('product_files')
          .selectAll()
          .where('product_id', '=', productId)
          .where((eb) => eb.or([eb('path', '=', from), startsWith(`${from}/`)]))
          .execute();
        await trx
          .deleteFrom('product_files')
          .where('product_id', '=', productId)
          .where((eb) =>
            eb.or([eb('path', '=', from), startsWith(`${from}/`), eb('path', '=', to), startsWith(`${to}/`)]),
          )
          .execute();
        for (const r of rows) {
          await trx
            .insertInto('product_files')
            .values({ ...r, path: to + r.path.slice(from.length), uploaded_at: now })
            .execute();
        }
        await bump(trx, productId, now);
      });
    },

    async find(productId: string, path: string): Promise<FileRow | undefined> {
      return db.selectFrom('product_files').selectAll().where('product_id', '=', productId).where('path', '=', path).executeTakeFirst();
    },

    /** Rows whose path starts with `prefix` (e.g. `update-site/`), in no particular order. */
    async listUnder(productId: string, prefix: string): Promise<FileRow[]> {
      return db
        .selectFrom('product_files')
        .selectAll()
        .where('product_id', '=', productId)
        .where(startsWith(prefix))
        .execute();
    },

    async usage(productId: string): Promise<{ files: number; bytes: number }> {
      const r = await db
        .selectFrom('product_files')
        .select((eb) => [eb.fn.countAll().as('files'), eb.fn.sum('size').as('bytes')])
        .where('product_id', '=', productId)
        .executeTakeFirst();
      // PostgreSQL returns count/sum of bigint as strings; SQLite as numbers (or null for no rows).
      return { files: Number(r?.files ?? 0), bytes: Number(r?.bytes ?? 0) };
    },

    async state(productId: string): Promise<StorageRow | undefined> {
      return db.selectFrom('product_storage').selectAll().where('product_id', '=', productId).executeTakeFirst();
    },

    async setLimits(productId: string, limits: Pick<StorageRow, 'quota_bytes' | 'quota_files' | 'max_file_bytes'>): Promise<void> {
      await db
        .insertInto('product_storage')
        .values({ product_id: productId, change_seq: 0, last_upload_at: null, ...limits })
        .onConflict((oc) => oc.column('product_id').doUpdateSet(limits))
        .execute();
    },
  };
}

export type FilesRepository = ReturnType<typeof filesRepository>;

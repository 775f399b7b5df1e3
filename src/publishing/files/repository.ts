import { type Kysely, PostgresAdapter, type Selectable, sql, type Transaction } from 'kysely';
import { preparedRead, type ReadNow, withParameters } from '../../infra/database/index.js';
import type { ProductFilesTable, ProductStorageTable, PublishingDB } from '../db.js';

/** All SQL about finished uploads (`product_files`) and per-product file state (`product_storage`). */
export type FileRow = ProductFilesTable;
export type StorageRow = Selectable<ProductStorageTable>;

type Db = Kysely<PublishingDB> | Transaction<PublishingDB>;

/**
 * "path starts with `prefix`", exact and case-sensitive on both databases (SQLite's LIKE ignores
 * ASCII case and has no default escape character). substr counts characters on both.
 */
function startsWith(prefix: string) {
  return sql<boolean>`substr(path, 1, ${[...prefix].length}) = ${prefix}`;
}

/**
 * On SQLite, "path starts with `prefix`" as the range of the primary key (product_id, path) it
 * covers, so the index reads just those rows (text compares bytewise, BINARY). PostgreSQL's
 * collation may order `/` apart from bytes, so there it is no condition (`startsWith` decides).
 */
function inRangeOf(prefix: string, postgres: boolean) {
  const last = prefix.charCodeAt(prefix.length - 1);
  // Bytewise, `prefix` + anything sorts below the prefix with its last (ASCII) byte raised.
  if (postgres || prefix === '' || last >= 0x7f) return sql<boolean>`true`;
  const end = prefix.slice(0, -1) + String.fromCharCode(last + 1);
  return sql<boolean>`path >= ${prefix} and path < ${end}`;
}

/** Rows one statement of a folder's move inserts (5 columns each: within SQLite's 32,766 parameters). */
const MOVE_BATCH = 500;

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

/** The product's storage row, created empty when it is not there yet (counts nothing as a change). */
async function ensureStorageRow(db: Db, productId: string): Promise<void> {
  await db
    .insertInto('product_storage')
    .values({ product_id: productId, change_seq: 0, last_upload_at: null })
    .onConflict((oc) => oc.column('product_id').doNothing())
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
  /** The product's files, and what its current releases hold beyond them (counted alike). */
  files: number;
  bytes: number;
  /** The part of `files` and `bytes` that current releases hold (releases/usage.ts). */
  release_files: number;
  release_bytes: number;
  quota_bytes: number | null;
  quota_files: number | null;
  max_file_bytes: number | null;
  /** Size of the recorded file at the path, null when there is none. */
  existing_size: number | null;
}

/** One label's files (or its archive) as the database sums them (`labelTotals`). */
export interface LabelTotalsRow {
  label: string;
  /** `update-site/<label>.zip`, not the folder's files. */
  archive: boolean;
  files: number;
  bytes: number;
  lastUploadAt: string | null;
}

/** The limits a commit is checked against (the product's own, else the configured defaults). */
export interface CommitLimits {
  quotaBytes: number;
  quotaFiles: number;
}

/** Row changes of one product inside `inProductLock` (see there). */
export interface ProductRowChanges {
  /** Records a finished upload (new or replacing) if it fits the quotas; false when it does not (nothing changed). */
  recordUploadWithin(row: Omit<FileRow, 'product_id'>, limits: CommitLimits): Promise<boolean>;
  /** The update trigger counts the change (migration 0004) when a row was there. */
  setModifiedAt(path: string, modifiedAt: string): Promise<void>;
  removeFile(path: string): Promise<void>;
  /** Moves one file's row, or every row below a folder, replacing rows at the target. */
  move(from: string, to: string, now: string): Promise<void>;
  /** Every file row of the product. */
  listAll(): Promise<FileRow[]>;
  /** Records a file found in storage (new or changed), whatever the quotas say: it is served. */
  recordFound(row: Omit<FileRow, 'product_id'>): Promise<void>;
  /** Counts one more folder if the product has fewer than `limit`; false when it has not. */
  addFolderWithin(limit: number): Promise<boolean>;
  removeFolder(): Promise<void>;
  setFolderCount(folders: number): Promise<void>;
}

const num = (v: unknown) => (v == null ? null : Number(v));

/**
 * SQLite file changes of this process, one after the other. One connection already runs its
 * transactions one at a time, but a second connection to the same file in the process (tests,
 * tools) would block synchronously on the write lock held by a transaction that is waiting for
 * the event loop ("database is locked"). One process serves a SQLite file (DESIGN.md), so a
 * process-wide queue serialises every writer of product files.
 */
let sqliteQueue: Promise<unknown> = Promise.resolve();
function inSqliteQueue<T>(run: () => Promise<T>): Promise<T> {
  const result = sqliteQueue.then(run, run);
  sqliteQueue = result.catch(() => {});
  return result;
}

/** `hot.readNow` lets the one read on every SFTP OPEN run synchronously on an idle SQLite connection. */
export function filesRepository(db: Kysely<PublishingDB>, hot: { readNow?: ReadNow } = {}) {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  // One statement instead of three (limits, usage, the file replaced): an SFTP client waits for
  // the OPEN reply of every file. Usage is the running total (migration 0004), one row by key.
  const uploadContextRead = preparedRead<Record<string, unknown>>(
    { db, readNow: hot.readNow ?? (() => null) },
    sql<Record<string, unknown>>`select s.used_files + s.release_files as files, s.used_bytes + s.release_bytes as bytes, s.release_files, s.release_bytes,
        s.quota_bytes, s.quota_files, s.max_file_bytes, f.size as existing_size
      from (select 1 as one) o
      left join product_storage s on s.product_id = ${''}
      left join product_files f on f.product_id = ${''} and f.path = ${''}`.compile(db),
  );

  /**
   * Records a finished upload only if the product's files still fit its quotas with it: usage
   * now (other uploads may have finished since this one began), minus the file it replaces, plus
   * what the current releases of its labels hold beyond the upload folders (releases/usage.ts).
   * One statement; the totals follow through the triggers in the same statement. Compiled once,
   * as every SFTP CLOSE of an upload runs it; the parameters are in the order of the `${}`s.
   */
  const insertWithinQuotaQuery = sql<{ size: number }>`insert into product_files (product_id, path, size, modified_at, uploaded_at)
      select ${''}, ${''}, cast(${0} as bigint), ${''}, ${''}
      where (
        select coalesce(s.used_bytes, 0) + coalesce(s.release_bytes, 0) - coalesce(f.size, 0) + cast(${0} as bigint) <= coalesce(s.quota_bytes, cast(${0} as bigint))
          and (f.size is not null or coalesce(s.used_files, 0) + coalesce(s.release_files, 0) + 1 <= coalesce(s.quota_files, cast(${0} as bigint)))
        from (select 1 as one) o
        left join product_storage s on s.product_id = ${''}
        left join product_files f on f.product_id = ${''} and f.path = ${''}
      )
      on conflict (product_id, path) do update set size = excluded.size, modified_at = excluded.modified_at, uploaded_at = excluded.uploaded_at
      returning size`.compile(db);
  const insertWithinQuota = (trx: Db, row: FileRow, limits: CommitLimits) =>
    trx.executeQuery(
      withParameters(insertWithinQuotaQuery, [
        row.product_id,
        row.path,
        row.size,
        row.modified_at,
        row.uploaded_at,
        row.size,
        limits.quotaBytes,
        limits.quotaFiles,
        row.product_id,
        row.product_id,
        row.path,
      ]),
    );

  /**
   * On PostgreSQL, takes the product's storage row lock (creating the row if need be) before
   * any product_files row: the triggers lock that row after the file row, and a commit holding
   * it while waiting for a file row another statement holds would deadlock. So every change of
   * a product's files takes it first, and they queue instead.
   */
  const lockUsage = async (trx: Db, productId: string) => {
    if (!postgres) return;
    await sql`insert into product_storage (product_id, change_seq) values (${productId}, 0)
      on conflict (product_id) do update set change_seq = product_storage.change_seq`.execute(trx);
  };

  /** Changes of one product's rows, inside a transaction that holds the product's lock. */
  const rowChanges = (trx: Transaction<PublishingDB>, productId: string): ProductRowChanges => ({
    async recordUploadWithin(row: Omit<FileRow, 'product_id'>, limits: CommitLimits): Promise<boolean> {
      return (await insertWithinQuota(trx, { ...row, product_id: productId }, limits)).rows.length > 0;
    },

    async setModifiedAt(path: string, modifiedAt: string): Promise<void> {
      await trx.updateTable('product_files').set({ modified_at: modifiedAt }).where('product_id', '=', productId).where('path', '=', path).execute();
    },

    async removeFile(path: string): Promise<void> {
      await trx.deleteFrom('product_files').where('product_id', '=', productId).where('path', '=', path).execute();
      await bumpOnly(trx, productId);
    },

    async move(from: string, to: string, now: string): Promise<void> {
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
      // A label's folder may hold tens of thousands of files: rows go in batches, and the event
      // loop serves other sessions between them (the transaction keeps the write lock meanwhile;
      // another process's writer waits on timers).
      for (let i = 0; i < rows.length; i += MOVE_BATCH) {
        if (i > 0) await new Promise((r) => setImmediate(r));
        await trx
          .insertInto('product_files')
          .values(rows.slice(i, i + MOVE_BATCH).map((r) => ({ ...r, path: to + r.path.slice(from.length), uploaded_at: now })))
          .execute();
      }
      await bump(trx, productId, now);
    },

    async listAll(): Promise<FileRow[]> {
      return trx.selectFrom('product_files').selectAll().where('product_id', '=', productId).execute();
    },

    async recordFound(row: Omit<FileRow, 'product_id'>): Promise<void> {
      await trx
        .insertInto('product_files')
        .values({ ...row, product_id: productId })
        .onConflict((oc) => oc.columns(['product_id', 'path']).doUpdateSet({ size: row.size, modified_at: row.modified_at, uploaded_at: row.uploaded_at }))
        .execute();
    },

    async addFolderWithin(limit: number): Promise<boolean> {
      await ensureStorageRow(trx, productId);
      const r = await trx
        .updateTable('product_storage')
        .set({ used_folders: sql`used_folders + 1` })
        .where('product_id', '=', productId)
        .where(sql<boolean>`used_folders + 1 <= ${limit}`)
        .executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },

    async removeFolder(): Promise<void> {
      await trx
        .updateTable('product_storage')
        .set({ used_folders: sql`used_folders - 1` })
        .where('product_id', '=', productId)
        .where('used_folders', '>', 0)
        .execute();
    },

    async setFolderCount(folders: number): Promise<void> {
      await ensureStorageRow(trx, productId);
      await trx.updateTable('product_storage').set({ used_folders: folders }).where('product_id', '=', productId).execute();
    },
  });

  /**
   * Runs `work` as one unit with the product's other file changes: in one transaction that
   * holds the product's lock (PostgreSQL: its storage row, taken first; SQLite: the one
   * connection, which a transaction holds until it ends). The files service does the storage
   * step inside `work`, so a record and the file on disk change together, and a failed storage
   * step rolls the record back (a remove landing during a commit's quota check would leave a
   * stored file uncounted).
   */
  const inProductLock = <T>(productId: string, work: (rows: ProductRowChanges) => Promise<T>): Promise<T> => {
    const run = () =>
      db.transaction().execute(async (trx) => {
        await lockUsage(trx, productId);
        return work(rowChanges(trx, productId));
      });
    return postgres ? run() : inSqliteQueue(run);
  };

  return {
    inProductLock,

    async uploadContext(productId: string, path: string): Promise<UploadContext> {
      const [r = {}] = await uploadContextRead([productId, productId, path]);
      return {
        files: Number(r.files ?? 0),
        bytes: Number(r.bytes ?? 0),
        release_files: Number(r.release_files ?? 0),
        release_bytes: Number(r.release_bytes ?? 0),
        quota_bytes: num(r.quota_bytes),
        quota_files: num(r.quota_files),
        max_file_bytes: num(r.max_file_bytes),
        existing_size: num(r.existing_size),
      };
    },

    async find(productId: string, path: string): Promise<FileRow | undefined> {
      return db.selectFrom('product_files').selectAll().where('product_id', '=', productId).where('path', '=', path).executeTakeFirst();
    },

    /**
     * Rows whose path starts with `prefix` (e.g. `update-site/`); with `limit`, the first ones by
     * path (the database's order; callers sort). A prefix of 20,000 files is 20,000 rows: pages
     * ask for a bounded few.
     */
    async listUnder(productId: string, prefix: string, limit?: number): Promise<FileRow[]> {
      let q = db.selectFrom('product_files').selectAll().where('product_id', '=', productId).where(startsWith(prefix)).where(inRangeOf(prefix, postgres));
      // Bytewise on both (PostgreSQL's collation may order otherwise): the first ones are the same.
      if (limit !== undefined) q = q.orderBy(postgres ? sql`path collate "C"` : sql`path`).limit(limit);
      return q.execute();
    },

    /** How many rows `listUnder` would list without a limit, counted by the database. */
    async countUnder(productId: string, prefix: string): Promise<number> {
      const r = await db
        .selectFrom('product_files')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('product_id', '=', productId)
        .where(startsWith(prefix))
        .where(inRangeOf(prefix, postgres))
        .executeTakeFirst();
      return Number(r?.n ?? 0);
    },

    /**
     * Totals of the product's update-site labels, summed by the database: one row per label and
     * kind (its folder's files, or its `update-site/<label>.zip`). A label may hold as many files
     * as the quota allows; reading every row into the serving process to count them cost tens to
     * hundreds of ms per call on the event loop at 20,000 files, and a release calls it several times.
     */
    async labelTotals(productId: string): Promise<LabelTotalsRow[]> {
      const prefix = 'update-site/';
      const slash = postgres ? sql`strpos(rest, '/')` : sql`instr(rest, '/')`;
      // Each row's string work once: the label's end (`slash`), then the label itself.
      const { rows } = await sql<Record<string, unknown>>`
        select label, archive, count(*) as files, sum(size) as bytes, max(uploaded_at) as last_upload_at from (
          select case when slash > 0 then substr(rest, 1, slash - 1)
                      when substr(rest, length(rest) - 3) = '.zip' then substr(rest, 1, length(rest) - 4) end as label,
                 slash = 0 as archive, size, uploaded_at
          from (select rest, ${slash} as slash, size, uploaded_at from (
            select substr(path, ${prefix.length + 1}) as rest, size, uploaded_at from product_files
            where product_id = ${productId} and ${startsWith(prefix)}) f) s
        ) l
        where label is not null
        group by label, archive`.execute(db);
      return rows.map((r) => ({
        label: String(r.label),
        // A boolean on PostgreSQL, 0 or 1 on SQLite.
        archive: r.archive === true || Number(r.archive) === 1,
        files: Number(r.files),
        bytes: Number(r.bytes ?? 0),
        lastUploadAt: r.last_upload_at == null ? null : String(r.last_upload_at),
      }));
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

    /** Every registered product's id (a reconcile at start visits each). */
    async productIds(): Promise<string[]> {
      return (await db.selectFrom('products').select('id').orderBy('id').execute()).map((r) => r.id);
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

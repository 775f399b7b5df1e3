import { type Kysely, PostgresAdapter } from 'kysely';
import type { PublishingDB } from '../db.js';
import type { LabelReleasesTable } from '../tables/releases.js';

export type ReleaseRow = LabelReleasesTable;

export interface ReleasesRepository {
  locked<T>(productId: string, work: (repo: ReleasesRepository) => Promise<T>): Promise<T>;
  allocate(productId: string, label: string, createdAt: string, filesSeq: number): Promise<number>;
  setCounts(productId: string, label: string, number: number, counts: { files: number; bytes: number }): Promise<void>;
  markReleased(productId: string, label: string, number: number, releasedAt: string, releasedBy: string | null): Promise<void>;
  remove(productId: string, label: string, number: number): Promise<void>;
  markRefused(productId: string, label: string, number: number): Promise<void>;
  find(productId: string, label: string, number: number): Promise<ReleaseRow | undefined>;
  forProduct(productId: string): Promise<ReleaseRow[]>;
  forLabel(productId: string, label: string): Promise<ReleaseRow[]>;
  /** Keeps `number` taken with no copy behind it (status refused), unless a row holds it already. */
  reserve(productId: string, label: string, number: number, createdAt: string): Promise<void>;
  /** The product's uploaded files as recorded, and its quota overrides (null: the configured default). */
  room(productId: string): Promise<ProductRoom>;
  /** Records what the product's current releases hold beyond its upload folders (its quota counts it). */
  setUsage(productId: string, held: { files: number; bytes: number }): Promise<void>;
}

export interface ProductRoom {
  usedFiles: number;
  usedBytes: number;
  quotaFiles: number | null;
  quotaBytes: number | null;
}

/** Attempts at taking the next number when another process took it first. */
const NUMBER_ATTEMPTS = 5;

/** SQL of label releases (tables/releases.ts); PostgreSQL's bigint arrives as a string. */
export function releasesRepository(db: Kysely<PublishingDB>): ReleasesRepository {
  const row = (r: ReleaseRow): ReleaseRow => ({
    ...r,
    number: Number(r.number),
    files: Number(r.files),
    bytes: Number(r.bytes),
    files_seq: Number(r.files_seq),
  });

  return {
    /**
     * Runs `work` in one transaction holding the product's row lock (PostgreSQL; SQLite has one
     * writer): moves of a label's current release are decided one at a time across processes.
     */
    async locked<T>(productId: string, work: (repo: ReleasesRepository) => Promise<T>): Promise<T> {
      return db.transaction().execute(async (trx) => {
        let lock = trx.selectFrom('products').select('id').where('id', '=', productId);
        if (trx.getExecutor().adapter instanceof PostgresAdapter) lock = lock.forUpdate();
        await lock.executeTakeFirst();
        return work(releasesRepository(trx));
      });
    },

    /**
     * Takes the label's next release number for a candidate. Numbers are never reused while a
     * row holds them; two processes taking one at once collide on the primary key and the loser
     * takes the next.
     */
    async allocate(productId: string, label: string, createdAt: string, filesSeq: number): Promise<number> {
      for (let attempt = 0; ; attempt++) {
        const top = await db
          .selectFrom('label_releases')
          .select((eb) => eb.fn.max('number').as('top'))
          .where('product_id', '=', productId)
          .where('label', '=', label)
          .executeTakeFirst();
        const number = Number(top?.top ?? 0) + 1;
        try {
          await db
            .insertInto('label_releases')
            .values({ product_id: productId, label, number, status: 'candidate', created_at: createdAt, released_at: null, files: 0, bytes: 0, files_seq: filesSeq, released_by: null })
            .execute();
          return number;
        } catch (e) {
          if (attempt + 1 >= NUMBER_ATTEMPTS) throw e;
        }
      }
    },

    async setCounts(productId: string, label: string, number: number, counts: { files: number; bytes: number }): Promise<void> {
      await db.updateTable('label_releases').set(counts).where('product_id', '=', productId).where('label', '=', label).where('number', '=', number).execute();
    },

    async markReleased(productId: string, label: string, number: number, releasedAt: string, releasedBy: string | null): Promise<void> {
      await db
        .updateTable('label_releases')
        .set({ status: 'released', released_at: releasedAt, released_by: releasedBy })
        .where('product_id', '=', productId)
        .where('label', '=', label)
        .where('number', '=', number)
        .execute();
    },

    async markRefused(productId: string, label: string, number: number): Promise<void> {
      await db.updateTable('label_releases').set({ status: 'refused' }).where('product_id', '=', productId).where('label', '=', label).where('number', '=', number).execute();
    },

    async remove(productId: string, label: string, number: number): Promise<void> {
      await db.deleteFrom('label_releases').where('product_id', '=', productId).where('label', '=', label).where('number', '=', number).execute();
    },

    async find(productId: string, label: string, number: number): Promise<ReleaseRow | undefined> {
      const r = await db.selectFrom('label_releases').selectAll().where('product_id', '=', productId).where('label', '=', label).where('number', '=', number).executeTakeFirst();
      return r && row(r);
    },

    /** Every release and candidate of the product, by label, newest first. */
    async forProduct(productId: string): Promise<ReleaseRow[]> {
      const rows = await db.selectFrom('label_releases').selectAll().where('product_id', '=', productId).orderBy('label').orderBy('number', 'desc').execute();
      return rows.map(row);
    },

    async reserve(productId: string, label: string, number: number, createdAt: string): Promise<void> {
      await db
        .insertInto('label_releases')
        .values({ product_id: productId, label, number, status: 'refused', created_at: createdAt, released_at: null, files: 0, bytes: 0, files_seq: 0, released_by: null })
        .onConflict((oc) => oc.columns(['product_id', 'label', 'number']).doNothing())
        .execute();
    },

    async room(productId: string): Promise<ProductRoom> {
      const r = await db
        .selectFrom('product_storage')
        .select(['used_files', 'used_bytes', 'quota_files', 'quota_bytes'])
        .where('product_id', '=', productId)
        .executeTakeFirst();
      const num = (v: unknown) => (v == null ? null : Number(v));
      return { usedFiles: Number(r?.used_files ?? 0), usedBytes: Number(r?.used_bytes ?? 0), quotaFiles: num(r?.quota_files), quotaBytes: num(r?.quota_bytes) };
    },

    async setUsage(productId: string, held: { files: number; bytes: number }): Promise<void> {
      // Not a change of the product's files: change_seq stays (pages and crawls do not follow it).
      await db
        .insertInto('product_storage')
        .values({ product_id: productId, change_seq: 0, last_upload_at: null, release_files: held.files, release_bytes: held.bytes })
        .onConflict((oc) => oc.column('product_id').doUpdateSet({ release_files: held.files, release_bytes: held.bytes }))
        .execute();
    },

    async forLabel(productId: string, label: string): Promise<ReleaseRow[]> {
      const rows = await db
        .selectFrom('label_releases')
        .selectAll()
        .where('product_id', '=', productId)
        .where('label', '=', label)
        .orderBy('number', 'desc')
        .execute();
      return rows.map(row);
    },
  };
}


import type { Kysely } from 'kysely';
import type { PublishingDB } from '../db.js';

/** Installs of all labels of a product on one day. */
export interface DayInstalls {
  day: string;
  installs: number;
}

/** Installs of one label on one day. */
export interface LabelDayInstalls {
  label: string;
  day: string;
  installs: number;
}

/**
 * The reads behind reports and the product page's chart, each from the rolled-up installs
 * (tables/stats.ts) through its primary key or index: what a read touches is bounded by the
 * days asked for and the labels named, never by how many labels a product has.
 */
export interface InstallsRepository {
  /** Installs per day of the product for `from`…`to` (inclusive), oldest first, days without installs left out (at most one row a day). */
  days(productId: string, from: string, to: string): Promise<DayInstalls[]>;
  /** All installs of the product on days up to `through` (inclusive). */
  totalThrough(productId: string, through: string): Promise<number>;
  /** The `limit` labels with the most installs of all, most first (then by name). */
  topLabels(productId: string, limit: number): Promise<{ label: string; installs: number }[]>;
  /** Every install of one label so far (0 when none). */
  labelTotal(productId: string, label: string): Promise<number>;
  /** Installs per day of the named labels for `from`…`to`, by label then day, days without installs left out. */
  labelDays(productId: string, labels: readonly string[], from: string, to: string): Promise<LabelDayInstalls[]>;
}

export function installsRepository(db: Kysely<PublishingDB>): InstallsRepository {
  return {
    async days(productId, from, to) {
      const rows = await db
        .selectFrom('download_product_days')
        .select(['day', 'installs'])
        .where('product_id', '=', productId)
        .where('day', '>=', from)
        .where('day', '<=', to)
        .where('installs', '>', 0)
        .orderBy('day')
        .execute();
      return rows.map((r) => ({ day: r.day.trim(), installs: Number(r.installs) }));
    },

    async totalThrough(productId, through) {
      const row = await db
        .selectFrom('download_product_days')
        .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('installs'), eb.lit(0)).as('total'))
        .where('product_id', '=', productId)
        .where('day', '<=', through)
        .executeTakeFirst();
      return Number(row?.total ?? 0);
    },

    async topLabels(productId, limit) {
      if (limit <= 0) return [];
      const rows = await db
        .selectFrom('download_label_totals')
        .select(['label', 'installs'])
        .where('product_id', '=', productId)
        .where('installs', '>', 0)
        .orderBy('installs', 'desc')
        .orderBy('label')
        .limit(limit)
        .execute();
      return rows.map((r) => ({ label: r.label, installs: Number(r.installs) }));
    },

    async labelTotal(productId, label) {
      const row = await db.selectFrom('download_label_totals').select('installs').where('product_id', '=', productId).where('label', '=', label).executeTakeFirst();
      return Number(row?.installs ?? 0);
    },

    async labelDays(productId, labels, from, to) {
      if (labels.length === 0) return [];
      const rows = await db
        .selectFrom('download_label_days')
        .select(['label', 'day', 'installs'])
        .where('product_id', '=', productId)
        .where('label', 'in', labels)
        .where('day', '>=', from)
        .where('day', '<=', to)
        .where('installs', '>', 0)
        .orderBy('label')
        .orderBy('day')
        .execute();
      return rows.map((r) => ({ label: r.label, day: r.day.trim(), installs: Number(r.installs) }));
    },
  };
}

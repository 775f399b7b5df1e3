import { type Kysely, sql } from 'kysely';
import type { PublishingDB } from '../db.js';
import { ARCHIVE } from './artifact.js';

/** Downloads to add to one row (stats/tables.ts). */
export interface CountIncrement {
  productId: string;
  label: string;
  day: string;
  artifact: string;
  downloads: number;
}

/** Installs of one label on one day: its most-downloaded feature's count plus its archive's. */
export interface LabelDayInstalls {
  label: string;
  day: string;
  installs: number;
}

export interface DownloadCountsRepository {
  /** Adds every increment to its row (created at 0 when missing), all in one transaction. */
  add(increments: readonly CountIncrement[]): Promise<void>;
  /** Installs per label and day of a product, for days `from`…`to` (inclusive), days without downloads left out. */
  installs(productId: string, from: string, to: string): Promise<LabelDayInstalls[]>;
  /** All installs of a product on days up to `through` (inclusive). */
  totalInstalls(productId: string, through: string): Promise<number>;
}

/** Rows per INSERT: 5 parameters each stays far below SQLite's 32 766 and PostgreSQL's 65 535 bound parameters. */
const ROWS_PER_STATEMENT = 500;

export function downloadCountsRepository(db: Kysely<PublishingDB>): DownloadCountsRepository {
  /**
   * One install or update fetches each feature it installs once (p2 downloads an artifact per
   * installable unit), so a label's installs on a day are its most-fetched feature's downloads;
   * an archive is a whole installation of its own and adds to that.
   */
  const perLabelDay = (productId: string) =>
    db
      .selectFrom('download_counts')
      .select((eb) => [
        'label',
        'day',
        sql<number>`max(case when ${eb.ref('artifact')} <> ${ARCHIVE} then ${eb.ref('downloads')} else 0 end) + sum(case when ${eb.ref('artifact')} = ${ARCHIVE} then ${eb.ref('downloads')} else 0 end)`.as(
          'installs',
        ),
      ])
      .where('product_id', '=', productId)
      .groupBy(['label', 'day']);

  return {
    async add(increments) {
      if (increments.length === 0) return;
      await db.transaction().execute(async (trx) => {
        for (let i = 0; i < increments.length; i += ROWS_PER_STATEMENT) {
          const rows = increments.slice(i, i + ROWS_PER_STATEMENT).map((c) => ({ product_id: c.productId, label: c.label, day: c.day, artifact: c.artifact, downloads: c.downloads }));
          await trx
            .insertInto('download_counts')
            .values(rows)
            // Several download hosts (and the increments a failed flush kept) add to the same row.
            .onConflict((oc) => oc.columns(['product_id', 'label', 'day', 'artifact']).doUpdateSet({ downloads: sql`download_counts.downloads + excluded.downloads` }))
            .execute();
        }
      });
    },

    async installs(productId, from, to) {
      const rows = await perLabelDay(productId).where('day', '>=', from).where('day', '<=', to).orderBy('day').orderBy('label').execute();
      return rows.map((r) => ({ label: r.label, day: r.day, installs: Number(r.installs) }));
    },

    async totalInstalls(productId, through) {
      const row = await db
        .selectFrom(perLabelDay(productId).where('day', '<=', through).as('d'))
        .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('d.installs'), sql<number>`0`).as('total'))
        .executeTakeFirst();
      return Number(row?.total ?? 0);
    },
  };
}

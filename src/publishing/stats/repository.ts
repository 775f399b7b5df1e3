import { type Kysely, sql, type Transaction } from 'kysely';
import type { PublishingDB } from '../db.js';
import { ARCHIVE } from './artifact.js';

/** Downloads to add to one row (tables/stats.ts). */
export interface CountIncrement {
  productId: string;
  label: string;
  day: string;
  artifact: string;
  downloads: number;
}

/** One client's complete download of one file on one day, as its keyed hash (client-digest.ts). */
export interface ClientDownload {
  day: string;
  digest: string;
  productId: string;
  label: string;
  artifact: string;
}

export interface DownloadCountsRepository {
  /** Adds every increment to its row (created at 0 when missing) and to the installs rolled up from it, all in one transaction. */
  add(increments: readonly CountIncrement[]): Promise<void>;
  /**
   * Counts each download whose digest was not counted on its day yet (by any download host
   * sharing the database), in one transaction; returns how many counted.
   */
  addFirst(downloads: readonly ClientDownload[]): Promise<number>;
  /** The key of `day`'s client digests: the stored one, or `candidate` (stored now) when the day has none yet. */
  dayKey(day: string, candidate: string): Promise<string>;
  /** Deletes the client digests and keys of days before `day`, a bounded batch per statement; returns the digests deleted. */
  forgetClientsBefore(day: string): Promise<number>;
}

/** Rows per INSERT: 5 parameters each stays far below SQLite's 32 766 and PostgreSQL's 65 535 bound parameters. */
const ROWS_PER_STATEMENT = 500;
/** Client digests deleted per statement: a day's worth goes in steps that each hold the database briefly. */
const FORGET_BATCH = 2000;

type Db = Kysely<PublishingDB> | Transaction<PublishingDB>;

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const groupKey = (p: string, l: string, d: string) => `${p}\u0000${l}\u0000${d}`;

function chunks<T>(items: readonly T[], size = ROWS_PER_STATEMENT): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * Adds the increments and keeps the rolled-up installs (tables/stats.ts) in step, inside `trx`.
 * Every table is written in one fixed order and every statement's rows sorted by key, so two
 * download hosts flushing at once on PostgreSQL wait for each other's rows instead of
 * deadlocking. A label-day's installs are read locked (an upsert that changes nothing, so a
 * concurrent flush of the same label-day waits for this one to commit), computed again from its
 * counts, and the difference added to the label's and the day's totals.
 */
async function addCounts(trx: Transaction<PublishingDB>, increments: readonly CountIncrement[]): Promise<void> {
  const merged = new Map<string, CountIncrement>();
  for (const c of increments) {
    if (c.downloads <= 0) continue;
    const k = `${groupKey(c.productId, c.label, c.day)}\u0000${c.artifact}`;
    const had = merged.get(k);
    merged.set(k, had ? { ...had, downloads: had.downloads + c.downloads } : c);
  }
  const keys = [...merged.keys()].sort(compare);
  if (keys.length === 0) return;
  for (const part of chunks(keys)) {
    const rows = part.map((k) => {
      const c = merged.get(k) as CountIncrement;
      return { product_id: c.productId, label: c.label, day: c.day, artifact: c.artifact, downloads: c.downloads };
    });
    await trx
      .insertInto('download_counts')
      .values(rows)
      // Several download hosts (and the increments a failed flush kept) add to the same row.
      .onConflict((oc) => oc.columns(['product_id', 'label', 'day', 'artifact']).doUpdateSet({ downloads: sql`download_counts.downloads + excluded.downloads` }))
      .execute();
  }

  const groups = new Map<string, { p: string; l: string; d: string }>();
  for (const c of merged.values()) groups.set(groupKey(c.productId, c.label, c.day), { p: c.productId, l: c.label, d: c.day });
  const ordered = [...groups.keys()].sort(compare).map((k) => groups.get(k) as { p: string; l: string; d: string });
  const labelDelta = new Map<string, number>();
  const dayDelta = new Map<string, number>();
  for (const part of chunks(ordered)) {
    const held = await trx
      .insertInto('download_label_days')
      .values(part.map((g) => ({ product_id: g.p, label: g.l, day: g.d, installs: 0 })))
      .onConflict((oc) => oc.columns(['product_id', 'label', 'day']).doUpdateSet({ installs: sql`download_label_days.installs` }))
      .returning(['product_id', 'label', 'day', 'installs'])
      .execute();
    const before = new Map(held.map((r) => [groupKey(r.product_id, r.label, r.day.trim()), Number(r.installs)]));
    const fresh = await sql<{ product_id: string; label: string; day: string; installs: number | string }>`
      SELECT product_id, label, day,
        max(CASE WHEN artifact <> ${ARCHIVE} THEN downloads ELSE 0 END) + sum(CASE WHEN artifact = ${ARCHIVE} THEN downloads ELSE 0 END) AS installs
      FROM download_counts
      WHERE (product_id, label, day) IN (VALUES ${sql.join(part.map((g) => sql`(${g.p}, ${g.l}, ${g.d})`))})
      GROUP BY product_id, label, day`.execute(trx);
    const now = fresh.rows
      .map((r) => ({ product_id: r.product_id, label: r.label, day: r.day.trim(), installs: Number(r.installs) }))
      .sort((a, b) => compare(groupKey(a.product_id, a.label, a.day), groupKey(b.product_id, b.label, b.day)));
    if (now.length === 0) continue;
    await trx
      .insertInto('download_label_days')
      .values(now)
      .onConflict((oc) => oc.columns(['product_id', 'label', 'day']).doUpdateSet({ installs: sql`excluded.installs` }))
      .execute();
    for (const r of now) {
      const delta = r.installs - (before.get(groupKey(r.product_id, r.label, r.day)) ?? 0);
      if (delta === 0) continue;
      const lk = `${r.product_id}\u0000${r.label}`;
      const dk = `${r.product_id}\u0000${r.day}`;
      labelDelta.set(lk, (labelDelta.get(lk) ?? 0) + delta);
      dayDelta.set(dk, (dayDelta.get(dk) ?? 0) + delta);
    }
  }
  await addTotals(trx, 'download_label_totals', 'label', labelDelta);
  await addTotals(trx, 'download_product_days', 'day', dayDelta);
}

/** Adds each `product\0<second>` delta to its row of a totals table, in key order. */
async function addTotals(trx: Transaction<PublishingDB>, table: 'download_label_totals' | 'download_product_days', second: 'label' | 'day', deltas: Map<string, number>): Promise<void> {
  const keys = [...deltas.keys()].sort(compare);
  for (const part of chunks(keys)) {
    const rows = part.map((k) => {
      const [productId = '', other = ''] = k.split('\u0000');
      return { product_id: productId, [second]: other, installs: deltas.get(k) as number };
    });
    if (table === 'download_label_totals') {
      await trx
        .insertInto(table)
        .values(rows as { product_id: string; label: string; installs: number }[])
        .onConflict((oc) => oc.columns(['product_id', 'label']).doUpdateSet({ installs: sql`download_label_totals.installs + excluded.installs` }))
        .execute();
    } else {
      await trx
        .insertInto(table)
        .values(rows as { product_id: string; day: string; installs: number }[])
        .onConflict((oc) => oc.columns(['product_id', 'day']).doUpdateSet({ installs: sql`download_product_days.installs + excluded.installs` }))
        .execute();
    }
  }
}

export function downloadCountsRepository(db: Kysely<PublishingDB>): DownloadCountsRepository {
  return {
    async add(increments) {
      if (increments.length === 0) return;
      await db.transaction().execute((trx) => addCounts(trx, increments));
    },

    async addFirst(downloads) {
      const byKey = new Map<string, ClientDownload>();
      for (const d of downloads) byKey.set(`${d.day}\u0000${d.digest}`, d);
      if (byKey.size === 0) return 0;
      const keys = [...byKey.keys()].sort(compare);
      return db.transaction().execute(async (trx) => {
        const counted: CountIncrement[] = [];
        for (const part of chunks(keys)) {
          // Only the rows inserted now come back: a digest already stored (counted earlier, or
          // by another download host, whose transaction this one waits for) is skipped.
          const inserted = await trx
            .insertInto('download_clients')
            .values(part.map((k) => ({ day: (byKey.get(k) as ClientDownload).day, digest: (byKey.get(k) as ClientDownload).digest })))
            .onConflict((oc) => oc.columns(['day', 'digest']).doNothing())
            .returning(['day', 'digest'])
            .execute();
          for (const r of inserted) {
            const d = byKey.get(`${r.day.trim()}\u0000${r.digest.trim()}`);
            if (d) counted.push({ productId: d.productId, label: d.label, day: d.day, artifact: d.artifact, downloads: 1 });
          }
        }
        await addCounts(trx, counted);
        return counted.length;
      });
    },

    async dayKey(day, candidate) {
      await db
        .insertInto('download_day_keys')
        .values({ day, secret: candidate })
        .onConflict((oc) => oc.column('day').doNothing())
        .execute();
      const row = await db.selectFrom('download_day_keys').select('secret').where('day', '=', day).executeTakeFirstOrThrow();
      return row.secret.trim();
    },

    async forgetClientsBefore(day) {
      let deleted = 0;
      const days = await db.selectFrom('download_clients').select('day').distinct().where('day', '<', day).execute();
      for (const { day: old } of days) {
        for (;;) {
          const r = await deleteBatch(db, old.trim());
          deleted += r;
          if (r < FORGET_BATCH) break;
          // Between batches, whatever else waits for the database (or this event loop) goes first.
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
      await db.deleteFrom('download_day_keys').where('day', '<', day).execute();
      return deleted;
    },
  };
}

async function deleteBatch(db: Db, day: string): Promise<number> {
  const r = await db
    .deleteFrom('download_clients')
    .where('day', '=', day)
    .where('digest', 'in', (eb) => eb.selectFrom('download_clients').select('digest').where('day', '=', day).limit(FORGET_BATCH))
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

import type { Kysely } from 'kysely';
import { type DialectName, preparedRead, type ReadNow } from '../../infra/database/index.js';
import type { ProductRevisionsTable, ProductsTable, PublishingDB } from '../db.js';

/** All SQL about products, their revisions and the settings table. */
export type ProductRow = ProductsTable;
export type RevisionRow = ProductRevisionsTable;

export function productsRepository(db: Kysely<PublishingDB>, dialect: DialectName, hot: { readNow?: ReadNow } = {}) {
  // Read on every page view: compiled once, synchronous on an idle SQLite connection.
  const stampQuery = preparedRead(
    { db, readNow: hot.readNow ?? (() => null) },
    db
      .selectFrom('products')
      .select(['state', 'updated_at'])
      .select((eb) => eb.selectFrom('settings').select('value').where('key', '=', 'platform_release').as('release'))
      // Node lists on the page come from crawls: a finished crawl changes the key.
      .select((eb) =>
        eb.selectFrom('crawls').select((c) => c.fn.max('crawls.finished_at').as('m')).whereRef('crawls.product_id', '=', 'products.id').as('crawled'),
      )
      .where('id', '=', '')
      .compile(),
  );
  return {
    async insert(row: ProductRow): Promise<void> {
      await db.insertInto('products').values(row).execute();
    },

    async find(id: string): Promise<ProductRow | undefined> {
      return db.selectFrom('products').selectAll().where('id', '=', id).executeTakeFirst();
    },

    async findBySftpUsername(username: string): Promise<ProductRow | undefined> {
      return db.selectFrom('products').selectAll().where('sftp_username', '=', username).executeTakeFirst();
    },

    async list(): Promise<ProductRow[]> {
      return db.selectFrom('products').selectAll().orderBy('id').execute();
    },

    /**
     * What a rendered page depends on in this table, in one cheap read (no fields JSON):
     * the product's state and last change, the platform release setting and the last finished crawl.
     */
    async pageStamp(
      id: string,
    ): Promise<{ state: ProductRow['state']; updated_at: string; release: string | null; crawled: string | null } | undefined> {
      // Parameters in the compiled order: the subquery's key, then the product id.
      const row = (await stampQuery(['platform_release', id]))[0];
      return row ? { state: row.state, updated_at: row.updated_at, release: row.release ?? null, crawled: row.crawled ?? null } : undefined;
    },

    /** Id, last change and last finished crawl of every live product: the catalog's change detector. */
    async liveStamps(): Promise<{ id: string; updated_at: string; crawled: string | null }[]> {
      return db
        .selectFrom('products')
        .select(['id', 'updated_at'])
        .select((eb) =>
          eb.selectFrom('crawls').select((c) => c.fn.max('crawls.finished_at').as('m')).whereRef('crawls.product_id', '=', 'products.id').as('crawled'),
        )
        .where('state', '=', 'live')
        .orderBy('id')
        .execute();
    },

    /** The live products among `ids` (fields included). */
    async findLive(ids: readonly string[]): Promise<ProductRow[]> {
      if (ids.length === 0) return [];
      return db.selectFrom('products').selectAll().where('state', '=', 'live').where('id', 'in', ids).execute();
    },

    /**
     * A rotation of either secret (edit token, SFTP password) also revokes the product's
     * trusted-publishing credentials (tables/trust.ts), in the same transaction: staff rotate
     * because something leaked, and none of the product's credentials issued before may outlive
     * it, nor an SFTP session logged in with one (its next request finds the credential gone).
     */
    async setEditToken(id: string, hash: string, tokenId: string, now: string): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        const r = await trx
          .updateTable('products')
          .set({ edit_token_hash: hash, edit_token_id: tokenId, updated_at: now })
          .where('id', '=', id)
          .executeTakeFirst();
        await trx.deleteFrom('trusted_credentials').where('product_id', '=', id).execute();
        return Number(r.numUpdatedRows) === 1;
      });
    },

    /** See `setEditToken`: revokes the product's trusted-publishing credentials too. */
    async setSftpPassword(id: string, hash: string, now: string): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        const r = await trx.updateTable('products').set({ sftp_password_hash: hash, updated_at: now }).where('id', '=', id).executeTakeFirst();
        await trx.deleteFrom('trusted_credentials').where('product_id', '=', id).execute();
        return Number(r.numUpdatedRows) === 1;
      });
    },

    async setState(id: string, state: ProductRow['state'], now: string): Promise<boolean> {
      const r = await db.updateTable('products').set({ state, updated_at: now }).where('id', '=', id).executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },

    /**
     * Read-modify-write of a product's fields and its revision in one transaction: concurrent
     * PATCHes of one product serialise (row lock on PostgreSQL; SQLite has one writer), and a
     * failure leaves both untouched. `change` returns null to abort without writing.
     */
    async updateFields(
      id: string,
      change: (row: ProductRow) => { name: string; fields: string; now: string; revision: RevisionRow } | null,
    ): Promise<ProductRow | null> {
      return db.transaction().execute(async (trx) => {
        let query = trx.selectFrom('products').selectAll().where('id', '=', id);
        if (dialect === 'postgres') query = query.forUpdate();
        const row = await query.executeTakeFirst();
        if (!row) return null;
        const next = change(row);
        if (!next) return null;
        // updated_at strictly grows with every edit of the row (locked here), even two edits
        // within one millisecond: pages are cached by it, so it must never repeat.
        const updatedAt = laterThan(next.now, row.updated_at);
        await trx
          .updateTable('products')
          .set({ name: next.name, fields: next.fields, updated_at: updatedAt })
          .where('id', '=', id)
          .execute();
        await trx.insertInto('product_revisions').values(next.revision).execute();
        return { ...row, name: next.name, fields: next.fields, updated_at: updatedAt };
      });
    },

    async revisions(id: string, limit: number): Promise<RevisionRow[]> {
      return db
        .selectFrom('product_revisions')
        .selectAll()
        .where('product_id', '=', id)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .execute();
    },

    async getSetting(key: string): Promise<string | undefined> {
      const row = await db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst();
      return row?.value;
    },

    async putSetting(key: string, value: string): Promise<void> {
      await db
        .insertInto('settings')
        .values({ key, value })
        .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
        .execute();
    },
  };
}

export type ProductsRepository = ReturnType<typeof productsRepository>;

/** `now`, or one millisecond after `previous` when the clock has not moved past it. */
function laterThan(now: string, previous: string): string {
  const p = Date.parse(previous);
  return Number.isNaN(p) || Date.parse(now) > p ? now : new Date(p + 1).toISOString();
}

import type { Kysely } from 'kysely';
import type { CrawlNodesTable, CrawlsTable, PublishingDB } from '../db.js';

/** All SQL about crawls and the nodes they found (one latest crawl per product and label). */
export type CrawlRow = CrawlsTable;
export type CrawlNodeRow = CrawlNodesTable;

export function crawlsRepository(db: Kysely<PublishingDB>) {
  return {
    /** Marks a crawl of the label as running (replacing the state, keeping the last nodes until it finishes). */
    async start(row: Pick<CrawlRow, 'product_id' | 'label' | 'url' | 'started_at' | 'files_seq'>): Promise<void> {
      const values: CrawlRow = { ...row, status: 'running', finished_at: null, summary: '{}', problems: '[]', units: '[]' };
      await db
        .insertInto('crawls')
        .values(values)
        .onConflict((oc) =>
          oc.columns(['product_id', 'label']).doUpdateSet({ status: 'running', url: row.url, started_at: row.started_at, files_seq: row.files_seq }),
        )
        .execute();
    },

    /** Stores a finished crawl and replaces the label's nodes, in one transaction: readers see the old or the new index, never a mix. */
    async finish(row: CrawlRow, nodes: CrawlNodeRow[]): Promise<void> {
      await db.transaction().execute(async (trx) => {
        await trx.deleteFrom('crawl_nodes').where('product_id', '=', row.product_id).where('label', '=', row.label).execute();
        for (let i = 0; i < nodes.length; i += 200) await trx.insertInto('crawl_nodes').values(nodes.slice(i, i + 200)).execute();
        await trx
          .insertInto('crawls')
          .values(row)
          .onConflict((oc) =>
            oc.columns(['product_id', 'label']).doUpdateSet({
              status: row.status,
              url: row.url,
              started_at: row.started_at,
              finished_at: row.finished_at,
              files_seq: row.files_seq,
              summary: row.summary,
              problems: row.problems,
              units: row.units,
            }),
          )
          .execute();
      });
    },

    async forProduct(productId: string): Promise<CrawlRow[]> {
      return db.selectFrom('crawls').selectAll().where('product_id', '=', productId).orderBy('label').execute();
    },

    async nodes(productId: string, label: string): Promise<CrawlNodeRow[]> {
      return db
        .selectFrom('crawl_nodes')
        .selectAll()
        .where('product_id', '=', productId)
        .where('label', '=', label)
        .orderBy('category_names')
        .orderBy('name')
        .execute();
    },

    async node(productId: string, label: string, factoryClass: string): Promise<CrawlNodeRow | undefined> {
      return db
        .selectFrom('crawl_nodes')
        .selectAll()
        .where('product_id', '=', productId)
        .where('label', '=', label)
        .where('factory_class', '=', factoryClass)
        .executeTakeFirst();
    },
  };
}

export type CrawlsRepository = ReturnType<typeof crawlsRepository>;

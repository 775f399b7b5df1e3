import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../../infra/database/index.js';
import type { CrawlNodesTable, CrawlsTable, PublishingDB } from '../db.js';

/** All SQL about crawls and the nodes they found (one latest crawl per product and label). */
export type CrawlRow = CrawlsTable;
export type CrawlNodeRow = CrawlNodesTable;

/** Words of a search query: letters and digits only, so nothing reaches FTS5/tsquery syntax. */
/** The start time of a handed-back claim (see `handBack`): older than any claim can be. */
export const HANDED_BACK_AT = '1970-01-01T00:00:00.000Z';

/** A search word this long or longer matches as a prefix; a shorter one only as a whole word (a one-letter prefix matches nearly everything). */
export const SEARCH_PREFIX_MIN = 2;
/** Rows one node search reads at most (the best ranked, or the first by name) before folding them into distinct nodes. */
export const SEARCH_CANDIDATES = 2_000;

/** What a product id looks like (products/slug.ts). */
const PRODUCT_SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

export function searchWords(query: string): string[] {
  return (query.normalize('NFKC').match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 8).map((w) => w.slice(0, 64).toLowerCase());
}

export type NodeHit = Pick<CrawlNodeRow, 'product_id' | 'label' | 'factory_class' | 'name' | 'product_name' | 'category_names' | 'short_description'>;

/** A hit with the start of its icon (base64): enough for its type and pixel size, not the bytes. */
export type NodeSearchHit = NodeHit & Pick<CrawlNodeRow, 'icon_type'> & { icon_head: string | null };

/** A node as lists show it; `icon` holds only the start of the icon's base64 (see `nodeLists`). */
export type NodeListRow = Pick<CrawlNodeRow, 'label' | 'factory_class' | 'name' | 'category_names' | 'short_description' | 'deprecated' | 'icon_type' | 'icon'>;

export interface NodeSearchFilter {
  /** `searchWords` of the query; may be empty when a filter is set. */
  words: string[];
  /** A product id, or null for every product. */
  product: string | null;
  /** A named category path as stored (`A / B`), or null for every category. */
  category: string | null;
  /** Only these labels of these products (the "works with" filter), or null/absent for every label. */
  labels?: readonly { product: string; label: string }[] | null;
  /** Never these labels of these products (withdrawn ones). */
  exceptLabels?: readonly { product: string; label: string }[];
}

export function crawlsRepository(db: Kysely<PublishingDB>, dialect: DialectName) {
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

    /**
     * Stores a finished crawl and replaces the label's nodes (null keeps the previous ones), in
     * one transaction: readers see the old or the new index, never a mix. The platform range, the
     * node count and `nodeBytes` (their stored data, crawler/node-limits.ts) go with the nodes: a
     * crawl that keeps the old nodes keeps the old values too.
     */
    async finish(row: CrawlRow, nodes: CrawlNodeRow[] | null, nodeBytes = 0): Promise<void> {
      await db.transaction().execute(async (trx) => {
        if (nodes) {
          await trx.deleteFrom('crawl_nodes').where('product_id', '=', row.product_id).where('label', '=', row.label).execute();
          for (let i = 0; i < nodes.length; i += 200) {
            // SQLite runs each insert synchronously on the serving loop: between batches the
            // loop serves what needs no database (files, cached pages, SFTP transfers).
            if (i > 0) await new Promise((r) => setImmediate(r));
            await trx.insertInto('crawl_nodes').values(nodes.slice(i, i + 200)).execute();
          }
        }
        await trx
          .insertInto('crawls')
          .values(nodes ? { ...row, node_count: nodes.length, node_bytes: nodeBytes } : row)
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
              ...(nodes ? { platform_range: row.platform_range ?? null, node_count: nodes.length, node_bytes: nodeBytes } : {}),
            }),
          )
          .execute();
      });
    },

    /** Each finished, crawled label's platform range among `productIds` (the catalog's "works with" filter). */
    async platformRanges(productIds: readonly string[]): Promise<{ product_id: string; label: string; platform_range: string }[]> {
      if (productIds.length === 0) return [];
      const rows = await db
        .selectFrom('crawls')
        .select(['product_id', 'label', 'platform_range'])
        .where('product_id', 'in', productIds)
        .where('status', '=', 'finished')
        .where('platform_range', 'is not', null)
        .execute();
      return rows.flatMap((r) => (r.platform_range ? [{ product_id: r.product_id, label: r.label, platform_range: r.platform_range }] : []));
    },

    /**
     * Claims a label for a crawl unless another process holds a fresh claim (several instances
     * may run the automatic re-crawl): one conditional upsert, atomic on both databases.
     * `changedSeq` is the label's change counter the caller saw (label_changes).
     */
    async claim(
      row: Pick<CrawlRow, 'product_id' | 'label' | 'url' | 'started_at' | 'files_seq'>,
      { changedSeq, staleBefore }: { changedSeq: number; staleBefore: string },
    ): Promise<boolean> {
      const values: CrawlRow = { ...row, status: 'running', finished_at: null, summary: '{}', problems: '[]', units: '[]' };
      const r = await db
        .insertInto('crawls')
        .values(values)
        .onConflict((oc) =>
          oc
            .columns(['product_id', 'label'])
            .doUpdateSet({ status: 'running', url: row.url, started_at: row.started_at, files_seq: row.files_seq })
            // A finished crawl that began before the change, or a claim abandoned by a dead
            // process; never a crawl another instance started (or finished) after this change.
            .where((eb) =>
              eb.or([
                eb.and([eb('crawls.status', '=', 'finished'), eb('crawls.files_seq', '<', changedSeq)]),
                eb('crawls.started_at', '<', staleBefore),
              ]),
            ),
        )
        .returning('label')
        .execute();
      return r.length === 1;
    },

    /**
     * A crawl cut short by this process shutting down (SIGTERM): its claim is handed back, so the
     * label is due again at once (`dueLabels`, `claim`: a start before any `staleBefore`) rather
     * than after CLAIM_STALE_MS, and the next start (of any instance) crawls it.
     */
    async handBack(productId: string, label: string, startedAt: string): Promise<void> {
      await db
        .updateTable('crawls')
        .set({ started_at: HANDED_BACK_AT })
        .where('product_id', '=', productId)
        .where('label', '=', label)
        .where('status', '=', 'running')
        .where('started_at', '=', startedAt)
        .execute();
    },

    /**
     * Labels due for the automatic re-crawl: changed (files added, replaced, removed, renamed
     * in or out) after their latest crawl began, the last change at or before `settledBy`; or
     * whose crawl was abandoned (running since before `staleBefore`).
     */
    async dueLabels(settledBy: string, staleBefore: string): Promise<{ product_id: string; label: string; changed_seq: number }[]> {
      const rows = await db
        .selectFrom('label_changes as l')
        .leftJoin('crawls as c', (j) => j.onRef('c.product_id', '=', 'l.product_id').onRef('c.label', '=', 'l.label'))
        .select(['l.product_id', 'l.label', 'l.changed_seq'])
        .where('l.changed_at', '<=', settledBy)
        .where((eb) =>
          eb.or([
            eb('c.label', 'is', null),
            eb('c.files_seq', '<', eb.ref('l.changed_seq')),
            eb.and([eb('c.status', '=', 'running'), eb('c.started_at', '<', staleBefore)]),
          ]),
        )
        .orderBy('l.product_id')
        .orderBy('l.label')
        .execute();
      // PostgreSQL returns bigint as a string.
      return rows.map((r) => ({ ...r, changed_seq: Number(r.changed_seq) }));
    },

    /** Each label's change counter (label_changes): a crawl with a lower `files_seq` is stale. */
    async labelChanges(productId: string): Promise<Map<string, number>> {
      const rows = await db.selectFrom('label_changes').select(['label', 'changed_seq']).where('product_id', '=', productId).execute();
      return new Map(rows.map((r) => [r.label, Number(r.changed_seq)]));
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

    /**
     * The distinct names of a product's nodes, every label together, the first `limit` by name
     * (the catalog's search text): read from the name index alone, never the descriptions.
     */
    async nodeNamesOf(productId: string, limit: number): Promise<string[]> {
      const rows = await db.selectFrom('crawl_nodes').select('name').distinct().where('product_id', '=', productId).orderBy('name').limit(limit).execute();
      return rows.map((r) => r.name);
    },

    /**
     * Node search with filters (vendors.md "Your nodes in the node catalog"): the full-text match of the
     * words when there are any (each word as a prefix, from SEARCH_PREFIX_MIN characters on;
     * FTS5 bm25 on SQLite, ts_rank over the stored tsvector on PostgreSQL), narrowed in SQL to one
     * product and/or one category path (the category and everything below it); without words, a
     * filter alone lists its nodes by name. One hit per product and node (the copy in its highest
     * matching label), so `limit` counts distinct nodes. Live products only.
     *
     * Bounded whatever the catalog holds: at most SEARCH_CANDIDATES rows (the best ranked, or
     * the first by name) are read and folded into distinct nodes; when that many matched, the
     * caller's "more matched" note asks for more words. On SQLite the ranking is done by FTS5
     * over its own index before any node row is read, so the product filter is also put into its
     * MATCH (as a superset, checked exactly after).
     */
    async searchNodes(filter: NodeSearchFilter, limit: number): Promise<NodeSearchHit[]> {
      const { words, product, category } = filter;
      const labels = filter.labels ?? null;
      if (words.length === 0 && product === null && category === null && labels === null) return [];
      if (labels !== null && labels.length === 0) return [];
      const cols = sql`n.product_id, n.label, n.factory_class, n.name, n.product_name, n.category_names, n.short_description, n.icon_type, substr(n.icon, 1, 64) AS icon_head`;
      // A category matches itself and its subcategories: "A / B" selects "A / B" and "A / B / C",
      // compared as a prefix with substr (no LIKE, so % and _ in a name are plain characters).
      const where = [sql`p.state = 'live'`];
      if (product !== null) where.push(sql`n.product_id = ${product}`);
      if (category !== null) where.push(sql`(n.category_names = ${category} OR substr(n.category_names, 1, ${[...category].length + 3}) = ${`${category} / `})`);
      // Row values against a VALUES list: the one form of "pair IN list" both databases take.
      if (labels !== null) where.push(sql`(n.product_id, n.label) IN (VALUES ${sql.join(labels.map((l) => sql`(${l.product}, ${l.label})`))})`);
      const except = filter.exceptLabels ?? [];
      if (except.length > 0) where.push(sql`(n.product_id, n.label) NOT IN (VALUES ${sql.join(except.map((l) => sql`(${l.product}, ${l.label})`))})`);
      const filters = sql.join(where, sql` AND `);
      // Every label's copy of a node is a row: numbered within (product, node) from the highest
      // label down, so that only the highest matching label's copy is kept and the LIMIT counts
      // distinct nodes (filters apply first). A window function: SQLite 3.25+ and PostgreSQL.
      const best = sql`ROW_NUMBER() OVER (PARTITION BY c.product_id, c.factory_class ORDER BY c.label DESC) AS pick`;
      const out = sql`h.product_id, h.label, h.factory_class, h.name, h.product_name, h.category_names, h.short_description, h.icon_type, h.icon_head`;
      let r: { rows: NodeSearchHit[] };
      if (words.length === 0) {
        r = await sql<NodeSearchHit>`SELECT ${out} FROM (SELECT c.*, ${best} FROM (SELECT ${cols} FROM crawl_nodes n JOIN products p ON p.id = n.product_id
          WHERE ${filters} ORDER BY n.name, n.product_id, n.factory_class LIMIT ${SEARCH_CANDIDATES}) c) h
          WHERE h.pick = 1 ORDER BY h.name, h.product_id, h.factory_class LIMIT ${limit}`.execute(db);
      } else if (dialect === 'postgres') {
        const q = words.map((w) => (w.length >= SEARCH_PREFIX_MIN ? `${w}:*` : w)).join(' & ');
        r = await sql<NodeSearchHit>`SELECT ${out} FROM (SELECT c.*, ${best} FROM (SELECT ${cols}, ts_rank(n.search, to_tsquery('simple', ${q})) AS score
          FROM crawl_nodes n JOIN products p ON p.id = n.product_id
          WHERE ${filters} AND n.search @@ to_tsquery('simple', ${q}) ORDER BY score DESC LIMIT ${SEARCH_CANDIDATES}) c) h
          WHERE h.pick = 1 ORDER BY h.score DESC, h.name, h.product_id, h.factory_class
          LIMIT ${limit}`.execute(db);
      } else {
        const terms = words.map((w) => `"${w.replace(/"/g, '""')}"${w.length >= SEARCH_PREFIX_MIN ? '*' : ''}`);
        // A product id (a slug: products/slug.ts) as a phrase of its parts in its column: every
        // row of the product matches it, so the candidates ranked are that product's.
        if (product !== null && PRODUCT_SLUG.test(product)) terms.push(`product_id : "${product.split('-').join(' ')}"`);
        r = await sql<NodeSearchHit>`SELECT ${out} FROM (SELECT c.*, ${best} FROM (SELECT ${cols}, f.score FROM
          (SELECT rowid, bm25(crawl_nodes_fts) AS score FROM crawl_nodes_fts WHERE crawl_nodes_fts MATCH ${terms.join(' ')} ORDER BY score LIMIT ${SEARCH_CANDIDATES}) f
          JOIN crawl_nodes n ON n.rowid = f.rowid JOIN products p ON p.id = n.product_id WHERE ${filters}) c) h
          WHERE h.pick = 1 ORDER BY h.score, h.name, h.product_id, h.factory_class
          LIMIT ${limit}`.execute(db);
      }
      return r.rows;
    },

    /** A product's distinct named category paths, the first `limit` (the node search's category filter offers them). */
    async nodeCategoriesOf(productId: string, limit: number): Promise<string[]> {
      const rows = await db
        .selectFrom('crawl_nodes')
        .select('category_names')
        .distinct()
        .where('product_id', '=', productId)
        .where('category_names', '!=', '')
        .orderBy('category_names')
        .limit(limit)
        .execute();
      return rows.map((r) => r.category_names);
    },

    /** What the node search's filters offer: live products that have nodes, and their category paths. */
    async searchFacets(): Promise<{ products: { id: string; name: string }[]; categories: string[] }> {
      const products = await db
        .selectFrom('crawl_nodes as n')
        .innerJoin('products as p', 'p.id', 'n.product_id')
        .select(['p.id', 'p.name'])
        .where('p.state', '=', 'live')
        .distinct()
        .orderBy('p.name')
        .orderBy('p.id')
        .execute();
      const categories = await db
        .selectFrom('crawl_nodes as n')
        .innerJoin('products as p', 'p.id', 'n.product_id')
        .select('n.category_names')
        .where('p.state', '=', 'live')
        .where('n.category_names', '!=', '')
        .distinct()
        .orderBy('n.category_names')
        .execute();
      return { products, categories: categories.map((c) => c.category_names) };
    },

    /**
     * One page of a label's node list (the product page's first nodes of a label, the label's
     * paged node list), in the order lists show them (category, then name, the index
     * crawl_nodes_list): the columns a list shows, without the stored descriptions, and only the
     * start of each icon (its type and pixel size are in the first bytes; the icon itself is
     * served apart). Reads `limit` rows past `offset` index entries, whatever the label holds.
     */
    async nodeListPage(productId: string, label: string, offset: number, limit: number): Promise<NodeListRow[]> {
      return db
        .selectFrom('crawl_nodes')
        .select(['label', 'factory_class', 'name', 'category_names', 'short_description', 'deprecated', 'icon_type'])
        .select(sql<string | null>`substr(icon, 1, 64)`.as('icon'))
        .where('product_id', '=', productId)
        .where('label', '=', label)
        .orderBy('category_names')
        .orderBy('name')
        .orderBy('factory_class')
        .limit(limit)
        .offset(offset)
        .execute();
    },

    /** Distinct nodes (factory classes) of the product's `labels` together: what a catalog card counts. */
    async distinctNodeCount(productId: string, labels: readonly string[]): Promise<number> {
      if (labels.length === 0) return 0;
      const row = await db
        .selectFrom((eb) =>
          eb.selectFrom('crawl_nodes').select('factory_class').distinct().where('product_id', '=', productId).where('label', 'in', labels).as('d'),
        )
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirst();
      return Number(row?.n ?? 0);
    },

    /**
     * Nodes of the product's `labels` named `name` that are not deprecated (a deprecated node's
     * replacement keeps its name without the mark): at most `limit`, from the name index.
     */
    async currentNodesNamed(productId: string, labels: readonly string[], name: string, limit: number): Promise<{ factory_class: string; name: string }[]> {
      if (labels.length === 0 || name === '') return [];
      return db
        .selectFrom('crawl_nodes')
        .select(['factory_class', 'name'])
        .where('product_id', '=', productId)
        .where('name', '=', name)
        .where('deprecated', '=', 0)
        .where('label', 'in', labels)
        // No ORDER BY: sorting by another column would lead SQLite's planner away from the name index.
        .limit(limit)
        .execute();
    },

    /** One node's rows in every label of the product that has it (node pages list them). */
    async nodeInLabels(productId: string, factoryClass: string): Promise<CrawlNodeRow[]> {
      return db.selectFrom('crawl_nodes').selectAll().where('product_id', '=', productId).where('factory_class', '=', factoryClass).execute();
    },

    /**
     * Stores a node's description (`data`) and icon sanitized by a newer sanitizer than the row's
     * (rows crawled before migration 0008); a row a newer crawl or another instance stored with
     * the same or a later version is left alone. Indexed (searched) columns are not touched.
     */
    async storeSanitized(row: Pick<CrawlNodeRow, 'product_id' | 'label' | 'factory_class' | 'data' | 'icon' | 'icon_type' | 'sanitized'>): Promise<void> {
      await db
        .updateTable('crawl_nodes')
        .set({ data: row.data, icon: row.icon, icon_type: row.icon_type, sanitized: row.sanitized })
        .where('product_id', '=', row.product_id)
        .where('label', '=', row.label)
        .where('factory_class', '=', row.factory_class)
        .where('sanitized', '<', row.sanitized)
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

import { type Kysely, type Migration, sql } from 'kysely';

/**
 * Migration 0015: what lets pages read a big node catalog a bounded part at a time.
 *
 * - `crawls.node_count` / `crawls.node_bytes`: how many nodes the label's latest crawl stored and
 *   the bytes of their stored data (descriptions, icons, listed text), written with the nodes
 *   (crawler/repository.ts `finish`). Pages count a label's nodes from here rather than from its
 *   rows, and the crawl weighs a new label's node data against the product's node data budget
 *   (PIER_NODE_DATA_BYTES) from the other labels' totals here.
 * - `crawl_nodes_list`: a label's nodes in the order lists show them (category, then name), so a
 *   list's first page or any later one reads just its own rows.
 * - `crawl_nodes_factory`: one node's copies across the product's labels (node pages, the
 *   product's distinct node count) without reading every row of the product.
 * - `crawl_nodes_name`: a product's nodes by name (a deprecated node's replacement, the
 *   catalog's search text) without reading their descriptions.
 */
export const nodeListsMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`ALTER TABLE crawls ADD COLUMN node_count integer`.execute(db);
    await sql`ALTER TABLE crawls ADD COLUMN node_bytes bigint`.execute(db);
    await sql`CREATE INDEX crawl_nodes_list ON crawl_nodes (product_id, label, category_names, name, factory_class)`.execute(db);
    await sql`CREATE INDEX crawl_nodes_factory ON crawl_nodes (product_id, factory_class, label)`.execute(db);
    await sql`CREATE INDEX crawl_nodes_name ON crawl_nodes (product_id, name)`.execute(db);
    // Labels crawled before: counted once, here, as `nodeBytes` (crawler/node-limits.ts) counts.
    await sql`UPDATE crawls SET
      node_count = (SELECT count(*) FROM crawl_nodes n WHERE n.product_id = crawls.product_id AND n.label = crawls.label),
      node_bytes = (SELECT coalesce(sum(octet_length(n.data) + coalesce(octet_length(n.icon), 0) + octet_length(n.name) + octet_length(n.short_description)
        + octet_length(n.category_names) + octet_length(n.factory_class)), 0) FROM crawl_nodes n WHERE n.product_id = crawls.product_id AND n.label = crawls.label)`.execute(db);
  },
};

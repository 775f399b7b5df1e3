import type { CrawlNodeRow } from './repository.js';
import type { StoredCrawlResult } from './result.js';
import { NODE_SANITIZER_VERSION } from './sanitize-node.js';

/** A crawl's nodes as `crawl_nodes` rows of the product's label. */
export function nodeRows(productId: string, productName: string, label: string, r: StoredCrawlResult): CrawlNodeRow[] {
  // Built by the crawl's worker (result.ts storedNodeOf): here only the product's columns are added.
  return r.nodes.map((n) => ({
    product_id: productId,
    label,
    factory_class: n.factoryClass,
    name: n.name,
    product_name: productName,
    bundle: n.bundle,
    category_path: n.categoryPath,
    category_names: n.categoryNames.join(' / '),
    short_description: n.shortDescription,
    deprecated: n.deprecated ? 1 : 0,
    data: n.data,
    icon_type: n.icon?.contentType ?? null,
    icon: n.icon?.base64 ?? null,
    // The crawl's worker sanitized the description and the icon (crawl-worker.ts).
    sanitized: NODE_SANITIZER_VERSION,
  }));
}

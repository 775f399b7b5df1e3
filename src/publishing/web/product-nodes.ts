/**
 * The product page's nodes, bounded whatever a vendor's catalog holds: each label's count, the
 * first NODE_PREVIEW nodes of the first NODE_PREVIEW_LABELS labels (best first), and a link to
 * the label's full node list, paged by NODE_LIST_PAGE (`/product/<id>/nodes?label=…&page=…`).
 * A page never holds every node of every label inline.
 *
 * What is read depends on the product's crawls alone (their last finish time, which every crawl
 * that stores nodes moves) and on which labels the page offers, so it is kept per product by
 * those: a PATCH of the page's text, or any other product's change, re-uses it without a query.
 * Each read is bounded: counts come from the crawls' rows (written with the nodes), lists from
 * the index crawl_nodes_list a page at a time, the distinct count from crawl_nodes_factory.
 */
import type { CrawlRow, CrawlsRepository } from '../crawler/repository.js';
import type { LabelNodes } from './model.js';
import { nodeGroupsWithIcons } from './node-presenter.js';

/** Nodes of a label shown on the product page. */
export const NODE_PREVIEW = 30;
/** Labels whose first nodes the product page shows; later ones get a line with their count and list link. */
export const NODE_PREVIEW_LABELS = 6;
/** Nodes per page of a label's node list. */
export const NODE_LIST_PAGE = 100;

/** A label the page offers with an update site, best first. */
export interface OfferedLabel {
  label: string;
  url: string;
  recommended: boolean;
}

export interface ProductNodes {
  /** Labels that have nodes, best first; `groups` empty past NODE_PREVIEW_LABELS. */
  lists: LabelNodes[];
  /** Distinct nodes across those labels (a catalog card's count). */
  distinct: number;
}

/** `/product/<id>/nodes?label=…` (page 1 when `page` is 1). */
export function labelNodesUrl(productId: string, label: string, page = 1): string {
  const q = new URLSearchParams({ label });
  if (page > 1) q.set('page', String(page));
  return `/product/${productId}/nodes?${q.toString()}`;
}

/** Each label's stored node count (written with its nodes; 0 for a label whose crawl stored none). */
export function nodeCounts(crawls: readonly Pick<CrawlRow, 'label' | 'node_count'>[]): Map<string, number> {
  return new Map(crawls.map((c) => [c.label, Number(c.node_count ?? 0)] as const));
}

export function productNodes(crawls: Pick<CrawlsRepository, 'nodeListPage' | 'distinctNodeCount'>, cacheSize = 500) {
  const kept = new Map<string, { key: string; value: ProductNodes }>();

  async function read(productId: string, offered: readonly OfferedLabel[], counts: ReadonlyMap<string, number>): Promise<ProductNodes> {
    const withNodes = offered.filter((l) => (counts.get(l.label) ?? 0) > 0);
    const lists: LabelNodes[] = [];
    for (const [i, l] of withNodes.entries()) {
      const rows = i < NODE_PREVIEW_LABELS ? await crawls.nodeListPage(productId, l.label, 0, NODE_PREVIEW) : [];
      const count = counts.get(l.label) ?? rows.length;
      lists.push({ ...l, count, shown: rows.length, groups: nodeGroupsWithIcons(productId, rows), listUrl: labelNodesUrl(productId, l.label) });
    }
    const distinct = await crawls.distinctNodeCount(
      productId,
      withNodes.map((l) => l.label),
    );
    return { lists, distinct };
  }

  return {
    /**
     * The node lists of the product page for the labels it offers; `crawled` is the product's
     * crawl stamp (the last finish of any of its crawls), read before this.
     */
    async of(productId: string, crawled: string | null, offered: readonly OfferedLabel[], counts: ReadonlyMap<string, number>): Promise<ProductNodes> {
      const key = JSON.stringify([crawled, offered, [...counts]]);
      const hit = kept.get(productId);
      if (hit?.key === key) return hit.value;
      const value = await read(productId, offered, counts);
      kept.delete(productId);
      kept.set(productId, { key, value });
      if (kept.size > cacheSize) kept.delete(kept.keys().next().value as string);
      return value;
    },
  };
}

export type ProductNodesReader = ReturnType<typeof productNodes>;

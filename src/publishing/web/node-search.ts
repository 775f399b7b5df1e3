/**
 * The node search page (`/nodes?q=&product=&category=&works=`) at any catalog size:
 * the search itself runs where `search` runs it (web/catalog-reads.ts: a worker thread with its
 * own connection, bounded by crawler/repository.ts `searchNodes`); the filters' choices come from
 * the catalog index (kept per product by its crawl stamp, web/catalog-index.ts), never from a
 * scan of every node; and answers are kept, bounded by bytes, by the query and by the version of
 * what they are built from: the live products with nodes, their crawls, withdrawn labels and
 * platform ranges. An edit of a product's text changes none of these.
 */
import { createHash } from 'node:crypto';
import { rangeContains } from '../crawler/platform-range.js';
import { type NodeSearchFilter, type NodeSearchHit, searchWords } from '../crawler/repository.js';
import type { LiveProduct } from './catalog-index.js';
import { entityTag } from './entity-tag.js';
import type { NodeSearchModel, Served, SiteInfo } from './model.js';
import { iconSizeOf, nodeSearchHref } from './node-presenter.js';
import { NodeSearchPage } from './node-search-page.js';
import { nodeUrl } from '../model/node-url.js';
import { renderDocument } from './render.js';

export const NODE_SEARCH_LIMIT = 100;
/** Category paths the category filter offers at most (every product's first ones together). */
export const CATEGORY_CHOICES = 500;
/** Bytes of node search answers kept. */
const KEPT_BYTES = 8 * 1024 * 1024;
const ENTRY_OVERHEAD = 1024;

const HTML = 'text/html; charset=utf-8';

/** Sorted here: the databases' collations differ (SQLite compares bytes). */
const byText = (a: string, b: string) => a.localeCompare(b, 'en', { sensitivity: 'base' }) || (a < b ? -1 : a > b ? 1 : 0);

export function nodeSearchPages({
  site,
  live,
  search,
}: {
  site: SiteInfo;
  live: () => Promise<LiveProduct[]>;
  search: (filter: NodeSearchFilter, limit: number) => Promise<NodeSearchHit[]>;
}) {
  const kept = new Map<string, { version: string; answer: { served: Served; model: NodeSearchModel }; cost: number }>();
  let bytes = 0;
  // The catalog index hands out one list per change of anything: its version is computed once.
  const versions = new WeakMap<LiveProduct[], string>();
  const versionOf = (products: LiveProduct[]): string => {
    let v = versions.get(products);
    if (v === undefined) {
      v = createHash('sha256')
        .update(JSON.stringify(products.map((p) => [p.id, p.card.name, p.crawled, p.withdrawn, p.labelRanges])))
        .digest('base64url');
      versions.set(products, v);
    }
    return v;
  };
  const drop = (k: string) => {
    const old = kept.get(k);
    if (!old) return;
    kept.delete(k);
    bytes -= old.cost;
  };

  return {
    /**
     * Node search over live products (one hit per product and node, the copy in its highest
     * label): full text, narrowed by product, category and platform release; a filter without
     * words lists its nodes. At most NODE_SEARCH_LIMIT hits, with a note when more matched.
     */
    async page(query: string, filter: { product?: string | null; category?: string | null; works?: string | null } = {}): Promise<{ served: Served; model: NodeSearchModel }> {
      const product = filter.product || null;
      const category = filter.category || null;
      const works = filter.works || null;
      const products = await live();
      const version = versionOf(products);
      const k = JSON.stringify([query, product, category, works]);
      const hit = kept.get(k);
      if (hit?.version === version) {
        kept.delete(k);
        kept.set(k, hit);
        return hit.answer;
      }
      // "Works with <release>" (a validated release): the labels of live products whose platform range holds it.
      const labels = works
        ? products.flatMap((p) => p.labelRanges.filter((r) => rangeContains(r.range, works)).map((r) => ({ product: p.id, label: r.label })))
        : null;
      // Nodes of withdrawn labels are left out (their update sites answer 410).
      const exceptLabels = products.flatMap((p) => p.withdrawn.map((label) => ({ product: p.id, label })));
      // One hit per product and node (deduplicated in SQL); one more than a page tells that more matched.
      const hits = await search({ words: searchWords(query), product, category, labels, exceptLabels }, NODE_SEARCH_LIMIT + 1);
      const withNodes = products.filter((p) => p.hasNodes);
      const facets = {
        products: withNodes.map((p) => ({ id: p.id, name: p.card.name })).sort((a, b) => byText(a.name, b.name) || byText(a.id, b.id)),
        categories: [...new Set(withNodes.flatMap((p) => p.categories))].sort(byText).slice(0, CATEGORY_CHOICES),
      };
      const model: NodeSearchModel = { query, hits: [], product, category, works, facets, capped: hits.length > NODE_SEARCH_LIMIT };
      for (const h of hits.slice(0, NODE_SEARCH_LIMIT)) {
        const url = nodeUrl(h.product_id, h.factory_class);
        model.hits.push({
          name: h.name,
          url,
          productName: h.product_name,
          productUrl: `/product/${h.product_id}`,
          category: h.category_names,
          shortDescription: h.short_description,
          iconUrl: h.icon_head ? `${url}/icon` : null,
          iconSize: iconSizeOf({ icon: h.icon_head, icon_type: h.icon_type }),
          categoryUrl: h.category_names ? nodeSearchHref({ product: h.product_id, category: h.category_names }) : null,
        });
      }
      const body = Buffer.from(renderDocument(NodeSearchPage({ site, m: model })));
      const answer = { served: { body, type: HTML, etag: entityTag(body) }, model };
      drop(k);
      const cost = body.length + ENTRY_OVERHEAD + k.length + version.length;
      if (cost <= KEPT_BYTES) {
        while (bytes + cost > KEPT_BYTES) drop(kept.keys().next().value as string);
        kept.set(k, { version, answer, cost });
        bytes += cost;
      }
      return answer;
    },
  };
}

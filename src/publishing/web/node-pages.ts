/**
 * Node pages, node icons and a label's paged node list (vendors.md "Your nodes in the node catalog"),
 * each built from a product's rendering (web/service.ts) and served as built until the
 * product's page key changes (a crawl, an upload, a state change): building one reads and
 * renders a bounded part of the catalog (one node's copies, one page of a label), which grows
 * with the vendor's descriptions, so it is not done per request. Bounded by bytes, least
 * recently used dropped first.
 */
import { rasterSize, sniffRasterImage } from '../content/svg.js';
import { DEFAULT_CRAWL_LIMITS } from '../crawler/crawl.js';
import type { NodeDescription } from '../model/nodes.js';
import type { CrawlNodeRow, CrawlsRepository } from '../crawler/repository.js';
import { NODE_SANITIZER_VERSION, sanitizeNode } from '../crawler/sanitize-node.js';
import { entityTag } from './entity-tag.js';
import { LabelNodesPage } from './label-nodes-page.js';
import type { LabelNodesPageModel, NodePageModel, ProductPageModel, Served, SiteInfo } from './model.js';
import { NodePage } from './node-page.js';
import { compareLabelsAsc, descriptionChangedIn, nodeGroupsWithIcons, nodeSearchHref, replacementFor, unmarkedNodeName } from './node-presenter.js';
import { nodeUrl } from '../model/node-url.js';
import { labelNodesUrl, NODE_LIST_PAGE } from './product-nodes.js';
import { renderDocument } from './render.js';

/** An icon stored before migration 0008 larger than this (the crawler's limit) is not shown. */
const STORED_ICON_MAX_BYTES = DEFAULT_CRAWL_LIMITS.maxIconBytes;

export const RASTER_TYPES = { png: 'image/png', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp' } as const;

const HTML = 'text/html; charset=utf-8';

const served = (bytes: Buffer, type: string): Served => ({ body: bytes, type, etag: entityTag(bytes) });

/** What node pages are built from: a product's rendering, by its page key. */
export interface NodePagesProduct {
  key: string;
  input: { id: string };
  model: ProductPageModel;
}

export function nodePages({ site, crawls, cacheBytes }: { site: SiteInfo; crawls: CrawlsRepository; cacheBytes: number }) {
  const nodeServed = new Map<string, { key: string; served: Served | null; bytes: number }>();
  let nodeServedBytes = 0;
  async function cachedNode(r: NodePagesProduct, cacheKey: string, build: () => Promise<Served | null>): Promise<Served | null> {
    const hit = nodeServed.get(cacheKey);
    if (hit?.key === r.key) {
      nodeServed.delete(cacheKey);
      nodeServed.set(cacheKey, hit);
      return hit.served;
    }
    const s = await build();
    const entry = { key: r.key, served: s, bytes: (s?.body.length ?? 0) + 256 };
    const old = nodeServed.get(cacheKey);
    if (old) nodeServedBytes -= old.bytes;
    nodeServed.delete(cacheKey);
    nodeServed.set(cacheKey, entry);
    nodeServedBytes += entry.bytes;
    for (const [k, v] of nodeServed) {
      if (nodeServedBytes <= cacheBytes) break;
      nodeServed.delete(k);
      nodeServedBytes -= v.bytes;
    }
    return s;
  }

  // Rows crawled before migration 0008 (or by an older sanitizer) are sanitized once, here, and
  // stored; concurrent requests for the same row share that one pass.
  const sanitizing = new Map<string, Promise<CrawlNodeRow>>();
  function sanitizedRow(row: CrawlNodeRow): Promise<CrawlNodeRow> | CrawlNodeRow {
    if (row.sanitized >= NODE_SANITIZER_VERSION) return row;
    const k = JSON.stringify([row.product_id, row.label, row.factory_class]);
    let pending = sanitizing.get(k);
    if (!pending) {
      pending = (async () => {
        const data = JSON.parse(row.data) as { description: NodeDescription | null };
        const icon = row.icon && row.icon_type ? { contentType: row.icon_type, base64: row.icon } : null;
        const clean = sanitizeNode(data.description, icon, STORED_ICON_MAX_BYTES);
        const next: CrawlNodeRow = {
          ...row,
          data: JSON.stringify({ ...data, description: clean.description }),
          icon: clean.icon?.base64 ?? null,
          icon_type: clean.icon?.contentType ?? null,
          sanitized: NODE_SANITIZER_VERSION,
        };
        await crawls.storeSanitized(next);
        return next;
      })();
      sanitizing.set(k, pending);
      pending.finally(() => sanitizing.delete(k)).catch(() => {});
    }
    return pending;
  }

  /** The node's row from the label the product page shows (recommended first), sanitized. */
  async function findNodeRow(r: NodePagesProduct, factoryClass: string): Promise<{ row: CrawlNodeRow; label: string; installUrl: string } | null> {
    for (const l of r.model.labels ?? []) {
      if (l.url === null) continue; // the same labels the product page takes its nodes from
      const row = await crawls.node(r.input.id, l.label, factoryClass);
      if (!row) continue;
      return { row: await sanitizedRow(row), label: l.label, installUrl: l.url };
    }
    return null;
  }

  /** A node page's model: the stored description is already sanitized HTML (crawler/sanitize-node.ts). */
  function nodeModel(
    r: NodePagesProduct,
    found: { row: CrawlNodeRow; label: string; installUrl: string },
    all: CrawlNodeRow[],
    replacement: NodePageModel['replacement'],
  ): NodePageModel {
    const { row } = found;
    const id = r.input.id;
    // The labels the product page offers (with an update site) that have this node.
    const offered = (r.model.labels ?? []).filter((l): l is typeof l & { url: string } => l.url !== null);
    const inLabel = new Map(all.map((n) => [n.label, n]));
    const labels = offered
      .filter((l) => inLabel.has(l.label))
      .map((l) => ({ label: l.label, url: l.url, recommended: l.recommended, installed: l.label === found.label }))
      .sort((a, b) => compareLabelsAsc(b.label, a.label));
    const data = JSON.parse(row.data) as { categoryNames: string[]; description: NodeDescription | null; platforms?: string[] | null };
    const url = nodeUrl(id, row.factory_class);
    return {
      productId: id,
      productName: r.model.name,
      productUrl: `/product/${id}`,
      productHidden: r.model.hidden,
      label: found.label,
      installUrl: found.installUrl,
      url: `${site.baseUrl}${url}`,
      name: row.name,
      factoryClass: row.factory_class,
      bundle: row.bundle,
      categoryNames: data.categoryNames,
      deprecated: row.deprecated === 1,
      iconUrl: row.icon ? `${url}/icon` : null,
      iconSize: row.icon && row.icon_type !== 'image/svg+xml' ? rasterSize(Buffer.from(row.icon, 'base64')) : null,
      description: data.description,
      platforms: data.platforms ?? null,
      labelNotice: r.model.labels?.find((l) => l.label === found.label)?.notice ?? null,
      productIconUrl: r.model.iconUrl,
      productColors: r.model.colors,
      labels,
      descriptionChangedIn: descriptionChangedIn(labels.map((l) => inLabel.get(l.label)!)),
      replacement,
      productSearchUrl: nodeSearchHref({ product: id }),
      categorySearchUrl: row.category_names ? nodeSearchHref({ product: id, category: row.category_names }) : null,
    };
  }

  /**
   * A deprecated node's replacement: a current node of the product's offered labels named like it
   * without its mark (node-presenter.ts), looked up by name, never by reading every node.
   */
  async function replacementOf(r: NodePagesProduct, row: CrawlNodeRow): Promise<NodePageModel['replacement']> {
    if (row.deprecated !== 1) return null;
    const id = r.input.id;
    const labels = (r.model.labels ?? []).flatMap((l) => (l.url === null ? [] : [l.label]));
    const byClass = (a: { factory_class: string }, b: { factory_class: string }) => (a.factory_class < b.factory_class ? -1 : a.factory_class > b.factory_class ? 1 : 0);
    const named = (await crawls.currentNodesNamed(id, labels, unmarkedNodeName(row.name), 8)).sort(byClass);
    const candidates = named.map((n) => ({ name: n.name, url: nodeUrl(id, n.factory_class), deprecated: false }));
    return replacementFor({ name: row.name, url: nodeUrl(id, row.factory_class) }, candidates);
  }

  return {
    /**
     * One page of a label's node list (`label` null: the best label's), or null: no such label
     * with nodes, or no such page. Reads and renders one page's nodes.
     */
    async labelList(r: NodePagesProduct, label: string | null, page: number): Promise<Served | null> {
      const id = r.input.id;
      const lists = r.model.nodeLabels ?? [];
      const l = label === null ? lists[0] : lists.find((x) => x.label === label);
      if (!l) return null;
      const pages = Math.max(1, Math.ceil(l.count / NODE_LIST_PAGE));
      if (page > pages) return null;
      return cachedNode(r, JSON.stringify(['list', id, l.label, page]), async () => {
        const rows = await crawls.nodeListPage(id, l.label, (page - 1) * NODE_LIST_PAGE, NODE_LIST_PAGE);
        const m: LabelNodesPageModel = {
          productId: id,
          productName: r.model.name,
          productUrl: `/product/${id}`,
          productHidden: r.model.hidden,
          label: l.label,
          recommended: l.recommended,
          count: l.count,
          page,
          pages,
          first: (page - 1) * NODE_LIST_PAGE + 1,
          groups: nodeGroupsWithIcons(id, rows),
          labels: lists.map((x) => ({ label: x.label, count: x.count, url: x.listUrl, current: x.label === l.label })),
          previousUrl: page > 1 ? labelNodesUrl(id, l.label, page - 1) : null,
          nextUrl: page < pages ? labelNodesUrl(id, l.label, page + 1) : null,
        };
        return served(Buffer.from(renderDocument(LabelNodesPage({ site, m }))), HTML);
      });
    },

    /** A node's page, or null. */
    page(r: NodePagesProduct, factoryClass: string): Promise<Served | null> {
      const id = r.input.id;
      return cachedNode(r, JSON.stringify(['page', id, factoryClass]), async () => {
        const found = await findNodeRow(r, factoryClass);
        if (!found) return null;
        // Every label's copy, sanitized alike, so that comparing descriptions compares content.
        const all = await Promise.all((await crawls.nodeInLabels(id, factoryClass)).map((n) => sanitizedRow(n)));
        return served(Buffer.from(renderDocument(NodePage({ site, m: nodeModel(r, found, all, await replacementOf(r, found.row)) }))), HTML);
      });
    },

    /** A node's icon as stored: SVG sanitized by the crawl, rasters checked to be what they claim. */
    icon(r: NodePagesProduct, factoryClass: string): Promise<Served | null> {
      return cachedNode(r, JSON.stringify(['icon', r.input.id, factoryClass]), async () => {
        const row = (await findNodeRow(r, factoryClass))?.row;
        if (!row?.icon || !row.icon_type) return null;
        const bytes = Buffer.from(row.icon, 'base64');
        if (row.icon_type === 'image/svg+xml') return served(bytes, 'image/svg+xml; charset=utf-8');
        const kind = sniffRasterImage(bytes);
        return kind ? served(bytes, RASTER_TYPES[kind]) : null;
      });
    },
  };
}

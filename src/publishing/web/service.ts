// Everything the public pages serve, rendered once per product and cached until something it
// was built from changes (issue 7 "Quality"). Two checks, both read before the content: the
// page change counter (page-changes.ts: one read serves all requests for FRESH_MS, raised by
// every write pages depend on, by any process) says whether anything changed at all; only
// when it moved are the product's own stamps read (state and updated_at of the row, the
// platform release setting, the last crawl, the files' change stamp), so a change to one
// product re-renders that product only. Never a timer: a PATCH, an upload, a staff command in
// another process or a second instance shows on the next request after the counter's bound
// (DESIGN "Changes made by another process"). Because keys are read before the content, a
// change racing a render can only make the cached copy look older than it is (re-rendered
// next time), never newer.
import { withdrawnInFields } from '../notices/notices.js';
import { createHash } from 'node:crypto';
import { versionBadge } from '../content/badge.js';
import { ServiceUnavailableError } from '../../infra/errors.js';
import { type ContentRenderer, PageRenderFailed, RenderDeferred } from '../content/isolated-render.js';
import { type FeedProduct, productFeed, siteFeed } from '../content/feeds.js';
import { rasterSize, sanitizeSvg, sniffRasterImage } from '../content/svg.js';
import type { NodeDescription } from '../crawler/node-description.js';
import { type CrawlNodeRow, type CrawlsRepository, type NodeListRow, searchWords } from '../crawler/repository.js';
import { NODE_SANITIZER_VERSION, sanitizeNode } from '../crawler/sanitize-node.js';
import { DEFAULT_CRAWL_LIMITS } from '../crawler/crawl.js';
import { rangeContains } from '../crawler/platform-range.js';
import { BadRequestPage } from './bad-request-page.js';
import type { ProductFilesReader } from '../files/reader.js';
import type { ProductFields } from '../products/fields.js';
import type { ProductRow, ProductsRepository } from '../products/repository.js';
import type { PageChanges } from './page-changes.js';
import type { ChangesService } from '../changes/service.js';
import type { ChangesAnswer, ChangesPages } from './changes-pages.js';
import { CatalogPage } from './catalog-page.js';
import type { CatalogCard, CatalogPageModel, NodePageModel, NodeSearchModel, ProductPageModel, SiteInfo, Served } from './model.js';
import { NodePage } from './node-page.js';
import { NodeSearchPage } from './node-search-page.js';
import { NotFoundPage } from './not-found-page.js';
import { PAGE_IDS, ProductPage } from './product-page.js';
import { catalogCard, iconVersion, nodeGroups, nodeUrl, type ProductFilesView, type ProductInput, productPageModel } from './presenter.js';
import { renderDocument } from './render.js';
import { feedNotices } from '../notices/view.js';
import type { StatsService } from '../stats/service.js';
import { compareLabelsAsc, descriptionChangedIn, distinctNodes, iconSizeOf, labelNodes, nodeSearchHref, replacementFor, vendorOf } from './node-presenter.js';

export interface PagesServiceDeps {
  repo: ProductsRepository;
  site: SiteInfo;
  /** Uploaded files (labels, workflows) and their change stamp. */
  files: ProductFilesReader;
  /**
   * The release a label's URL serves (releases/service.ts `current`), null: none, the label serves
   * nothing. Moves only inside a crawl, which the page key's last-crawl stamp follows.
   */
  released: (productId: string, label: string) => number | null;
  /** Crawled nodes (issue 11): the product page's node list, node pages and node search. */
  crawls: CrawlsRepository;
  /** Renders the vendor Markdown off the serving event loop, under a time limit. */
  renderer: ContentRenderer;
  /** Whether anything pages depend on changed (the database's page change counter). */
  changes: PageChanges;
  /** What changed between labels (issue 20): the changes page and the product page's link to it. */
  nodeChanges?: { pages: ChangesPages; service: Pick<ChangesService, 'comparable'> };
  /** Download counts for the product page's chart (complete days only: `changes` moves when a day is added, stats/page-days.ts). */
  downloads?: Pick<StatsService, 'chart' | 'chartDay'>;
  /** Products kept rendered at once (least recently used are dropped). */
  cacheSize?: number;
  /** A page whose render failed is not tried again for its same data before this long, ms. */
  failureRetryMs?: number;
  /** Bytes of node pages and node icons kept built (least recently used are dropped). */
  nodeCacheBytes?: number;
  now?: () => number;
}

/** An icon stored before migration 0008 larger than this (the crawler's limit) is not shown. */
const STORED_ICON_MAX_BYTES = DEFAULT_CRAWL_LIMITS.maxIconBytes;

export type { Served } from './model.js';

interface Rendered {
  key: string;
  /** The page change counter read before the key was last found current. */
  seq: number;
  state: ProductRow['state'];
  updatedAt: string;
  input: ProductInput;
  model: ProductPageModel;
  // Built on first use:
  page?: Served;
  feed?: Served;
  badge?: Served;
  icon?: Served | null;
  /** What the product's catalog card says beside its name (issue 20). */
  facts: CardFacts;
}

type CardFacts = Pick<CatalogCard, 'version' | 'vendor' | 'nodeCount' | 'lastUpdate'>;

export const CATALOG_PAGE_SIZE = 24;

const HTML = 'text/html; charset=utf-8';

function etagOf(body: string | Buffer): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
}

/** Bodies are kept encoded: a cached page is written to the socket without re-encoding. */
function served(body: string | Buffer, type: string): Served {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  return { body: bytes, type, etag: etagOf(bytes) };
}

/** Lower-cased, accents removed: "Café" matches "cafe". */
function fold(s: string): string {
  return s.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
}

function parseFields(row: ProductRow): ProductFields {
  return { ...(JSON.parse(row.fields) as ProductFields), name: row.name };
}

export const NODE_SEARCH_LIMIT = 100;

export function pagesService({ repo, site, files, released, crawls, renderer, changes, nodeChanges, downloads, cacheSize = 500, failureRetryMs = 10 * 60_000, nodeCacheBytes = 32 * 1024 * 1024, now = Date.now }: PagesServiceDeps) {
  const cache = new Map<string, Rendered>();
  const building = new Map<string, Promise<Rendered>>();
  // Renders that failed, per product, by the key of the data they failed on: content built to
  // exceed the render limits costs one render per change, not one per request. A later key
  // (any change) renders again; so does the same key after failureRetryMs, in case the limit
  // was hit because the machine was busy rather than because of the content.
  const failures = new Map<string, { key: string; until: number; error: PageRenderFailed }>();

  function remember(id: string, entry: Rendered): void {
    cache.delete(id);
    cache.set(id, entry);
    if (cache.size > cacheSize) cache.delete(cache.keys().next().value as string);
  }

  async function build(id: string, key: string, seq: number, release: string | null): Promise<Rendered | null> {
    const row = await repo.find(id);
    if (!row) return null;
    const [labels, workflows] = await Promise.all([files.listLabels(id), files.listFiles(id, 'workflows')]);
    const unreleased = new Set(labels.filter((l) => l.files > 0 && released(id, l.label) === null).map((l) => l.label));
    const filesView: ProductFilesView = { labels, workflows, unreleased };
    const input: ProductInput = { id: row.id, state: row.state, fields: parseFields(row) };
    const content = await renderer.render(input.fields, release, PAGE_IDS, id);
    const ranges = new Map((await crawls.forProduct(id)).map((c) => [c.label, c.platform_range ?? null] as const));
    const model = productPageModel(site, input, release, filesView, content, ranges);
    if (downloads) model.downloads = await downloads.chart(id);
    // Nodes of every label that has been crawled, the best first (recommended first: issue 7's
    // order); `nodes` keeps the best one's alone. Only labels with an update site: an archive
    // alone is never crawled, and nodes left from a folder since deleted would point users at an
    // update site that no longer exists.
    const crawled: Parameters<typeof labelNodes>[1] = [];
    const lists = new Map<string, NodeListRow[]>();
    for (const n of await crawls.nodeLists(id)) {
      const list = lists.get(n.label);
      if (list) list.push(n);
      else lists.set(n.label, [n]);
    }
    for (const l of model.labels ?? []) {
      if (l.url === null) continue;
      const rows = lists.get(l.label) ?? [];
      if (rows.length > 0 && !model.nodes) model.nodes = { label: l.label, groups: nodeGroups(id, rows) };
      crawled.push({ label: l.label, url: l.url, recommended: l.recommended, rows });
    }
    model.nodeLabels = model.nodes ? labelNodes(id, crawled) : null;
    if (await nodeChanges?.service.comparable(id)) model.changesUrl = `/product/${id}/changes`;
    const facts = await cardFacts(id, model);
    return { key, seq, state: row.state, updatedAt: row.updated_at, input, model, facts };
  }

  /**
   * The product's rendering for its current data, or null for an unknown product; `provisional`
   * when it is an older one kept while the current one cannot be rendered (see Served).
   */
  async function product(id: string): Promise<{ r: Rendered; provisional: boolean } | null> {
    const seq = await changes.current();
    const hit = cache.get(id);
    if (hit && hit.seq === seq) return { r: hit, provisional: false };
    const stamp = await repo.pageStamp(id);
    if (!stamp) return null;
    const filesStamp = await files.changeStamp(id);
    const key = JSON.stringify([stamp.state, stamp.updated_at, stamp.release, stamp.crawled, filesStamp, downloads?.chartDay() ?? null]);
    if (hit?.key === key) {
      // Unchanged by what moved the counter: current as of this (later) read.
      if (seq > hit.seq) hit.seq = seq;
      return { r: hit, provisional: false };
    }
    const failed = failures.get(id);
    if (failed?.key === key && now() < failed.until) throw failed.error;
    // Concurrent requests for the same new version share one render.
    const flight = `${id}\u0000${key}`;
    let pending = building.get(flight);
    if (!pending) {
      pending = build(id, key, seq, stamp.release).then(
        (r) => {
          failures.delete(id);
          if (r) remember(id, r);
          return r as Rendered;
        },
        (e: unknown) => {
          if (e instanceof PageRenderFailed) {
            failures.delete(id);
            failures.set(id, { key, until: now() + failureRetryMs, error: e });
            if (failures.size > cacheSize) failures.delete(failures.keys().next().value as string);
          }
          throw e;
        },
      );
      building.set(flight, pending);
      pending.finally(() => building.delete(flight)).catch(() => {});
    }
    try {
      const r = await pending;
      return r ? { r, provisional: false } : null;
    } catch (e) {
      // A product over its render-time budget keeps its last rendered page (an older version,
      // correct for that version) rather than disappearing; without one it answers 503. Only
      // while its state is the same: a page made live or hidden since must not show the old
      // notice, noindex or feed.
      const previous = cache.get(id);
      if (e instanceof RenderDeferred && previous?.state === stamp.state) return { r: previous, provisional: true };
      throw e;
    }
  }

  /** `s` as served from a provisional rendering (see Served). */
  const marked = (s: Served | null, provisional: boolean): Served | null => (s && provisional ? { ...s, provisional: true } : s);

  function feedProduct(r: Rendered): FeedProduct {
    return {
      id: r.input.id,
      name: r.model.name,
      description: r.model.description,
      pageUrl: r.model.pageUrl,
      author: r.model.contact?.name ?? r.model.name,
      updatedAt: r.updatedAt,
      releases: r.model.content.changelog?.releases ?? [],
      notices: feedNotices(r.input.fields.labels, site.downloadUrl, r.input.id),
    };
  }

  /**
   * Live products as catalog cards with their search text, kept per product until its row
   * changes (only the card, never the page fields, so memory stays small).
   */
  interface IndexEntry {
    /** updated_at and last crawl of the product row when indexed. */
    stamp: string;
    updatedAt: string;
    card: CatalogCard;
    /** Folded name, and name + description: what search matches. */
    name: string;
    text: string;
    /** Platform ranges of the product's crawled labels (the "works with" filter). */
    ranges: string[];
    /** The same by label (the node search's "works with" filter). */
    labelRanges: { label: string; range: string }[];
    /** Labels the vendor withdrew: their nodes and ranges are offered nowhere. */
    withdrawn: string[];
  }
  const catalogIndex = new Map<string, IndexEntry>();
  /** The last list of live products and the change counter read before it was made. */
  let liveList: { seq: number; list: (IndexEntry & { id: string })[] } | null = null;

  async function liveProducts(): Promise<(IndexEntry & { id: string })[]> {
    const seq = await changes.current();
    if (liveList?.seq === seq) return liveList.list;
    const list = await readLiveProducts();
    if (!liveList || seq >= liveList.seq) liveList = { seq, list };
    return list;
  }

  async function readLiveProducts(): Promise<(IndexEntry & { id: string })[]> {
    const stamps = await repo.liveStamps();
    const stampOf = (s: { updated_at: string; crawled: string | null }) => `${s.updated_at}|${s.crawled ?? ''}`;
    const stale = stamps.filter((s) => catalogIndex.get(s.id)?.stamp !== stampOf(s));
    const staleIds = stale.map((s) => s.id);
    const nodeNames = new Map<string, Set<string>>();
    for (const n of await crawls.nodeNamesOf(staleIds)) {
      if (!nodeNames.has(n.product_id)) nodeNames.set(n.product_id, new Set());
      nodeNames.get(n.product_id)!.add(n.name);
    }
    const ranges = new Map<string, { label: string; range: string }[]>();
    for (const r of await crawls.platformRanges(staleIds)) ranges.set(r.product_id, [...(ranges.get(r.product_id) ?? []), { label: r.label, range: r.platform_range }]);
    for (const row of await repo.findLive(staleIds)) {
      const fields = parseFields(row);
      const s = stale.find((x) => x.id === row.id)!;
      const withdrawn = withdrawnInFields(row.fields);
      const labelRanges = (ranges.get(row.id) ?? []).filter((r) => !withdrawn.has(r.label));
      // Node names are part of the search text: the catalog finds products by their nodes too.
      catalogIndex.set(row.id, {
        stamp: stampOf({ updated_at: row.updated_at, crawled: s.crawled }),
        updatedAt: row.updated_at,
        card: catalogCard({ id: row.id, state: row.state, fields }),
        name: fold(fields.name),
        text: fold(`${fields.name}\n${fields.description ?? ''}\n${[...(nodeNames.get(row.id) ?? [])].join('\n')}`),
        ranges: labelRanges.map((r) => r.range),
        labelRanges,
        withdrawn: [...withdrawn.keys()],
      });
    }
    const live = new Set(stamps.map((s) => s.id));
    for (const id of catalogIndex.keys()) if (!live.has(id)) catalogIndex.delete(id);
    return stamps.flatMap((s) => {
      const e = catalogIndex.get(s.id);
      return e ? [{ id: s.id, ...e }] : [];
    });
  }

  // Node pages and icons, served as built until the product's page key changes (a crawl, an
  // upload, a state change): building one parses the stored node and renders it, which grows with
  // the vendor's description, so it is not done per request. Bounded by bytes, least recently used
  // dropped first.
  const nodeServed = new Map<string, { key: string; served: Served | null; bytes: number }>();
  let nodeServedBytes = 0;
  async function cachedNode(r: Rendered, cacheKey: string, build: () => Promise<Served | null>): Promise<Served | null> {
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
      if (nodeServedBytes <= nodeCacheBytes) break;
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

  /**
   * A catalog card's facts: the badge's version (the changelog's newest release), the vendor (the
   * provider of the best crawled label's features, else the contact name), the distinct nodes
   * across labels, and the newest upload or crawl.
   */
  async function cardFacts(id: string, model: ProductPageModel): Promise<CardFacts> {
    const runs = await crawls.forProduct(id);
    let vendor: string | null = null;
    for (const l of model.labels ?? []) {
      vendor = vendorOf(runs.find((c) => c.label === l.label)?.units);
      if (vendor) break;
    }
    const times = [...(model.labels ?? []).map((l) => l.lastUploadAt), ...runs.map((c) => c.finished_at)].filter((t): t is string => !!t);
    return {
      version: model.badge?.version ?? null,
      vendor: vendor ?? model.contact?.name ?? null,
      nodeCount: model.nodeLabels ? distinctNodes(model.nodeLabels) : 0,
      lastUpdate: times.length ? times.reduce((a, b) => (a > b ? a : b)) : null,
    };
  }

  /** The node's row from the label the product page shows (recommended first), sanitized. */
  async function findNodeRow(r: Rendered, id: string, factoryClass: string): Promise<{ row: CrawlNodeRow; label: string; installUrl: string } | null> {
    for (const l of r.model.labels ?? []) {
      if (l.url === null) continue; // the same labels the product page takes its nodes from
      const row = await crawls.node(id, l.label, factoryClass);
      if (!row) continue;
      return { row: await sanitizedRow(row), label: l.label, installUrl: l.url };
    }
    return null;
  }

  /** A node page's model: the stored description is already sanitized HTML (crawler/sanitize-node.ts). */
  function nodeModel(r: Rendered, id: string, found: { row: CrawlNodeRow; label: string; installUrl: string }, all: CrawlNodeRow[]): NodePageModel {
    const { row } = found;
    // The labels the product page offers (with an update site) that have this node.
    const offered = (r.model.labels ?? []).filter((l): l is typeof l & { url: string } => l.url !== null);
    const inLabel = new Map(all.map((n) => [n.label, n]));
    const labels = offered
      .filter((l) => inLabel.has(l.label))
      .map((l) => ({ label: l.label, url: l.url, recommended: l.recommended, installed: l.label === found.label }))
      .sort((a, b) => compareLabelsAsc(b.label, a.label));
    const everyNode = (r.model.nodeLabels ?? []).flatMap((l) => l.groups.flatMap((g) => g.nodes));
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
      replacement: row.deprecated === 1 ? replacementFor({ name: row.name, url }, everyNode) : null,
      productSearchUrl: nodeSearchHref({ product: id }),
      categorySearchUrl: row.category_names ? nodeSearchHref({ product: id, category: row.category_names }) : null,
    };
  }

  /**
   * Cards with their facts, taken from each product's rendering (kept until the product changes);
   * a product that cannot be rendered now keeps its plain card.
   */
  async function withFacts(cards: CatalogCard[]): Promise<CatalogCard[]> {
    const settled = await Promise.allSettled(cards.map((c) => product(c.id)));
    return cards.map((c, i) => {
      const s = settled[i]!;
      return s.status === 'fulfilled' && s.value ? { ...c, ...s.value.r.facts } : c;
    });
  }

  return {
    site,

    /** The product page (also while hidden, with a notice and noindex), or null. */
    async productPage(id: string): Promise<Served | null> {
      const p = await product(id);
      if (!p) return null;
      p.r.page ??= served(renderDocument(ProductPage({ site, m: p.r.model })), HTML);
      return marked(p.r.page, p.provisional);
    },

    /** What changed between two labels or releases (changes-pages.ts), like the product page also while hidden; null: no such product. */
    async changesPage(id: string, query: { from?: string; to?: string }): Promise<ChangesAnswer | null> {
      const p = await product(id);
      if (!p || !nodeChanges) return null;
      const s = await nodeChanges.pages.page(p.r, query);
      return s.status ? s : marked(s, p.provisional);
    },

    /** The icon as uploaded (SVG sanitized again on the way out) and its version tag, or null. */
    async icon(id: string): Promise<{ served: Served; version: string } | null> {
      const p = await product(id);
      if (!p) return null;
      const { r } = p;
      if (r.icon === undefined) r.icon = iconOf(r.input.fields);
      const version = iconVersion(r.input.fields);
      return r.icon && version ? { served: marked(r.icon, p.provisional) as Served, version } : null;
    },

    /** Atom feed of a live product's releases; hidden products have none. */
    async productFeed(id: string): Promise<Served | null> {
      const p = await product(id);
      if (p?.r.state !== 'live') return null;
      const { r } = p;
      r.feed ??= served(productFeed(feedProduct(r), `${r.model.pageUrl}/releases.atom`), 'application/atom+xml; charset=utf-8');
      return marked(r.feed, p.provisional);
    },

    async badge(id: string): Promise<Served | null> {
      const p = await product(id);
      if (!p) return null;
      const { r } = p;
      r.badge ??= served(versionBadge(r.model.name, r.model.badge?.version ?? null, r.model.badge?.color ?? r.model.colors.color1), 'image/svg+xml; charset=utf-8');
      return marked(r.badge, p.provisional);
    },

    /** Every live product's releases, newest first. */
    async siteFeed(): Promise<Served> {
      const ids = (await liveProducts()).map((p) => p.id);
      // A product whose page cannot be rendered now is left out; everyone else's releases stay.
      const settled = await Promise.allSettled(ids.map((id) => product(id)));
      const rendered: Rendered[] = [];
      // Left out or older: the feed is right for now but not the current answer to file.
      let partial = false;
      for (const s of settled) {
        if (s.status === 'rejected' && !(s.reason instanceof ServiceUnavailableError)) throw s.reason;
        if (s.status === 'rejected' || s.value?.provisional) partial = true;
        if (s.status === 'fulfilled' && s.value?.r.state === 'live') rendered.push(s.value.r);
      }
      const xml = siteFeed(rendered.map(feedProduct), { name: site.name, baseUrl: site.baseUrl, selfUrl: `${site.baseUrl}/releases.atom` });
      return marked(served(xml, 'application/atom+xml; charset=utf-8'), partial) as Served;
    },

    /** Catalog of live products, optionally searched (every word must match name or description). */
    async catalog(query: string, page: number, works = ''): Promise<{ served: Served; model: CatalogPageModel }> {
      const words = fold(query).split(/\s+/).filter(Boolean);
      // `works` (a validated release): products with a crawled label whose platform range holds it.
      const all = (await liveProducts()).filter((p) => words.every((w) => p.text.includes(w)) && (works === '' || p.ranges.some((r) => rangeContains(r, works))));
      all.sort((a, b) => {
        // Name hits first when searching, then by name.
        if (words.length) {
          const an = words.every((w) => a.name.includes(w));
          const bn = words.every((w) => b.name.includes(w));
          if (an !== bn) return an ? -1 : 1;
        }
        return a.card.name.localeCompare(b.card.name, 'en', { sensitivity: 'base' }) || (a.id < b.id ? -1 : 1);
      });
      const pages = Math.max(1, Math.ceil(all.length / CATALOG_PAGE_SIZE));
      const current = Math.min(Math.max(1, page), pages);
      const slice = all.slice((current - 1) * CATALOG_PAGE_SIZE, current * CATALOG_PAGE_SIZE);
      const model: CatalogPageModel = { query, works, cards: await withFacts(slice.map((p) => p.card)), total: all.length, page: current, pages };
      return { served: served(renderDocument(CatalogPage({ site, m: model })), HTML), model };
    },

    /** A node's page (also while the product is hidden, like the product page), or null. */
    async nodePage(id: string, factoryClass: string): Promise<Served | null> {
      const p = await product(id);
      if (!p) return null;
      const { r } = p;
      const s = await cachedNode(r, JSON.stringify(['page', id, factoryClass]), async () => {
        const found = await findNodeRow(r, id, factoryClass);
        if (!found) return null;
        // Every label's copy, sanitized alike, so that comparing descriptions compares content.
        const all = await Promise.all((await crawls.nodeInLabels(id, factoryClass)).map((n) => sanitizedRow(n)));
        return served(renderDocument(NodePage({ site, m: nodeModel(r, id, found, all) })), HTML);
      });
      return marked(s, p.provisional);
    },

    /** A node's icon as stored: SVG sanitized by the crawl, rasters checked to be what they claim. */
    async nodeIcon(id: string, factoryClass: string): Promise<Served | null> {
      const p = await product(id);
      if (!p) return null;
      const { r } = p;
      const s = await cachedNode(r, JSON.stringify(['icon', id, factoryClass]), async () => {
        const row = (await findNodeRow(r, id, factoryClass))?.row;
        if (!row?.icon || !row.icon_type) return null;
        const bytes = Buffer.from(row.icon, 'base64');
        if (row.icon_type === 'image/svg+xml') return served(bytes, 'image/svg+xml; charset=utf-8');
        const kind = sniffRasterImage(bytes);
        return kind ? served(bytes, RASTER_TYPES[kind]) : null;
      });
      return marked(s, p.provisional);
    },

    /**
     * Node search over live products (one hit per product and node, the copy in its highest label): full text,
     * narrowed by product and category (issue 20); a filter without words lists its nodes. At
     * most NODE_SEARCH_LIMIT hits, with a note when more matched.
     */
    async nodeSearch(query: string, filter: { product?: string | null; category?: string | null; works?: string | null } = {}): Promise<{ served: Served; model: NodeSearchModel }> {
      const product = filter.product || null;
      const category = filter.category || null;
      const works = filter.works || null;
      // "Works with <release>" (a validated release): the labels of live products whose platform range holds it.
      const live = await liveProducts();
      const labels = works
        ? live.flatMap((p) => p.labelRanges.filter((r) => rangeContains(r.range, works)).map((r) => ({ product: p.id, label: r.label })))
        : null;
      // Nodes of withdrawn labels are left out (their update sites answer 410).
      const exceptLabels = live.flatMap((p) => p.withdrawn.map((label) => ({ product: p.id, label })));
      // One hit per product and node (deduplicated in SQL); one more than a page tells that more matched.
      const hits = await crawls.searchNodes({ words: searchWords(query), product, category, labels, exceptLabels }, NODE_SEARCH_LIMIT + 1);
      const facets = await crawls.searchFacets();
      // Sorted here: the databases' collations differ (SQLite compares bytes).
      const byText = (a: string, b: string) => a.localeCompare(b, 'en', { sensitivity: 'base' }) || (a < b ? -1 : a > b ? 1 : 0);
      facets.products.sort((a, b) => byText(a.name, b.name) || byText(a.id, b.id));
      facets.categories.sort(byText);
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
      return { served: served(renderDocument(NodeSearchPage({ site, m: model })), HTML), model };
    },

    async sitemap(): Promise<Served> {
      const live = await liveProducts();
      const urls = [`  <url><loc>${xmlEscape(`${site.baseUrl}/`)}</loc></url>`];
      for (const p of live) {
        urls.push(`  <url><loc>${xmlEscape(`${site.baseUrl}/product/${p.id}`)}</loc><lastmod>${p.updatedAt}</lastmod></url>`);
      }
      const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${urls.join('\n')}\n</urlset>\n`;
      return served(xml, 'application/xml; charset=utf-8');
    },

    robots(): Served {
      const body = `User-agent: *\nDisallow: /api/\nSitemap: ${site.baseUrl}/sitemap.xml\n`;
      return served(body, 'text/plain; charset=utf-8');
    },

    notFound(what: string): Served {
      return served(renderDocument(NotFoundPage({ site, what })), HTML);
    },

    badRequest(what: string): Served {
      return served(renderDocument(BadRequestPage({ site, what })), HTML);
    },
  };
}

export type PagesService = ReturnType<typeof pagesService>;

function xmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const RASTER_TYPES = { png: 'image/png', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp' } as const;

function iconOf(fields: ProductFields): Served | null {
  if (fields.icon) {
    // Sanitized on PATCH; again here so icons stored before a sanitizer fix are served clean.
    const clean = sanitizeSvg(fields.icon);
    return 'svg' in clean ? served(clean.svg, 'image/svg+xml; charset=utf-8') : null;
  }
  if (fields.iconBase64) {
    const bytes = Buffer.from(fields.iconBase64, 'base64');
    const kind = sniffRasterImage(bytes);
    return kind ? served(bytes, RASTER_TYPES[kind]) : null;
  }
  return null;
}

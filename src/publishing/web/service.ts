// Everything the public pages serve, rendered once per product and cached until something it was
// built from changes (docs/operators.md#caching-and-freshness-of-pages). Two checks, both read
// before the content: the page change counter (page-changes.ts: one read serves all requests for
// FRESH_MS, raised by every write pages depend on, by any process) says whether anything changed at
// all; only when it moved are the product's own stamps read (state and updated_at of the row, the
// platform release setting, the last crawl, the files' change stamp), so a change to one product
// re-renders that product only. Never a timer: a PATCH, an upload, a staff command in another
// process or a second instance shows on the next request after the counter's bound (DESIGN "Changes
// made by another process"). Because keys are read before the content, a change racing a render can
// only make the cached copy look older than it is (re-rendered next time), never newer.
import { versionBadge } from '../content/badge.js';
import { ServiceUnavailableError } from '../../infra/errors.js';
import { type ContentRenderer, PageRenderFailed, RenderDeferred } from './isolated-render.js';
import { type FeedProduct, productFeed, siteFeed } from '../content/feeds.js';
import { sanitizeSvg, sniffRasterImage } from '../content/svg.js';
import type { CrawlRow, CrawlsRepository } from '../crawler/repository.js';
import { rangeContains } from '../crawler/platform-range.js';
import { BadRequestPage } from './bad-request-page.js';
import type { ProductFilesReader } from '../files/reader.js';
import type { ProductFields } from '../model/fields.js';
import type { ProductRow, ProductsRepository } from '../products/repository.js';
import type { PageChanges } from './page-changes.js';
import type { ChangesService } from '../changes/service.js';
import type { ChangesAnswer, ChangesPages } from './changes-pages.js';
import { CatalogPage } from './catalog-page.js';
import type { CatalogCard, CatalogPageModel, ProductPageModel, SiteInfo, Served } from './model.js';
import { NotFoundPage } from './not-found-page.js';
import { PAGE_IDS } from './product-page.js';
import { iconVersion, PAGE_WORKFLOWS, type ProductFilesView, type ProductInput, productPageModel } from './presenter.js';
import { renderDocument } from './render.js';
import { entityTag } from './entity-tag.js';
import { feedNotices } from '../notices/view.js';
import type { StatsService } from '../stats/service.js';
import { vendorOf } from './node-presenter.js';
import { catalogIndex, fold, parseFields } from './catalog-index.js';
import { nodeSearchPages } from './node-search.js';
import { nodePages, RASTER_TYPES } from './node-pages.js';
import { nodeCounts, productNodes } from './product-nodes.js';

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
  /** Crawled nodes: the product page's node list, node pages and node search. */
  crawls: CrawlsRepository;
  /** Renders the vendor Markdown off the serving event loop, under a time limit. */
  renderer: ContentRenderer;
  /** Whether anything pages depend on changed (the database's page change counter). */
  changes: PageChanges;
  /** What changed between labels: the changes page and the product page's link to it. */
  nodeChanges?: { pages: ChangesPages; service: Pick<ChangesService, 'comparable'> };
  /** Download counts for the product page's chart (complete days only: `changes` moves when a day is added, web/page-days.ts). */
  downloads?: Pick<StatsService, 'chart' | 'chartDay'>;
  /** Products kept rendered at once (least recently used are dropped). */
  cacheSize?: number;
  /** A page whose render failed is not tried again for its same data before this long, ms. */
  failureRetryMs?: number;
  /** Bytes of node pages and node icons kept built (least recently used are dropped). */
  nodeCacheBytes?: number;
  /** Runs a node search (web/catalog-reads.ts: in a worker thread); default: `crawls.searchNodes` here. */
  searchNodes?: CrawlsRepository['searchNodes'];
  now?: () => number;
}

export type { Served } from './model.js';

interface Rendered {
  key: string;
  /** The product's crawl stamp the rendering was built under (what its node lists and comparisons depend on). */
  crawled: string | null;
  /** The page change counter read before the key was last found current. */
  seq: number;
  state: ProductRow['state'];
  updatedAt: string;
  input: ProductInput;
  model: ProductPageModel;
  // Built on first use:
  page?: Served;
  /** The page document's render in the render pool, while it runs. */
  pageRender?: Promise<Served>;
  feed?: Served;
  badge?: Served;
  icon?: Served | null;
  /** What the product's catalog card says beside its name: version, vendor, node count, last update. */
  facts: CardFacts;
}

type CardFacts = Pick<CatalogCard, 'version' | 'vendor' | 'nodeCount' | 'lastUpdate'>;

export const CATALOG_PAGE_SIZE = 24;

const HTML = 'text/html; charset=utf-8';

/** Bodies are kept encoded: a cached page is written to the socket without re-encoding. */
function served(body: string | Buffer, type: string): Served {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  return { body: bytes, type, etag: entityTag(bytes) };
}

export { NODE_SEARCH_LIMIT } from './node-search.js';

export function pagesService({
  repo,
  site,
  files,
  released,
  crawls,
  renderer,
  changes,
  nodeChanges,
  downloads,
  cacheSize = 500,
  failureRetryMs = 10 * 60_000,
  nodeCacheBytes = 32 * 1024 * 1024,
  searchNodes = (filter, limit) => crawls.searchNodes(filter, limit),
  now = Date.now,
}: PagesServiceDeps) {
  const cache = new Map<string, Rendered>();
  const nodeLists = productNodes(crawls, cacheSize);
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

  async function build(id: string, key: string, seq: number, stamp: { release: string | null; crawled: string | null }): Promise<Rendered | null> {
    const row = await repo.find(id);
    if (!row) return null;
    // The page lists the first PAGE_WORKFLOWS example workflows; the download host's folder index pages the rest.
    const [labels, workflows, workflowCount] = await Promise.all([files.listLabels(id), files.listFiles(id, 'workflows', PAGE_WORKFLOWS), files.countFiles(id, 'workflows')]);
    const unreleased = new Set(labels.filter((l) => l.files > 0 && released(id, l.label) === null).map((l) => l.label));
    const filesView: ProductFilesView = { labels, workflows, workflowCount, unreleased };
    const input: ProductInput = { id: row.id, state: row.state, fields: parseFields(row) };
    const content = await renderer.render(input.fields, stamp.release, PAGE_IDS, id);
    const runs = await crawls.forProduct(id);
    const ranges = new Map(runs.map((c) => [c.label, c.platform_range ?? null] as const));
    const model = productPageModel(site, input, stamp.release, filesView, content, ranges);
    if (downloads) model.downloads = await downloads.chart(id);
    // Nodes of every label that has been crawled, the best first (recommended first, as the
    // install section orders them: presenter.ts `installLabels`), each bounded
    // (product-nodes.ts); `nodes` keeps the best one's alone. Only labels with an update site:
    // an archive alone is never crawled, and nodes left from a folder since deleted would point
    // users at an update site that no longer exists.
    const offered = (model.labels ?? []).flatMap((l) => (l.url === null ? [] : [{ label: l.label, url: l.url, recommended: l.recommended }]));
    const nodes = await nodeLists.of(id, stamp.crawled, offered, nodeCounts(runs));
    const best = nodes.lists[0];
    model.nodes = best ? { label: best.label, groups: best.groups } : null;
    model.nodeLabels = best ? nodes.lists : null;
    if (await nodeChanges?.service.comparable(id)) model.changesUrl = `/product/${id}/changes`;
    const facts = cardFacts(model, runs, nodes.distinct);
    return { key, crawled: stamp.crawled, seq, state: row.state, updatedAt: row.updated_at, input, model, facts };
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
      pending = build(id, key, seq, stamp).then(
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

  /**
   * The product page's document, rendered in the render pool (its size follows the vendor's
   * content; the serving loop only sends the bytes), once per rendering; concurrent requests share it.
   */
  function pageOf(r: Rendered): Promise<Served> {
    if (r.page) return Promise.resolve(r.page);
    r.pageRender ??= renderer.renderPage(site, r.model, r.input.id).then(
      ({ body, etag }) => {
        r.page = { body, etag, type: HTML };
        return r.page;
      },
      (e: unknown) => {
        r.pageRender = undefined;
        throw e;
      },
    );
    return r.pageRender;
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

  const index = catalogIndex({ repo, crawls, changes });
  const liveProducts = () => index.live();
  const nodeSearches = nodeSearchPages({ site, live: liveProducts, search: searchNodes });
  const nodes = nodePages({ site, crawls, cacheBytes: nodeCacheBytes });

  /**
   * A catalog card's facts: the badge's version (the changelog's newest release), the vendor (the
   * provider of the best crawled label's features, else the contact name), the distinct nodes
   * across labels, and the newest upload or crawl.
   */
  function cardFacts(model: ProductPageModel, runs: CrawlRow[], distinct: number): CardFacts {
    let vendor: string | null = null;
    for (const l of model.labels ?? []) {
      vendor = vendorOf(runs.find((c) => c.label === l.label)?.units);
      if (vendor) break;
    }
    const times = [...(model.labels ?? []).map((l) => l.lastUploadAt), ...runs.map((c) => c.finished_at)].filter((t): t is string => !!t);
    return {
      version: model.badge?.version ?? null,
      vendor: vendor ?? model.contact?.name ?? null,
      nodeCount: distinct,
      lastUpdate: times.length ? times.reduce((a, b) => (a > b ? a : b)) : null,
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
      return marked(await pageOf(p.r), p.provisional);
    },

    /** What changed between two labels or releases (changes-pages.ts), like the product page also while hidden; null: no such product. */
    async changesPage(id: string, query: { from?: string; to?: string; page?: string }): Promise<ChangesAnswer | null> {
      const p = await product(id);
      if (!p || !nodeChanges) return null;
      const s = await nodeChanges.pages.page({ model: p.r.model, crawled: p.r.crawled }, query);
      return s.status ? s : marked(s, p.provisional);
    },

    /** One page of a label's node list (node-pages.ts), or null: no such product, label with nodes, or page. */
    async labelNodesPage(id: string, label: string | null, page: number): Promise<Served | null> {
      const p = await product(id);
      return p ? marked(await nodes.labelList(p.r, label, page), p.provisional) : null;
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
      return p ? marked(await nodes.page(p.r, factoryClass), p.provisional) : null;
    },

    /** A node's icon as stored: SVG sanitized by the crawl, rasters checked to be what they claim. */
    async nodeIcon(id: string, factoryClass: string): Promise<Served | null> {
      const p = await product(id);
      return p ? marked(await nodes.icon(p.r, factoryClass), p.provisional) : null;
    },

    /** Node search over live products (node-search.ts). */
    nodeSearch: (query: string, filter: { product?: string | null; category?: string | null; works?: string | null } = {}) => nodeSearches.page(query, filter),

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

/**
 * The changes page (vendors.md "What changed between labels"), one page of a comparison at a
 * time (changes/compare.ts: at most COMPARE_PAGE nodes, compared in the catalog's worker thread,
 * web/catalog-reads.ts), kept by what it is built from: the product's own sources (its labels,
 * their kept releases and current ones, the recommended label), its crawl stamp (every crawl
 * that stores nodes moves it), its name and state, and `from`, `to` and `page` as asked. No
 * other product's change drops it. Kept answers are bounded by bytes, least recently used
 * dropped first.
 */
import { AppError } from '../../infra/errors.js';
import type { ChangesService } from '../changes/service.js';
import { ChangesErrorPage, ChangesPage } from './changes-page.js';
import { entityTag } from './entity-tag.js';
import type { ProductPageModel, Served, SiteInfo } from './model.js';
import { renderDocument } from './render.js';

/** Bytes of changes pages kept at once (one is at most a few hundred KB: COMPARE_PAGE nodes). */
const KEPT_BYTES = 16 * 1024 * 1024;
/** What an entry costs beside its body (its key, the map slot). */
const ENTRY_OVERHEAD = 1024;

const HTML = 'text/html; charset=utf-8';
const servedOf = (html: string): Served => {
  const body = Buffer.from(html);
  return { body, type: HTML, etag: entityTag(body) };
};

/** The page, or the answer to a `from`/`to`/`page` it cannot use (`status` 400 or 404, never filed). */
export type ChangesAnswer = Served & { status?: 400 | 404 };

/** What the changes page of a product is built from beside the comparison: its rendering's model and crawl stamp. */
export interface ChangesProduct {
  model: ProductPageModel;
  /** The last finish of any of the product's crawls (products/repository.ts pageStamp). */
  crawled: string | null;
}

export function changesPages({ service, site, maxBytes = KEPT_BYTES }: { service: ChangesService; site: SiteInfo; maxBytes?: number }) {
  const kept = new Map<string, { key: string; served: Served; cost: number }>();
  let bytes = 0;
  const drop = (k: string) => {
    const old = kept.get(k);
    if (!old) return;
    kept.delete(k);
    bytes -= old.cost;
  };
  const keep = (k: string, key: string, served: Served) => {
    drop(k);
    const cost = served.body.length + ENTRY_OVERHEAD + k.length + key.length;
    if (cost > maxBytes) return;
    while (bytes + cost > maxBytes) drop(kept.keys().next().value as string);
    kept.set(k, { key, served, cost });
    bytes += cost;
  };

  return {
    /**
     * The page comparing `from` with `to` of the product whose rendering is `product`. A
     * malformed value answers a 400 page, an unknown label, release or page a 404 page
     * (changes/service.ts), both naming the parameter.
     */
    async page(product: ChangesProduct, query: { from?: string; to?: string; page?: string }): Promise<ChangesAnswer> {
      const id = product.model.id;
      const page = Number(query.page ?? 1);
      const k = JSON.stringify([id, query.from ?? '', query.to ?? '', page]);
      try {
        // Read before the nodes, so an answer is never kept under a version newer than what it shows.
        const sources = await service.sources(id);
        const key = JSON.stringify([sources, product.crawled, product.model.name, product.model.hidden]);
        const hit = kept.get(k);
        if (hit?.key === key) {
          kept.delete(k);
          kept.set(k, hit);
          return hit.served;
        }
        const result = await service.compare(id, query, page, product.crawled);
        const served = servedOf(
          renderDocument(
            ChangesPage({
              site,
              m: {
                productId: id,
                productName: product.model.name,
                hidden: product.model.hidden,
                sources: result.sources,
                comparison: 'comparison' in result ? result.comparison : null,
                missing: 'missing' in result ? result.missing : null,
                to: 'comparison' in result ? result.comparison.to.value : (query.to ?? result.sources.labels.find((l) => l.recommended)?.label ?? null),
                paged: new Set('comparison' in result ? result.comparison.paged : []),
              },
            }),
          ),
        );
        keep(k, key, served);
        return served;
      } catch (e) {
        // A malformed value (400) or one naming no label, kept release or page (404): a page that says which.
        if (!(e instanceof AppError) || (e.status !== 400 && e.status !== 404)) throw e;
        return { ...servedOf(renderDocument(ChangesErrorPage({ site, productId: id, message: e.message, notFound: e.status === 404 }))), status: e.status };
      }
    },

    /** Bytes of the answers kept. */
    get bytes(): number {
      return bytes;
    },
  };
}

export type ChangesPages = ReturnType<typeof changesPages>;

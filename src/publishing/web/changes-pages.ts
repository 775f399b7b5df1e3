/**
 * The changes page (issue 20), rendered once per product, `from` and `to` and kept like the
 * product page (web/service.ts): an answer stands while the page change counter has not moved
 * (releases, their node snapshots and crawls all move it, migrations 0009 and 0013) and the
 * product's page key is the same; anything else builds it again on the next request.
 */
import { createHash } from 'node:crypto';
import { AppError } from '../../infra/errors.js';
import type { ChangesService } from '../changes/service.js';
import { ChangesErrorPage, ChangesPage } from './changes-page.js';
import type { ProductPageModel, SiteInfo } from './model.js';
import type { PageChanges } from './page-changes.js';
import { renderDocument } from './render.js';
import type { Served } from './model.js';

/** Answers kept at once (least recently used dropped first); one is a few KB. */
const KEPT = 500;

const HTML = 'text/html; charset=utf-8';
const servedOf = (html: string): Served => {
  const body = Buffer.from(html);
  return { body, type: HTML, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
};

/** The page, or the answer to a `from`/`to` it cannot use (`status` 400 or 404, never filed). */
export type ChangesAnswer = Served & { status?: 400 | 404 };

export function changesPages({ service, changes, site }: { service: ChangesService; changes: PageChanges; site: SiteInfo }) {
  const cache = new Map<string, { seq: number; productKey: string; served: Served }>();
  return {
    /**
     * The page comparing `from` with `to` of the product whose rendering is `product` (its page
     * key and model). A malformed value throws a 400, an unknown label or release a 404
     * (changes/service.ts), both naming the parameter.
     */
    async page(product: { key: string; model: ProductPageModel }, query: { from?: string; to?: string }): Promise<ChangesAnswer> {
      const id = product.model.id;
      // Read before the data, so an answer is never filed under a counter newer than what it shows.
      const seq = await changes.current();
      const k = JSON.stringify([id, query.from ?? '', query.to ?? '']);
      const hit = cache.get(k);
      if (hit && hit.seq === seq && hit.productKey === product.key) {
        cache.delete(k);
        cache.set(k, hit);
        return hit.served;
      }
      let result: Awaited<ReturnType<ChangesService['compare']>>;
      try {
        result = await service.compare(id, query);
      } catch (e) {
        // A malformed value (400) or one naming no label or kept release (404): a page that says which.
        if (!(e instanceof AppError) || (e.status !== 400 && e.status !== 404)) throw e;
        return { ...servedOf(renderDocument(ChangesErrorPage({ site, productId: id, message: e.message, notFound: e.status === 404 }))), status: e.status };
      }
      const paged = await service.pagedNodes(id);
      const html = renderDocument(
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
            paged,
          },
        }),
      );
      const served = servedOf(html);
      cache.delete(k);
      cache.set(k, { seq, productKey: product.key, served });
      if (cache.size > KEPT) cache.delete(cache.keys().next().value as string);
      return served;
    },
  };
}

export type ChangesPages = ReturnType<typeof changesPages>;

// Public pages, feeds, badge, icon and discovery files (docs/vendors.md#your-page-badge-and-feeds).
// Thin: validate, call the pages service, present with caching headers and a strict
// Content-Security-Policy, and file the answer for the fast path (page-answers.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { HttpApp } from '../../infra/http.js';
import { ChangesQuery } from '../changes/schemas.js';
import { STATIC_ASSETS } from './assets.js';
import type { PageAnswers } from './page-answers.js';
import type { PageChanges } from './page-changes.js';
import type { PagesService, Served } from './service.js';
import { RELEASE_PATTERN } from '../crawler/platform-range.js';

/**
 * Pages run no inline script and load nothing from elsewhere except images vendors link in
 * their Markdown; inline style attributes carry the product colours (values we validated).
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "style-src-attr 'unsafe-inline'",
  'img-src * data:',
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Icons and badges are images: nothing in them may run or load (also when opened directly). */
export const IMAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox";

const ProductParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });
const CatalogQuery = Type.Object(
  {
    q: Type.Optional(Type.String({ maxLength: 200 })),
    page: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,4}$' })),
    // "Works with" a platform release (`5.3`, `5.3.1`): checked in the handler, which answers a page.
    works: Type.Optional(Type.String({ maxLength: 200 })),
    // The icon URL's version tag: any value, it only busts caches.
  },
  { additionalProperties: true },
);
/** Longest node factory (a Java class name) in a URL; the app's router limit is the same (service.ts). */
export const MAX_FACTORY_LENGTH = 512;
const NodeParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 200 }),
  // A Java class name: the node's stable id inside its product.
  factory: Type.String({ minLength: 1, maxLength: MAX_FACTORY_LENGTH }),
});
const NodeSearchQuery = Type.Object(
  {
    q: Type.Optional(Type.String({ maxLength: 200 })),
    // Filters: a product id and a named category path, as the page's selects send them.
    product: Type.Optional(Type.String({ maxLength: 200 })),
    category: Type.Optional(Type.String({ maxLength: 1000 })),
    works: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: true },
);
const LabelNodesQuery = Type.Object(
  {
    // A label name (files/tree.ts allows up to 128 characters); an unknown one is a 404 page.
    label: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    page: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,4}$' })),
  },
  { additionalProperties: true },
);
const IconQuery = Type.Object({ v: Type.Optional(Type.String({ maxLength: 64 })) }, { additionalProperties: true });

/** What the page routes need beside the pages service. */
export interface PageRouteOptions {
  changes: PageChanges;
  /** Answers filed for the fast path; null: none are kept. */
  answers: PageAnswers | null;
  /** `s-maxage` of the pages' Cache-Control (PIER_PAGE_SHARED_MAX_AGE). */
  sharedMaxAgeSeconds: number;
}

/** RFC 9110 §13.1.2: does If-None-Match name this entity tag (weak comparison)? */
function matches(req: FastifyRequest, etag: string): boolean {
  const match = req.headers['if-none-match'];
  return match?.split(',').some((t) => t.trim() === '*' || t.trim().replace(/^W\//, '') === etag) === true;
}

export function registerPageRoutes(app: HttpApp, pages: PagesService, options: PageRouteOptions): void {
  const { changes, answers } = options;
  // Browsers revalidate every time (a 304 while unchanged), so a change shows on their next
  // request; a shared cache in front (a CDN) may answer for s-maxage seconds, then revalidates
  // (RFC 9111 §5.2.2.10). A cached answer is never older than that on top of ours.
  const revalidate = options.sharedMaxAgeSeconds > 0 ? `public, max-age=0, s-maxage=${options.sharedMaxAgeSeconds}` : 'no-cache';

  /**
   * 304 when the client already has this version; otherwise the body with its ETag. A complete
   * current answer to a GET or HEAD is filed under the request's target and the change counter
   * `seq` read before its data (a 304 is not: it depends on the request's header).
   */
  const send = (req: FastifyRequest, reply: FastifyReply, seq: number, s: Served, cacheControl: string, csp = PAGE_CSP) => {
    reply.header('etag', s.etag).header('cache-control', cacheControl).header('content-security-policy', csp).type(s.type);
    if (matches(req, s.etag)) return reply.code(304).send();
    reply.header('content-length', String(s.body.length));
    if (answers && !s.provisional && reply.statusCode === 200 && req.raw.url) answers.remember(req.raw.url, seq, reply.getHeaders(), s.body);
    return reply.send(s.body);
  };

  const notFound = (reply: FastifyReply, what: string) => {
    const s = pages.notFound(what);
    return reply.code(404).header('content-security-policy', PAGE_CSP).header('cache-control', 'no-cache').type(s.type).send(s.body);
  };

  /** The catalog's and the node search's "works with" value is not a release: a 400 page naming it. */
  const badWorks = (reply: FastifyReply, works: string) => {
    const s = pages.badRequest(`"works" must be a platform release such as 5.3 or 5.3.1, not "${works}".`);
    return reply.code(400).header('content-security-policy', PAGE_CSP).header('cache-control', 'no-cache').type(s.type).send(s.body);
  };

  app.get('/', { schema: { querystring: CatalogQuery } }, async (req, reply) => {
    const seq = await changes.current();
    const works = (req.query.works ?? '').trim();
    if (works !== '' && !RELEASE_PATTERN.test(works)) return badWorks(reply, works);
    const { served } = await pages.catalog((req.query.q ?? '').trim(), Number(req.query.page ?? 1), works);
    return send(req, reply, seq, served, revalidate);
  });

  app.get('/product/:id', { schema: { params: ProductParams } }, async (req, reply) => {
    const seq = await changes.current();
    const s = await pages.productPage(req.params.id);
    if (!s) return notFound(reply, `There is no extension "${req.params.id}".`);
    return send(req, reply, seq, s, revalidate);
  });

  app.get('/product/:id/icon', { schema: { params: ProductParams, querystring: IconQuery } }, async (req, reply) => {
    const seq = await changes.current();
    const icon = await pages.icon(req.params.id);
    if (!icon) return notFound(reply, `"${req.params.id}" has no icon.`);
    // Pages link the icon as ?v=<hash of the icon>; that exact version never changes.
    const immutable = req.query.v === icon.version;
    return send(req, reply, seq, icon.served, immutable ? 'public, max-age=31536000, immutable' : revalidate, IMAGE_CSP);
  });

  app.get('/product/:id/badge.svg', { schema: { params: ProductParams } }, async (req, reply) => {
    const seq = await changes.current();
    const s = await pages.badge(req.params.id);
    if (!s) return notFound(reply, `There is no extension "${req.params.id}".`);
    return send(req, reply, seq, s, revalidate, IMAGE_CSP);
  });

  app.get('/product/:id/releases.atom', { schema: { params: ProductParams } }, async (req, reply) => {
    const seq = await changes.current();
    const s = await pages.productFeed(req.params.id);
    if (!s) return notFound(reply, `There is no live extension "${req.params.id}".`);
    return send(req, reply, seq, s, revalidate);
  });

  app.get('/product/:id/changes', { schema: { params: ProductParams, querystring: ChangesQuery } }, async (req, reply) => {
    const seq = await changes.current();
    const s = await pages.changesPage(req.params.id, { from: req.query.from, to: req.query.to, page: req.query.page });
    if (!s) return notFound(reply, `There is no extension "${req.params.id}".`);
    // A value naming nothing, or malformed: said on a page, never filed for the fast path.
    if (s.status) return reply.code(s.status).header('content-security-policy', PAGE_CSP).header('cache-control', 'no-cache').type(s.type).send(s.body);
    return send(req, reply, seq, s, revalidate);
  });

  app.get('/product/:id/nodes', { schema: { params: ProductParams, querystring: LabelNodesQuery } }, async (req, reply) => {
    const seq = await changes.current();
    const s = await pages.labelNodesPage(req.params.id, req.query.label ?? null, Number(req.query.page ?? 1));
    if (!s) return notFound(reply, `"${req.params.id}" has no nodes${req.query.label ? ` in update site "${req.query.label}"` : ''}${req.query.page ? ` on page ${req.query.page}` : ''}.`);
    return send(req, reply, seq, s, revalidate);
  });

  app.get('/product/:id/nodes/:factory', { schema: { params: NodeParams } }, async (req, reply) => {
    const seq = await changes.current();
    const s = await pages.nodePage(req.params.id, req.params.factory);
    if (!s) return notFound(reply, `"${req.params.id}" has no node "${req.params.factory}".`);
    return send(req, reply, seq, s, revalidate);
  });

  app.get('/product/:id/nodes/:factory/icon', { schema: { params: NodeParams } }, async (req, reply) => {
    const seq = await changes.current();
    const s = await pages.nodeIcon(req.params.id, req.params.factory);
    if (!s) return notFound(reply, 'No such node icon.');
    return send(req, reply, seq, s, revalidate, IMAGE_CSP);
  });

  app.get('/nodes', { schema: { querystring: NodeSearchQuery } }, async (req, reply) => {
    const seq = await changes.current();
    const works = (req.query.works ?? '').trim();
    if (works !== '' && !RELEASE_PATTERN.test(works)) return badWorks(reply, works);
    const { served } = await pages.nodeSearch((req.query.q ?? '').trim(), { product: req.query.product?.trim(), category: req.query.category?.trim(), works });
    return send(req, reply, seq, served, revalidate);
  });

  app.get('/releases.atom', async (req, reply) => {
    const seq = await changes.current();
    return send(req, reply, seq, await pages.siteFeed(), revalidate);
  });
  app.get('/sitemap.xml', async (req, reply) => {
    const seq = await changes.current();
    return send(req, reply, seq, await pages.sitemap(), revalidate);
  });
  app.get('/robots.txt', async (req, reply) => send(req, reply, await changes.current(), pages.robots(), revalidate));

  // Filed too, so that a browser's connection that fetched a page stays on the fast path for
  // the stylesheet and script (a connection handed to the app stays with the app).
  for (const asset of STATIC_ASSETS) {
    app.get(asset.path, async (req, reply) => {
      const seq = await changes.current();
      reply.header('cache-control', 'public, max-age=31536000, immutable').type(asset.type).header('content-length', String(asset.body.length));
      if (answers && req.raw.url) answers.remember(req.raw.url, seq, reply.getHeaders(), asset.body);
      return reply.send(asset.body);
    });
  }
}

import { Type } from 'typebox';
import type { FailureLimiter } from '../../infra/failure-limiter.js';
import type { HttpApp } from '../../infra/http.js';
import { problem, problems, VENDOR_SECURITY } from '../openapi.js';
import type { ProductService } from '../products/service.js';
import { vendorAuthentication } from '../products/vendor-auth.js';
import { presentComparison } from './present.js';
import { type ChangesService, UnknownSideError } from './service.js';
import { ChangesAnswer, ChangesQuery } from './schemas.js';

const ProductParams = Type.Object({ id: Type.String({ maxLength: 200 }) });

export interface ChangesRoutesOptions {
  products: Pick<ProductService, 'authenticateVendor'>;
  limiter: FailureLimiter;
  changes: ChangesService;
}

/** `GET /api/products/<id>/changes`: the changes page's content for the vendor. */
export function registerChangesRoutes(app: HttpApp, { products, limiter, changes }: ChangesRoutesOptions): void {
  app.get(
    '/api/products/:id/changes',
    {
      schema: {
        tags: ['releases'],
        summary: 'Nodes added, removed, deprecated and changed between two labels or releases',
        description:
          '`from` and `to` name a label (its nodes as crawled now) or `<label>@<n>` (the nodes of kept release n). Default `to`: the recommended label; default `from`: the release of `to` before it, else the next lower label. The nodes are paged: `page` (from 1) holds up to 200 of them, the buckets in the order added, removed, deprecated, changed; `counts` gives every bucket\'s size and `pages` the number of pages.',
        operationId: 'compareLabels',
        security: VENDOR_SECURITY,
        params: ProductParams,
        querystring: ChangesQuery,
        response: {
          200: ChangesAnswer,
          ...problems(401, 429),
          400: problem(400, 'A malformed `from` or `to` (problem+json `invalid_field` naming it)'),
          404: problem(404, 'No such product, label or kept release, nothing to compare, or a page past the last (problem+json `not_found` naming `from`, `to` or `page`)'),
        },
      },
      onRequest: vendorAuthentication(products, limiter),
    },
    async (req) => {
      const id = req.product!.id;
      const result = await changes.compare(id, req.query, Number(req.query.page ?? 1));
      if ('missing' in result) {
        throw result.missing === 'to'
          ? new UnknownSideError('to', 'the product has no crawled label to compare')
          : new UnknownSideError('from', 'there is no earlier release or lower label to compare with: name `from`');
      }
      return presentComparison(id, result.comparison);
    },
  );
}

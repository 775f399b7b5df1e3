import { Type } from 'typebox';
import type { FailureLimiter } from '../../infra/failure-limiter.js';
import type { HttpApp } from '../../infra/http.js';
import { problems, VENDOR_SECURITY } from '../openapi.js';
import { ProductParams } from '../products/schemas.js';
import type { ProductService } from '../products/service.js';
import { vendorAuthentication } from '../products/vendor-auth.js';
import { LabelCrawlSchema } from './schemas.js';
import type { CrawlerService } from './service.js';

const CrawlReport = Type.Object(
  {
    productId: Type.String(),
    state: Type.Unsafe<'hidden' | 'live'>({ type: 'string', enum: ['hidden', 'live'] }),
    labels: Type.Array(LabelCrawlSchema, { description: 'the latest crawl of every label' }),
  },
  { description: 'The integrity report: the latest crawl of each label' },
);

export interface CrawlReportRoutesOptions {
  products: Pick<ProductService, 'authenticateVendor'>;
  /** The same failed-attempt limiter as the other edit-token routes: one budget per address. */
  limiter: FailureLimiter;
  crawler: Pick<CrawlerService, 'report'>;
}

/**
 * `GET /api/products/:id/crawl`: a vendor route of the product, kept with the crawler whose
 * report it shows (products/ stands below the crawler and does not import it).
 */
export function registerCrawlReportRoutes(app: HttpApp, { products, limiter, crawler }: CrawlReportRoutesOptions): void {
  const authenticate = vendorAuthentication(products, limiter);

  // The vendor's view of the integrity report: the latest crawl of every label.
  app.get(
    '/api/products/:id/crawl',
    {
      schema: {
        tags: ['crawls'],
        summary: 'Read the integrity report of the uploaded update sites',
        description: 'The latest crawl of every label: what was found, and every problem (fatal problems block going live).',
        operationId: 'getCrawlReport',
        security: VENDOR_SECURITY,
        params: ProductParams,
        response: { 200: CrawlReport, ...problems(400, 401, 404, 429) },
      },
      onRequest: authenticate,
    },
    async (req) => {
      return { productId: req.product!.id, state: req.product!.state, labels: await crawler.report(req.product!.id) };
    },
  );
}

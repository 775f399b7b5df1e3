import { Type } from 'typebox';
import type { FailureLimiter } from '../../infra/failure-limiter.js';
import type { HttpApp } from '../../infra/http.js';
import { problems, VENDOR_SECURITY } from '../openapi.js';
import type { ProductService } from '../products/service.js';
import { vendorAuthentication } from '../trust/vendor-auth.js';
import { DEFAULT_DAYS, MAX_DAYS, type StatsService } from './service.js';

const ProductParams = Type.Object({ id: Type.String({ maxLength: 200 }) });

const DATE = { pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', maxLength: 10 };

const StatsQuery = Type.Object(
  {
    from: Type.Optional(Type.String({ ...DATE, description: `first day (UTC, YYYY-MM-DD, inclusive); default: ${DEFAULT_DAYS - 1} days before \`to\`` })),
    to: Type.Optional(Type.String({ ...DATE, description: 'last day (UTC, YYYY-MM-DD, inclusive); default: today (UTC)' })),
  },
  { additionalProperties: false },
);

const DaySchema = Type.Object({
  day: Type.String({ format: 'date', description: 'UTC day' }),
  installs: Type.Integer({ minimum: 0 }),
});

const StatsAnswer = Type.Object({
  productId: Type.String(),
  from: Type.String({ format: 'date' }),
  to: Type.String({ format: 'date' }),
  total: Type.Integer({ minimum: 0, description: 'installs of every label over the range' }),
  days: Type.Array(DaySchema, { description: 'every day of the range, oldest first, zeros included: installs of all labels' }),
  labels: Type.Array(
    Type.Object({
      label: Type.String(),
      total: Type.Integer({ minimum: 0 }),
      days: Type.Array(DaySchema, { description: 'every day of the range, oldest first, zeros included' }),
    }),
    { description: 'labels installed at least once in the range, most installed first' },
  ),
});

export interface StatsRoutesOptions {
  products: Pick<ProductService, 'authenticateVendor'>;
  limiter: FailureLimiter;
  stats: StatsService;
}

/** `GET /api/products/:id/stats`: the vendor's download counts (issue 20, README "Download counts"). */
export function registerStatsRoutes(app: HttpApp, { products, limiter, stats }: StatsRoutesOptions): void {
  app.get(
    '/api/products/:id/stats',
    {
      schema: {
        tags: ['stats'],
        summary: 'Installs per day and label, counted by the download host',
        description:
          "A label's installs on a day are the downloads of its most-downloaded feature jar plus the downloads of its archive (`<label>.zip`): one install or update fetches each feature once. Only complete GETs answered 200 count (no HEAD, 304, 206 or error). Today's counts are at most a few seconds behind. " +
          `The range is at most ${MAX_DAYS} days.`,
        operationId: 'getProductStats',
        security: VENDOR_SECURITY,
        params: ProductParams,
        querystring: StatsQuery,
        response: { 200: StatsAnswer, ...problems(400, 401, 404, 429) },
      },
      onRequest: vendorAuthentication(products, limiter),
    },
    async (req) => stats.report(req.product!.id, req.query as { from?: string; to?: string }),
  );
}

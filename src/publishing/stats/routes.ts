import { type Static, Type } from 'typebox';
import type { FailureLimiter } from '../../infra/failure-limiter.js';
import type { HttpApp } from '../../infra/http.js';
import { problems, VENDOR_SECURITY } from '../openapi.js';
import type { ProductService } from '../products/service.js';
import { vendorAuthentication } from '../products/vendor-auth.js';
import type { ReportAnswers } from './report-answers.js';
import { DEFAULT_DAYS, DEFAULT_TOP, MAX_DAYS, MAX_TOP, type StatsQuery as Query } from './service.js';

const ProductParams = Type.Object({ id: Type.String({ maxLength: 200 }) });

const DATE = { pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', maxLength: 10 };

const StatsQuery = Type.Object(
  {
    from: Type.Optional(Type.String({ ...DATE, description: `first day (UTC, YYYY-MM-DD, inclusive); default: ${DEFAULT_DAYS - 1} days before \`to\`` })),
    to: Type.Optional(Type.String({ ...DATE, description: 'last day (UTC, YYYY-MM-DD, inclusive); default: today (UTC)' })),
    top: Type.Optional(
      Type.String({
        pattern: '^(0|[1-9][0-9]?)$',
        description: `0-${MAX_TOP}: how many of the most installed labels get a series of their own (default ${DEFAULT_TOP}); the rest are summed into \`other\``,
      }),
    ),
    label: Type.Optional(Type.String({ maxLength: 128, description: 'give this label a series of its own instead of the most installed ones; every other label is summed into `other`' })),
  },
  { additionalProperties: false },
);

const DaySchema = Type.Object({
  day: Type.String({ format: 'date', description: 'UTC day' }),
  installs: Type.Integer({ minimum: 1 }),
});

const Days = (description: string) => Type.Array(DaySchema, { maxItems: MAX_DAYS, description: `${description}: days of the range with installs only, oldest first` });

const StatsAnswer = Type.Object({
  productId: Type.String(),
  from: Type.String({ format: 'date' }),
  to: Type.String({ format: 'date' }),
  total: Type.Integer({ minimum: 0, description: 'installs of every label over the range' }),
  days: Days('installs of all labels'),
  labels: Type.Array(
    Type.Object({
      label: Type.String(),
      total: Type.Integer({ minimum: 0, description: 'installs in the range' }),
      allTime: Type.Integer({ minimum: 0, description: 'every install of the label so far (what orders the labels)' }),
      days: Days('installs of this label'),
    }),
    { maxItems: MAX_TOP, description: 'the `top` labels with the most installs of all, most first (or the one `label` names)' },
  ),
  other: Type.Object(
    {
      total: Type.Integer({ minimum: 0, description: 'installs of every label not in `labels`, over the range' }),
      days: Days('installs of every label not in `labels`'),
    },
    { description: 'every label not in `labels`, summed' },
  ),
});

export interface StatsRoutesOptions {
  products: Pick<ProductService, 'authenticateVendor'>;
  limiter: FailureLimiter;
  reports: ReportAnswers;
}

/** `GET /api/products/:id/stats`: the vendor's download counts (README "Download counts"). */
export function registerStatsRoutes(app: HttpApp, { products, limiter, reports }: StatsRoutesOptions): void {
  app.get(
    '/api/products/:id/stats',
    {
      schema: {
        tags: ['stats'],
        summary: 'Installs per day, of the most installed labels and of the rest, counted by the download host',
        description:
          "A label's installs on a day are the downloads of its most-downloaded feature jar plus the downloads of its archive (`<label>.zip`): one install or update fetches each feature once. Only complete GETs answered 200 count (no HEAD, 304, 206 or error), a file once per client and UTC day. Today's counts are at most a few seconds behind. " +
          `The range is at most ${MAX_DAYS} days; series list days with installs only; at most ${MAX_TOP} labels get a series of their own, every other label is summed into \`other\`.`,
        operationId: 'getProductStats',
        security: VENDOR_SECURITY,
        params: ProductParams,
        querystring: StatsQuery,
        response: { 200: StatsAnswer, ...problems(400, 401, 404, 429) },
      },
      onRequest: vendorAuthentication(products, limiter),
    },
    async (req, reply) => {
      const { top, ...query } = req.query as Omit<Query, 'top'> & { top?: string };
      const json = await reports.answer(req.product!.id, top === undefined ? query : { ...query, top: Number(top) });
      // Already the answer's JSON (built and serialized off the serving loop, in the shape of
      // StatsAnswer): a string with a JSON content type is sent as it is, not serialized again.
      return reply.type('application/json; charset=utf-8').send(json as unknown as Static<typeof StatsAnswer>);
    },
  );
}

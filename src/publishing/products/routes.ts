import { Type } from 'typebox';
import { TooManyRequestsError, UnauthorizedError } from '../../infra/errors.js';
import type { FailureLimiter } from '../../infra/failure-limiter.js';
import { type AjvIssue, type HttpApp, validationProblems } from '../../infra/http.js';
import type { CrawlerService } from '../crawler/service.js';
import { PATCH_BODY_LIMIT } from './fields.js';
import { allPatchProblems, invalidPatch, keyCountProblem } from './patch-validation.js';
import { ProductPatchSchema } from './patch-schema.js';
import type { ProductRow } from './repository.js';
import type { ProductService } from './service.js';

declare module 'fastify' {
  interface FastifyRequest {
    product?: ProductRow;
  }
}

const Params = Type.Object({ id: Type.String({ maxLength: 200 }) });
const PatchQuery = Type.Object(
  { dryRun: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false'), Type.Literal('1'), Type.Literal('0')])) },
  { additionalProperties: false },
);

export interface ProductRoutesOptions {
  products: ProductService;
  /** Failed edit-token attempts per client address. */
  limiter: FailureLimiter;
  /** Crawl reports, shown to the vendor with the edit token (issue 11). */
  crawler: CrawlerService;
}

/** `GET|PATCH /api/products/:id`: thin routes over the product service. */
export function registerProductRoutes(app: HttpApp, { products, limiter, crawler }: ProductRoutesOptions): void {
  // Runs before the body is read: an unauthenticated client never gets its body parsed.
  const authenticate = async (req: import('fastify').FastifyRequest) => {
    const wait = limiter.retryAfter(req.ip);
    if (wait > 0) throw new TooManyRequestsError(`too many failed attempts from ${req.ip}; retry in ${wait} s`, wait);
    const { id } = req.params as { id: string };
    try {
      req.product = await products.authenticate(id, req.headers.authorization);
    } catch (e) {
      if (e instanceof UnauthorizedError) limiter.fail(req.ip);
      throw e;
    }
  };

  app.get('/api/products/:id', { schema: { params: Params }, onRequest: authenticate }, async (req) => {
    return { ...products.view(req.product!), warnings: [] };
  });

  // The vendor's view of the integrity report: the latest crawl of every label.
  app.get('/api/products/:id/crawl', { schema: { params: Params }, onRequest: authenticate }, async (req) => {
    return { productId: req.product!.id, state: req.product!.state, labels: await crawler.report(req.product!.id) };
  });

  app.patch(
    '/api/products/:id',
    // attachValidation: a body the schema refuses is still checked field by field below, so the
    // answer lists every problem of the body at once.
    {
      schema: { params: Params, querystring: PatchQuery, body: ProductPatchSchema },
      onRequest: authenticate,
      // Before the schema: it would list every one of a body's unknown keys.
      preValidation: async (req) => {
        const tooMany = keyCountProblem(req.body);
        if (tooMany) throw invalidPatch([tooMany]);
      },
      bodyLimit: PATCH_BODY_LIMIT,
      attachValidation: true,
    },
    async (req) => {
      const invalid = req.validationError;
      if (invalid) {
        if (invalid.validationContext !== 'body') throw invalid;
        throw invalidPatch(await allPatchProblems(req.body, validationProblems(invalid.validation as AjvIssue[]), products.validate));
      }
      const dryRun = req.query.dryRun === 'true' || req.query.dryRun === '1';
      const result = await products.patch(req.product!, req.body, { dryRun, clientAddress: req.ip });
      return { ...result.product, changedFields: result.changedFields, warnings: result.warnings, ...(dryRun ? { dryRun: true } : {}) };
    },
  );
}

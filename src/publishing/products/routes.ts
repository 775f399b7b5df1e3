import { type Static, Type } from 'typebox';
import type { FailureLimiter } from '../../infra/failure-limiter.js';
import { type AjvIssue, type HttpApp, validationProblems } from '../../infra/http.js';
import { problem, problems, VENDOR_SECURITY } from '../openapi.js';
import { PATCH_BODY_LIMIT } from '../model/fields.js';
import { allPatchProblems, invalidPatch, keyCountProblem } from './patch-validation.js';
import { ProductPatchSchema } from './patch-schema.js';
import { PatchResponse, type ProductLabelSchema, ProductParams, ProductResponse } from './schemas.js';
import type { ProductService } from './service.js';
import { vendorAuthentication } from './vendor-auth.js';

const Params = ProductParams;
const PatchQuery = Type.Object(
  {
    // An enum rather than a union of literals: the docs show it as one choice of four values.
    dryRun: Type.Optional(
      Type.Unsafe<'true' | 'false' | '1' | '0'>({
        type: 'string',
        enum: ['true', 'false', '1', '0'],
        description: '`true` or `1`: check and answer as if stored, store nothing',
      }),
    ),
  },
  { additionalProperties: false },
);

/** What every route behind `authenticate` can answer besides its own success and errors. */
const AUTHENTICATED = problems(400, 401, 404, 429);

export interface ProductRoutesOptions {
  products: ProductService;
  /** Failed edit-token attempts per client address. */
  limiter: FailureLimiter;
  /**
   * The crawled labels of a product with their platform ranges (the crawler's, crawler/service.ts):
   * asked through this port because the crawler stands above products and reads them.
   */
  labels: { platformLabels(productId: string): Promise<Static<typeof ProductLabelSchema>[]> };
}

/** `GET|PATCH /api/products/:id`: thin routes over the product service. */
export function registerProductRoutes(app: HttpApp, { products, limiter, labels }: ProductRoutesOptions): void {
  // Runs before the body is read: an unauthenticated client never gets its body parsed.
  // A trusted-publishing credential also names the CI run (`req.publisher`).
  const authenticate = vendorAuthentication(products, limiter);

  app.get(
    '/api/products/:id',
    {
      schema: {
        tags: ['products'],
        summary: 'Read the product and its page fields',
        operationId: 'getProduct',
        security: VENDOR_SECURITY,
        params: Params,
        response: { 200: ProductResponse, ...AUTHENTICATED },
      },
      onRequest: authenticate,
    },
    async (req) => {
    return { ...products.view(req.product!), warnings: [], labels: await labels.platformLabels(req.product!.id) };
    },
  );

  app.patch(
    '/api/products/:id',
    // attachValidation: a body the schema refuses is still checked field by field below, so the
    // answer lists every problem of the body at once.
    {
      schema: {
        tags: ['products'],
        summary: 'Change page fields',
        description:
          'Send only the fields to change; `null` removes an optional field. Every problem of the body is listed at ' +
          'once (400 `invalid_field`, `errors: [{ field, message, line? }]`) and nothing is stored then. With ' +
          '`?dryRun=true` the answer is the same and nothing is stored.',
        operationId: 'patchProduct',
        security: VENDOR_SECURITY,
        params: Params,
        querystring: PatchQuery,
        body: ProductPatchSchema,
        response: {
          200: PatchResponse,
          ...AUTHENTICATED,
          ...problems(413, 415),
          503: problem(503, 'Too many changes are being checked, or the server is shutting down; see `Retry-After`'),
        },
      },
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
        const listed = await allPatchProblems(req.body, validationProblems(invalid.validation as AjvIssue[]), products.validate);
        const reported = new Set(listed.map((p) => p.field));
        throw invalidPatch([...listed, ...(await products.labelProblems(req.product!, req.body)).filter((p) => !reported.has(p.field))]);
      }
      const dryRun = req.query.dryRun === 'true' || req.query.dryRun === '1';
      const result = await products.patch(req.product!, req.body, { dryRun, clientAddress: req.ip, publisher: req.publisher ?? null });
      return { ...result.product, changedFields: result.changedFields, warnings: result.warnings, ...(dryRun ? { dryRun: true } : {}) };
    },
  );
}

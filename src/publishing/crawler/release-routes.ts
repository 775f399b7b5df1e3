// The release routes stand with the crawler because releasing is its act: it crawls a copy of the
// upload and makes it current only when it installs (service.ts `release`, `rollback`); releases/
// below keeps the copies and the pointer to the current one.
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AppError, ConflictError, NotFoundError } from '../../infra/errors.js';
import type { FailureLimiter } from '../../infra/failure-limiter.js';
import type { HttpApp } from '../../infra/http.js';
import type { CrawlerService, LabelCrawl } from './service.js';
import { LabelCrawlSchema } from './schemas.js';
import { isLabel } from '../files/tree.js';
import { problem, problems, VENDOR_SECURITY } from '../openapi.js';
import type { ProductService } from '../products/service.js';
import type { TrustService } from '../trust/service.js';
import { vendorAuthentication } from '../products/vendor-auth.js';
import type { ReleasedBy, ReleasesService } from '../releases/service.js';

const LabelParams = Type.Object({ id: Type.String({ maxLength: 200 }), label: Type.String({ maxLength: 200 }) });
const ProductParams = Type.Object({ id: Type.String({ maxLength: 200 }) });

const ReleasedBySchema = Type.Unsafe<ReleasedBy | null>({
  type: ['object', 'null'],
  description: 'who released it: `vendor` (edit token), `trusted-publisher` (with the CI run), `automatic` (the crawl after an SFTP upload settled), `staff`',
  additionalProperties: true,
  properties: { kind: { type: 'string', enum: ['vendor', 'automatic', 'staff', 'trusted-publisher'] } },
});

const ReleaseSchema = Type.Object({
  number: Type.Integer({ minimum: 1 }),
  createdAt: Type.String({ format: 'date-time' }),
  releasedAt: Type.Unsafe<string | null>({ type: ['string', 'null'], format: 'date-time' }),
  files: Type.Integer(),
  bytes: Type.Integer(),
  releasedBy: ReleasedBySchema,
});

const AttemptSchema = Type.Object({
  number: Type.Integer({ minimum: 1 }),
  status: Type.Unsafe<'checking' | 'refused'>({ type: 'string', enum: ['checking', 'refused'], description: '`checking`: being crawled; `refused`: its crawl found problems that make installs fail (the crawl report lists them)' }),
  createdAt: Type.String({ format: 'date-time' }),
  files: Type.Integer(),
  bytes: Type.Integer(),
});

const LabelReleasesSchema = Type.Object({
  label: Type.String(),
  current: Type.Unsafe<number | null>({
    type: ['integer', 'null'],
    description: "the release downloaders get; null before the first release or after the label's folder was removed (the label's URL answers 404)",
  }),
  releases: Type.Array(ReleaseSchema, { description: 'kept releases, newest first' }),
  attempt: Type.Unsafe<object | null>({
    ...AttemptSchema,
    type: ['object', 'null'],
    description: 'the newest copy of an upload when it is newer than every release and is not one (being crawled, or refused); `<label>@<n>/` never serves it',
  }),
});

const ReleaseAnswer = Type.Object({
  label: Type.String(),
  release: Type.Unsafe<object | null>({ ...ReleaseSchema, type: ['object', 'null'], description: 'the current release after this call' }),
  unchanged: Type.Boolean({ description: 'the folder had not changed since the current release: nothing new was released' }),
  crawl: LabelCrawlSchema,
});

const RollbackBody = Type.Object(
  { release: Type.Optional(Type.Integer({ minimum: 1, maximum: 999_999_999, description: 'default: the newest release before the current one' })) },
  { additionalProperties: false },
);

/** A copy whose crawl found problems that make installs fail: what users get does not change. */
export class ReleaseRefusedError extends AppError {
  constructor(label: string, crawl: Pick<LabelCrawl, 'problems' | 'release'>) {
    const blocking = crawl.problems.filter((p) => p.severity === 'fatal' || p.severity === 'error');
    super(
      422,
      'release_refused',
      'Release refused',
      `update-site/${label}/ was not released: its crawl found ${blocking.length} ${blocking.length === 1 ? 'problem that makes' : 'problems that make'} installs fail (each in errors, named in your upload folder); ` +
        crawl.release.users,
      blocking.map((p) => ({ field: p.where, message: `${p.severity} ${p.code}: ${p.message}`, ...(p.line ? { line: p.line } : {}) })),
    );
    this.name = 'ReleaseRefusedError';
  }
}

export interface ReleaseRoutesOptions {
  products: Pick<ProductService, 'authenticateVendor'>;
  limiter: FailureLimiter;
  crawler: CrawlerService;
  releases: ReleasesService;
  /** The product's trusted-publishing history records releases made with a CI credential. */
  trust: Pick<TrustService, 'recordRelease'>;
}

const byOf = (req: FastifyRequest): ReleasedBy =>
  req.publisher
    ? { kind: 'trusted-publisher', provider: req.publisher.provider, repository: req.publisher.repository, workflow: req.publisher.workflow, ref: req.publisher.ref, runId: req.publisher.runId }
    : { kind: 'vendor' };

const labelOf = (req: FastifyRequest): string => {
  const { label } = req.params as { label: string };
  if (!isLabel(label)) throw new NotFoundError(`"${label}" is not a label`);
  return label;
};

/**
 * `…/labels`: a label's releases, the explicit release of an upload, and a rollback
 * (docs/vendors.md#releases-a-label-changes-all-at-once).
 */
export function registerReleaseRoutes(app: HttpApp, { products, limiter, crawler, releases, trust }: ReleaseRoutesOptions): void {
  const authenticate = vendorAuthentication(products, limiter);

  app.get(
    '/api/products/:id/labels',
    {
      schema: {
        tags: ['releases'],
        summary: "Each label's current release and the releases kept for a rollback",
        operationId: 'listLabelReleases',
        security: VENDOR_SECURITY,
        params: ProductParams,
        response: { 200: Type.Object({ labels: Type.Array(LabelReleasesSchema) }), ...problems(400, 401, 404, 429) },
      },
      onRequest: authenticate,
    },
    async (req) => ({ labels: await releases.list(req.product!.id) }),
  );

  app.post(
    '/api/products/:id/labels/:label/release',
    {
      schema: {
        tags: ['releases'],
        summary: "Release the label's uploaded folder now: crawl a copy and make it current when it installs",
        description:
          'Call after an upload is complete. Waits for the crawl (up to PIER_CRAWL_TIMEOUT_SECONDS). Without this call, an SFTP upload is released by the automatic crawl once the folder has been quiet for PIER_CRAWL_SETTLE_SECONDS.',
        operationId: 'releaseLabel',
        security: VENDOR_SECURITY,
        params: LabelParams,
        response: {
          200: ReleaseAnswer,
          ...problems(400, 401, 429),
          404: problem(404, 'No such product, or no uploaded update-site/<label>/ folder (problem+json `not_found`)'),
          409: problem(409, 'A newer upload of the label was released meanwhile (problem+json `superseded`)'),
          422: problem(
            422,
            "The crawl found problems that make installs fail, each in `errors` (problem+json `release_refused`, `field` names the file in the upload folder over SFTP); `detail` says what users get now (the current release, or 404 before the label's first release)",
          ),
        },
      },
      onRequest: authenticate,
    },
    async (req) => {
      const id = req.product!.id;
      const label = labelOf(req);
      const done = await crawler.release(id, label, byOf(req));
      if (done.candidate && !done.released) {
        if (done.crawl.summary?.fatal || done.crawl.problems.some((p) => p.severity === 'error')) throw new ReleaseRefusedError(label, done.crawl);
        throw new ConflictError(`a newer upload of label "${label}" was released while this one was crawled; it is kept as release ${done.candidate.number}`, 'superseded');
      }
      const current = (await releases.list(id)).find((l) => l.label === label);
      const release = current?.releases.find((r) => r.number === current.current) ?? null;
      if (req.publisher && release && done.released) await trust.recordRelease(id, req.publisher, { label, release: release.number }, req.ip);
      return { label, release, unchanged: done.candidate === null, crawl: done.crawl };
    },
  );

  app.post(
    '/api/products/:id/labels/:label/rollback',
    {
      schema: {
        tags: ['releases'],
        summary: 'Move the label back to an earlier kept release (default: the one before the current)',
        operationId: 'rollbackLabel',
        security: VENDOR_SECURITY,
        params: LabelParams,
        body: RollbackBody,
        response: {
          200: Type.Object({ label: Type.String(), current: Type.Integer(), previous: Type.Unsafe<number | null>({ type: ['integer', 'null'] }) }),
          ...problems(400, 401, 413, 415, 429),
          404: problem(404, 'No such product, label or kept release (problem+json `not_found`)'),
          409: problem(
            409,
            "No release before the current one (problem+json `no_earlier_release`), or the label's upload folder was removed (`label_removed`: a removed folder withdraws the label; upload it again first)",
          ),
        },
      },
      onRequest: authenticate,
    },
    async (req) => crawler.rollback(req.product!.id, labelOf(req), (req.body as { release?: number } | undefined)?.release, byOf(req)),
  );
}

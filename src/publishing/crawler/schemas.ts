/**
 * Response schemas of crawl reports, for every route that presents one (the vendor's report,
 * a release's crawl). fastify serializes answers with them: a property missing here would be
 * dropped from the answer, so each lists everything LabelCrawl, CrawlSummary and CrawlProblem hold.
 * No `anyOf` (fast-json-stringify checks every branch on each answer); nullable is a type array.
 */
import { type Static, Type } from 'typebox';

export const CrawlProblemSchema = Type.Object(
  {
    severity: Type.Unsafe<'fatal' | 'error' | 'warning'>({
      type: 'string',
      enum: ['fatal', 'error', 'warning'],
      description: '`fatal` blocks going live and a release; `error` blocks a release',
    }),
    code: Type.String({ description: 'stable problem code, e.g. artifact_missing, checksum_mismatch, metadata_unreadable' }),
    message: Type.String(),
    where: Type.String({ description: 'URL, or `bundle!entry` inside a jar, the problem is about' }),
    line: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { description: 'One problem found by the crawl' },
);

export const CrawlSummarySchema = Type.Object(
  {
    units: Type.Integer({ description: 'installable units in the P2 metadata' }),
    features: Type.Integer(),
    bundles: Type.Integer(),
    categories: Type.Integer(),
    nodes: Type.Integer({ description: 'nodes indexed into the node catalog' }),
    nodeSets: Type.Integer(),
    problems: Type.Integer(),
    fatal: Type.Boolean({ description: 'a fatal problem was found' }),
  },
  // Stored as JSON by earlier versions too: whatever else such a summary holds is kept.
  { additionalProperties: true },
);

export const ReleaseOutcomeSchema = Type.Object(
  {
    outcome: Type.Unsafe<'released' | 'refused' | 'checking' | 'none'>({
      type: 'string',
      enum: ['released', 'refused', 'checking', 'none'],
      description:
        'what the crawl did with a copy of the upload: `released` (it became release `number`), `refused` (problems that make installs fail: not released), `checking` (being crawled), `none` (no new copy: the folder had not changed since its release, a rollback, a removal)',
    }),
    number: Type.Unsafe<number | null>({ type: ['integer', 'null'], description: "the copy's number; `<label>@<n>/` serves it only once released" }),
    serving: Type.Unsafe<number | null>({ type: ['integer', 'null'], description: "the release users get from the label's URL now; null: it answers 404" }),
    users: Type.String({ description: "what users get from the label's URL now, for people" }),
    message: Type.String({ description: 'what happened and what users get, for people' }),
  },
  { description: "What the crawl did about the label's releases" },
);

/** GET /api/products/:id/crawl lists one per label; a release answers the one of its crawl. */
export const LabelCrawlSchema = Type.Object(
  {
    label: Type.String(),
    status: Type.Unsafe<'running' | 'finished'>({ type: 'string', enum: ['running', 'finished'] }),
    url: Type.String({ description: 'the label\'s update site on the download host, as crawled' }),
    startedAt: Type.String({ format: 'date-time' }),
    finishedAt: Type.Unsafe<string | null>({ type: ['string', 'null'], format: 'date-time' }),
    stale: Type.Boolean({ description: 'the label\'s files changed after this crawl started: a new crawl is due' }),
    summary: Type.Unsafe<Static<typeof CrawlSummarySchema> | null>({ ...CrawlSummarySchema, type: ['object', 'null'] }),
    problems: Type.Array(CrawlProblemSchema),
    platformRange: Type.Unsafe<string | null>({
      type: ['string', 'null'],
      description: 'platform releases the label installs into, OSGi range notation (e.g. `[4.3.0,6.0.0)`); null when no unit requires a core unit of the platform',
    }),
    release: ReleaseOutcomeSchema,
  },
  { description: 'The latest crawl of one label' },
);

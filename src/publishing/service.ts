import { fastPathRequestIds } from '../infra/request-id.js';
import { drained } from '../infra/drain.js';
import { readinessProbe } from '../infra/readiness.js';
import type { Config } from '../infra/config.js';
import { installFastPath } from '../infra/fast-path/fast-path.js';
import { hostCounts } from '../infra/metrics/hosts.js';
import { FailureLimiter, type FailureLimiterOptions } from '../infra/failure-limiter.js';
import { createHttpApp, type HttpApp } from '../infra/http.js';
import { isolatedRenderer, type RenderHold } from './web/isolated-render.js';
import { releaseNodesRepository } from './changes/repository.js';
import { registerChangesRoutes } from './changes/routes.js';
import { boundedSnapshots } from './changes/snapshot-budget.js';
import { changesService } from './changes/service.js';
import { localDiffer } from './changes/compare.js';
import { type CatalogReads, catalogReads } from './web/catalog-reads.js';
import { type AutoCrawl, startAutoCrawl } from './crawler/auto.js';
import { registerCrawlReportRoutes } from './crawler/report-routes.js';
import { crawlsRepository } from './crawler/repository.js';
import { type CrawlerService, crawlerService } from './crawler/service.js';
import { openPublishingDatabase } from './db.js';
import { type ProductFilesReader, productFilesReader } from './files/reader.js';
import { stampedFiles } from './files/stamped-reader.js';
import { fileManifests } from './files/manifest.js';
import { registerManifestRoutes } from './products/manifest-routes.js';
import { filesRepository } from './files/repository.js';
import { registerInfoRoutes } from './info/routes.js';
import { localStorage } from '../infra/storage-local.js';
import { registerPublishingOpenApi } from './openapi.js';
import { PATCH_BODY_LIMIT } from './model/fields.js';
import { isolatedValidator } from './products/isolated-validation.js';
import { productsRepository } from './products/repository.js';
import { registerProductRoutes } from './products/routes.js';
import { releasesRepository } from './releases/repository.js';
import { registerReleaseRoutes } from './crawler/release-routes.js';
import { releasesService } from './releases/service.js';
import { uploadedLabelsOf } from './notices/notices.js';
import { installsRepository } from './stats/installs-repository.js';
import { registerStatsRoutes } from './stats/routes.js';
import { publishingCallers } from './pacing.js';
import { paceCallers } from '../infra/pace-hooks.js';
import { reportAnswers } from './stats/report-answers.js';
import { buildReport, statsService } from './stats/service.js';
import { withChartDays } from './web/page-days.js';
import { type ProductService, productService } from './products/service.js';
import { PageAnswers } from './web/page-answers.js';
import { databasePageChanges } from './web/page-changes.js';
import { changesPages } from './web/changes-pages.js';
import { MAX_FACTORY_LENGTH, PAGE_CSP, registerPageRoutes } from './web/routes.js';
import { type PagesService, pagesService } from './web/service.js';
import { trustRepository } from './trust/repository.js';
import { registerTrustRoutes } from './trust/routes.js';
import { type TrustService, trustService } from './trust/service.js';

export interface PublishingService {
  app: HttpApp;
  products: ProductService;
  /** What was uploaded over SFTP: labels, assets, workflows and a change stamp for caches. */
  files: ProductFilesReader;
  /** Public pages, feeds and badges, cached per product. */
  pages: PagesService;
  /** Whole page answers the fast path serves (null when it is off). */
  pageAnswers: PageAnswers | null;
  /** The worker thread comparisons and node searches run in (null for a `:memory:` database, read in-process). */
  catalogReads: CatalogReads | null;
  /** Crawls of uploaded update sites, their reports and going live. */
  crawler: CrawlerService;
  /** Trusted publishing: CI identities bound to products, the credential exchange, the history (`recordRelease`). */
  trust: TrustService;
  /** The automatic re-crawl of settled uploads; null when PIER_CRAWL_SETTLE_SECONDS=0. */
  autoCrawl: AutoCrawl | null;
  /**
   * Stops taking requests and ends once those in flight are answered, or after `drainMs` (0: cut
   * at once; none: as long as they take). A crawl in progress is waited for, or with `cutCrawls`
   * (SIGTERM) cut short and handed back: it records nothing, and its label is crawled again at
   * the next start.
   */
  close(drainMs?: number, options?: { cutCrawls?: boolean }): Promise<void>;
}

export interface PublishingOptions {
  /** Bans of addresses that keep sending bad edit tokens (defaults: 10 failures a minute → 60 s). */
  failureLimits?: Partial<FailureLimiterOptions>;
  /** Tests only: a page render in its worker counts itself in cell 1, then waits while cell 0 is 0 (per product if a function). */
  renderHold?: RenderHold;
  /** Tests only: the clock of the per-product render-time budget, ms. */
  renderClock?: () => number;
  /** Tests only: a PATCH check in its worker counts itself in cell 1, then waits while cell 0 is 0. */
  validationHold?: Int32Array;
  /** Plain page requests answered before the app from answers it sent before (infra/fast-path); on unless false. */
  pageFastPath?: boolean;
  /** Tests only: how long one read of the page change counter serves further requests, ms (FRESH_MS). */
  pageFreshMs?: number;
  /** Tests only: the clock of trusted publishing (ID token expiry, credential lifetime). */
  trustClock?: () => Date;
  /** Tests only: the clock of download statistics (today, and the last day the product page shows). */
  statsClock?: () => number;
  /** Monotonic milliseconds the pacing of callers reads (tests freeze it); default performance.now. */
  paceClock?: () => number;
}

/** Memory for whole page answers kept for the fast path (product pages are ~20 KB). */
const PAGE_ANSWER_BYTES = 64 * 1024 * 1024;

/** The publishing web + REST API part: opens and migrates its database, builds the app. */
/** Files of a product below which its label totals are summed right here (a few ms at most). */
const INLINE_TOTALS_FILES = 2_000;

/**
 * Where a product's label totals are summed. PostgreSQL sums them in its own process; SQLite on
 * this thread, which a product of tens of thousands of files would hold for tens of ms, so those
 * go to the catalog worker. Its queue is shared with searches and comparisons: when it refuses
 * or fails, they are summed here after all, so a busy worker never makes a page a 503.
 */
function labelTotalsReader(repo: ReturnType<typeof filesRepository>, worker: CatalogReads | null) {
  if (!worker) return (productId: string) => repo.labelTotals(productId);
  return async (productId: string) => {
    const files = Number((await repo.state(productId))?.used_files ?? 0);
    if (files < INLINE_TOTALS_FILES) return repo.labelTotals(productId);
    return worker.labelTotals(productId).catch(() => repo.labelTotals(productId));
  };
}

export async function createPublishingService(config: Config, options: PublishingOptions = {}): Promise<PublishingService> {
  const database = await openPublishingDatabase(config.publishing.databaseUrl);
  const repo = productsRepository(database.db, database.dialect, { readNow: database.readNow });
  // PATCH bodies are checked off the event loop, under the page render's time limit.
  const validator = isolatedValidator({ timeoutMs: config.publishing.pageRenderTimeoutSeconds * 1000, hold: options.validationHold });
  const trust = trustService({ repo: trustRepository(database.db), products: repo, oidc: config.publishing.oidc, now: options.trustClock });
  // Two labels of thousands of nodes are compared, nodes searched, stats reports and (on SQLite)
  // label totals read in a worker thread with its own connection (a database only this process
  // can open is read here).
  const reads = config.publishing.databaseUrl === ':memory:' ? null : catalogReads({ databaseUrl: config.publishing.databaseUrl, timeoutMs: config.publishing.pageRenderTimeoutSeconds * 1000 });
  // Labels and workflows are read once per change of the product's files, by every reader here.
  const filesRepo = filesRepository(database.db);
  const files = stampedFiles(productFilesReader(filesRepo, { labelTotals: labelTotalsReader(filesRepo, database.dialect === 'sqlite' ? reads : null) }));
  const products = productService({ repo, publishing: config.publishing, validate: validator.validate, trust, uploadedLabels: uploadedLabelsOf(files) });
  const crawls = crawlsRepository(database.db, database.dialect);
  const releases = releasesService({
    storage: localStorage(config.publishing.storageDir),
    repo: releasesRepository(database.db),
    keep: config.publishing.releasesKept,
    limits: config.publishing.limits,
    log: { error: (o, msg) => app.log.error(o, msg) },
  });
  const snapshots = releaseNodesRepository(database.db);
  const differ = reads?.differ ?? localDiffer(snapshots);
  const nodeChanges = changesService({ snapshots, files, products: repo, current: releases.current, differ });
  const crawler = crawlerService({
    crawls,
    products: repo,
    files,
    releases,
    snapshots: boundedSnapshots(snapshots, config.publishing.releaseSnapshotBytes),
    downloadUrl: config.publishing.downloadUrl,
    sftp: { host: config.publishing.sftpHost, port: config.publishing.sftpPort },
    // The app (and its logger) is built below; crawls run only after start-up.
    log: { error: (o, msg) => app.log.error(o, msg) },
    isolation: { maxMemoryMb: config.publishing.crawlMaxMemoryMb, timeoutMs: config.publishing.crawlTimeoutSeconds * 1000 },
    platformCorePrefixes: config.publishing.platformCorePrefixes,
    platformCategories: config.publishing.platformCategories,
    nodeLimits: config.publishing.nodeLimits,
  });
  const renderer = isolatedRenderer({
    timeoutMs: config.publishing.pageRenderTimeoutSeconds * 1000,
    workers: config.publishing.pageRenderWorkers,
    // A tenth of wall time: a product whose content takes seconds to render can keep at most that
    // share of one worker busy once its burst is spent (see content/render-budget.ts).
    budget: { burstMs: config.publishing.pageRenderBudgetSeconds * 1000, share: 0.1 },
    now: options.renderClock,
    hold: options.renderHold,
  });
  const stats = statsService({ repo: installsRepository(database.db), now: options.statsClock });
  // Reports are built in the catalog worker (or here for an in-memory database) and kept briefly.
  const reports = reportAnswers({
    today: stats.today,
    build: reads ? (id, request) => reads.statsReport(id, request) : async (id, request) => JSON.stringify(await buildReport(installsRepository(database.db), id, request)),
  });
  const changes = withChartDays(databasePageChanges(database, options.pageFreshMs), stats.chartDay);
  const site = { name: 'Pier', baseUrl: config.publishing.baseUrl, downloadUrl: config.publishing.downloadUrl };
  const pages = pagesService({
    nodeChanges: { service: nodeChanges, pages: changesPages({ service: nodeChanges, site }) },
    renderer,
    repo,
    files: files,
    released: releases.current,
    crawls,
    searchNodes: reads?.search,
    changes,
    downloads: stats,
    site,
  });
  const app = createHttpApp({
    appName: 'web',
    logLevel: config.logLevel,
    logRequests: config.requestLog !== false,
    bodyLimit: PATCH_BODY_LIMIT,
    trustProxy: config.trustProxy,
    // Node pages are addressed by factory class name, which can be longer than fastify's 100.
    maxParamLength: MAX_FACTORY_LENGTH,
    publicUrl: config.publishing.baseUrl,
    // A NUL in a product id or factory class would reach the database (a 500 on PostgreSQL, where
    // text cannot hold it): refused as 400 before the product routes authenticate (onRequest).
    // PATCH bodies are checked by the patch validation, which refuses every control character.
    refuseNulInAddress: true,
    notReady: readinessProbe(() => database.ping()),
  });
  // Before any route: the document and the check that every /api/ route documents itself see
  // only routes added after them.
  // One caller's loop (stats reports, PATCHes, searches) is served at its pace and takes turns
  // with everyone else's requests (infra/pace-hooks.ts); pages answered on the fast path are not paced.
  paceCallers(app, config.publishing.pace, publishingCallers, options.paceClock);
  await registerPublishingOpenApi(app, { baseUrl: config.publishing.baseUrl, pagePolicy: PAGE_CSP });
  const limiter = new FailureLimiter({ maxFailures: 10, windowMs: 60_000, banMs: 60_000, ...options.failureLimits });
  registerProductRoutes(app, { products, limiter, labels: crawler });
  registerCrawlReportRoutes(app, { products, limiter, crawler });
  registerTrustRoutes(app, { trust, limiter });
  registerReleaseRoutes(app, { products, limiter, crawler, releases, trust });
  registerChangesRoutes(app, { products, limiter, changes: nodeChanges });
  registerStatsRoutes(app, { products, limiter, reports });
  registerInfoRoutes(app, config);
  // SHA-256 of stored files for `pier publish`, cached by storage version (files/manifest.ts).
  registerManifestRoutes(app, { products, limiter, manifests: fileManifests(localStorage(config.publishing.storageDir)) });
  const fastPath = options.pageFastPath !== false;
  const answers = fastPath ? new PageAnswers(changes, PAGE_ANSWER_BYTES) : null;
  registerPageRoutes(app, pages, { changes, answers, sharedMaxAgeSeconds: config.publishing.pageSharedMaxAgeSeconds });
  const logRequests = config.requestLog !== false && ((app.log as { isLevelEnabled?(level: string): boolean }).isLevelEnabled?.('info') ?? true);
  const fast = answers
    ? installFastPath(app.server, {
        lookup: (target) => answers.lookup(target),
        // The pages the app answers are counted by the app (pier_http_*, infra/metrics/http.ts).
        counts: hostCounts('pages', { countsNodeHttp: false }),
        requestId: fastPathRequestIds(config.trustProxy),
        // The app's request line (infra/http.ts), marked as answered on the fast path.
        // The connection's address: behind PIER_TRUST_PROXY that is the proxy's (the app's lines
        // name the client from X-Forwarded-For), so it is logged as `peer` there, not as `ip`.
        served: logRequests
          ? (r, started, socket, reqId) =>
              app.log.info(
                {
                  reqId,
                  method: r.method,
                  path: r.target.split('?')[0],
                  status: 200,
                  ms: Math.round(Number(process.hrtime.bigint() - started) / 1e6),
                  [config.trustProxy === false ? 'ip' : 'peer']: socket.remoteAddress,
                  fast: true,
                },
                'request',
              )
          : undefined,
      })
    : null;
  app.addHook('onClose', async () => fast?.closeAll());
  const autoCrawl = config.publishing.crawlSettleSeconds > 0 ? startAutoCrawl(crawler, config.publishing.crawlSettleSeconds, app.log) : null;
  return {
    app,
    products,
    files,
    pages,
    pageAnswers: answers,
    catalogReads: reads,
    crawler,
    trust,
    autoCrawl,
    async close(drainMs?: number, options: { cutCrawls?: boolean } = {}) {
      fast?.closeIdle();
      await Promise.all([
        // The crawler first: a crawl in progress is cut short and handed back (crawled again at
        // the next start), so the automatic pass that runs it ends now, not after the crawl.
        (async () => {
          await crawler.close({ cut: options.cutCrawls });
          await autoCrawl?.stop();
        })(),
        drained(() => app.close(), drainMs, () => {
          app.server.closeAllConnections();
          fast?.closeAll();
        }),
      ]);
      await renderer.close();
      await reads?.close();
      await validator.close();
      await database.close();
    },
  };
}

/**
 * Crawls of a product's uploaded labels, their reports, and the staff rule for going live
 * (docs/staff.md#crawling-and-going-live: hidden → live only when the latest crawl of every label
 * finished without fatal problems; `force` overrides and says so; spec "States and transitions":
 * uploading alone never changes the state). A label counts as changed by any add, replace, remove
 * or rename of its files (label_changes, migration 0005); a crawl of a label whose files are all
 * gone drops its nodes.
 */
import { withdrawnInFields } from '../notices/notices.js';
import { KNIME_CATEGORIES, type PlatformCategory } from '../../infra/platform-categories.js';
import { ConflictError, NotFoundError } from '../../infra/errors.js';
import type { ReleaseNodesRepository } from '../changes/repository.js';
import { signaturesOf } from '../changes/signature.js';
import type { ProductFilesReader } from '../files/reader.js';
import { isLabel } from '../files/tree.js';
import type { ProductRow, ProductsRepository } from '../products/repository.js';
import { type Candidate, candidateSegment, type ReleasedBy, type ReleasesService } from '../releases/service.js';
import { type CrawlLimits, type CrawlSummary, DEFAULT_CRAWL_LIMITS } from './crawl.js';
import type { StoredCrawlResult as CrawlResult } from './result.js';
import { CrawlAborted, DEFAULT_ISOLATION, type IsolationLimits, isolatedCrawler } from './isolated.js';
import { type CrawlOutcome, crawlMetrics } from './metrics.js';
import { DEFAULT_NODE_LIMITS, limitNodes, type NodeLimits } from './node-limits.js';
import type { CrawlProblem } from './problems.js';
import { failedCrawl, removedLabel } from './empty-crawl.js';
import { LabelRemovedError, readdressed, type ReleaseOutcome, releaseOutcome, uploadFolderAddress } from './release-outcome.js';
import { nodeRows } from './node-rows.js';
import { contradictsLabel, DEFAULT_CORE_PREFIXES, platformReleases } from './platform-range.js';
import type { CrawlRow, CrawlsRepository } from './repository.js';

/** A running crawl not finished after this long is taken as abandoned (its process died). */
const CLAIM_STALE_MS = 15 * 60_000;

export interface LabelCrawl {
  label: string;
  status: CrawlRow['status'];
  url: string;
  startedAt: string;
  finishedAt: string | null;
  /** The label's files changed (added, replaced, removed, renamed) after this crawl started. */
  stale: boolean;
  summary: CrawlSummary | null;
  problems: CrawlProblem[];
  /** The label's platform range (OSGi notation), null when none was found or before a crawl computed one. */
  platformRange: string | null;
  /** What this crawl did about the label's releases, and what users get now. */
  release: ReleaseOutcome;
}

/** A crawled label as the product's JSON lists it, with its platform range. */
export interface LabelPlatform {
  label: string;
  url: string;
  platformRange: string | null;
  /** `platformRange` as releases, for people ("5.1 – 5.3"). */
  platformReleases: string | null;
}

export interface CrawlerServiceDeps {
  crawls: CrawlsRepository;
  products: ProductsRepository;
  files: ProductFilesReader;
  /** Public URL of the download host: the crawler reads what users get. */
  downloadUrl: string;
  /**
   * Label releases: a crawl of a changed label crawls a copy of its folder and makes it the
   * label's current release when it installs (a label's folder is never served as such).
   */
  releases: ReleasesService;
  /** The SFTP server's public address (PIER_SFTP_HOST, PIER_SFTP_PORT): a refused copy's problems name the vendor's upload folder there. */
  sftp?: { host: string; port: number };
  /** Node snapshots of releases: written when a copy is released, for the changes page. */
  snapshots?: Pick<ReleaseNodesRepository, 'save'>;
  limits?: CrawlLimits;
  /** Memory and wall-time limits of the worker thread crawls run in. */
  isolation?: IsolationLimits;
  /** Name prefixes of the platform's core units (PIER_PLATFORM_CORE_PREFIXES). */
  platformCorePrefixes?: readonly string[];
  /** Node categories the platform declares (PIER_PLATFORM_CATEGORIES): not warned about as undeclared. */
  platformCategories?: readonly PlatformCategory[];
  /** What one label's and one product's node catalog may hold (PIER_CRAWL_MAX_NODES, PIER_NODE_DATA_QUOTA). */
  nodeLimits?: NodeLimits;
  /** Where failures of ours (not of the site) are logged for operators. */
  log?: { error(o: object, msg: string): void };
  now?: () => Date;
}

/** What one crawl of a label did about its releases. */
export interface CrawlDone {
  /** The copy crawled, when the label's folder had changed since its current release. */
  candidate: Candidate | null;
  /** The copy became the label's current release. */
  released: boolean;
}

/** A crawl problem that makes installs from the label fail: such a copy never becomes current. */
const blocksRelease = (r: CrawlResult) => r.summary.fatal || r.problems.some((p) => p.severity === 'error');

export interface StateChange {
  productId: string;
  state: ProductRow['state'];
  forced: boolean;
  /** Why going live would have been refused (listed also when forced). */
  blockers: string[];
}

/**
 * A label named as a platform release (`5.2`, `5.2.1`) whose metadata does not install into that
 * release: worth a warning, the name tells users otherwise.
 */
function labelNameChecked(r: CrawlResult, label: string): CrawlResult {
  if (!contradictsLabel(label, r.platformRange)) return r;
  const problems: CrawlProblem[] = [
    ...r.problems,
    {
      severity: 'warning',
      code: 'platform_range_label',
      message: `the label "${label}" reads as platform release ${label}, but its units require ${r.platformRange} (${platformReleases(r.platformRange)}), which leaves ${label} out`,
      where: r.url,
    },
  ];
  return { ...r, problems, summary: { ...r.summary, problems: problems.length } };
}

export function crawlerService({
  crawls,
  products,
  files,
  downloadUrl,
  releases,
  sftp,
  snapshots,
  limits = DEFAULT_CRAWL_LIMITS,
  isolation = DEFAULT_ISOLATION,
  platformCorePrefixes = DEFAULT_CORE_PREFIXES,
  platformCategories = KNIME_CATEGORIES,
  nodeLimits = DEFAULT_NODE_LIMITS,
  log,
  now = () => new Date(),
}: CrawlerServiceDeps) {
  // Crawls run in a worker thread: vendor input never blocks or exhausts the serving process.
  const isolated = isolatedCrawler(limits, isolation, platformCorePrefixes, platformCategories);
  const metrics = crawlMetrics();
  /** Set by `close`: a crawl that fails from then on was cut short, not wrong (see `crawlLabel`). */
  let closing = false;

  async function product(id: string): Promise<ProductRow> {
    const row = await products.find(id);
    if (!row) throw new NotFoundError(`no product "${id}"`);
    return row;
  }

  async function report(productId: string): Promise<LabelCrawl[]> {
    await product(productId);
    const changed = await crawls.labelChanges(productId);
    const copies = await releases.copies(productId);
    return (await crawls.forProduct(productId)).map((c) => ({
      label: c.label,
      status: c.status,
      url: c.url,
      startedAt: c.started_at,
      finishedAt: c.finished_at,
      stale: Number(c.files_seq) < (changed.get(c.label) ?? 0),
      summary: c.status === 'finished' ? (JSON.parse(c.summary) as CrawlSummary) : null,
      problems: JSON.parse(c.problems) as CrawlProblem[],
      platformRange: c.platform_range ?? null,
      release: releaseOutcome(
        { status: c.status, startedAt: c.started_at, filesSeq: Number(c.files_seq), url: c.url },
        copies.filter((r) => r.label === c.label),
        releases.current(productId, c.label),
      ),
    }));
  }

  /**
   * Every crawled label of a product that still has its update-site folder, with its platform
   * range (GET /api/products/<id>); a label being crawled again keeps its last range meanwhile.
   */
  async function platformLabels(productId: string): Promise<LabelPlatform[]> {
    const present = new Set(await crawlableLabels(productId));
    return (await crawls.forProduct(productId))
      .filter((c) => c.finished_at !== null && present.has(c.label))
      .map((c) => ({ label: c.label, url: c.url, platformRange: c.platform_range ?? null, platformReleases: platformReleases(c.platform_range ?? null) }));
  }

  /**
   * Labels that have an update-site folder (an archive alone is not a repository users can add),
   * except withdrawn ones: the download host answers 410 for them, so they are not crawled, and
   * their last crawl neither lists their nodes nor keeps the product from going live.
   */
  async function crawlableLabels(productId: string): Promise<string[]> {
    const row = await products.find(productId);
    const withdrawn = row ? withdrawnInFields(row.fields) : new Map<string, string | null>();
    return (await files.listLabels(productId)).filter((l) => l.files > 0 && !withdrawn.has(l.label)).map((l) => l.label);
  }

  /** Labels uploaded only as `update-site/<label>.zip`: listed on the page for download, never crawled. */
  async function archiveOnlyLabels(productId: string): Promise<string[]> {
    return (await files.listLabels(productId)).filter((l) => l.files === 0 && l.hasArchive).map((l) => l.label);
  }

  /**
   * Crawls one label and stores the result. With `claim`, another process's fresh crawl of the
   * same label wins and nothing is done (returns null). A label with no files left is not
   * fetched: its crawl is `removedLabel` (no nodes).
   */
  async function crawlLabel(
    row: ProductRow,
    l: string,
    claim: { changedSeq: number } | null,
    by: ReleasedBy = { kind: 'automatic' },
    /** false: crawl what downloaders get now, never a new copy (after a rollback). */
    copy = true,
  ): Promise<CrawlDone | null> {
    const productId = row.id;
    // A withdrawn label answers 410 on the download host: nothing to read until its notice goes.
    if (withdrawnInFields(row.fields).has(l)) return null;
    const url = `${downloadUrl}/${encodeURIComponent(productId)}/${encodeURIComponent(l)}/`;
    const filesSeq = Number((await files.changeStamp(productId)) ?? 0);
    const startedAt = now().toISOString();
    const start = { product_id: productId, label: l, url, started_at: startedAt, files_seq: filesSeq };
    if (claim) {
      // A claim older than this is from a process that died mid-crawl.
      const staleBefore = new Date(now().getTime() - CLAIM_STALE_MS).toISOString();
      if (!(await crawls.claim(start, { changedSeq: claim.changedSeq, staleBefore }))) return null;
    } else await crawls.start(start);
    // Read after the counter: files that arrive later move the counter past `filesSeq` and make
    // this crawl stale (due again), never missed.
    const present = (await files.listLabels(productId)).some((x) => x.label === l && x.files > 0);
    const timer = metrics?.duration.startTimer();
    let outcome: CrawlOutcome = present ? 'ok' : 'removed';
    let result: CrawlResult;
    // A changed folder is copied first and the copy crawled (at its candidate address on the
    // download host, which only this crawl knows): what passes is exactly what becomes current,
    // whatever is uploaded meanwhile.
    let candidate: Candidate | null = null;
    const productUrl = `${downloadUrl}/${encodeURIComponent(productId)}/`;
    let crawled = url;
    try {
      if (copy && present && !(await releases.upToDate(productId, l, (await crawls.labelChanges(productId)).get(l) ?? 0))) {
        candidate = await releases.candidate(productId, l, filesSeq);
      }
      // A released label is crawled at its release's own address, not through the composite
      // documents the download host answers at the label's root for P2 clients.
      const current = releases.current(productId, l);
      if (candidate) crawled = `${productUrl}${encodeURIComponent(l)}@${candidate.number}~${candidate.secret}/`;
      else if (current !== null) crawled = `${productUrl}${encodeURIComponent(l)}@${current}/`;
      // Only the product's own folder: a composite child elsewhere on the download host is another vendor's.
      result = present ? await isolated.crawl(crawled, productUrl) : removedLabel(url, l);
    } catch (e) {
      if (closing) {
        // Cut short by a shutdown: nothing is recorded against the upload, and the label is
        // crawled again at the next start.
        if (candidate) await releases.discard(candidate);
        timer?.();
        await crawls.handBack(productId, l, startedAt);
        return null;
      }
      // A limit exceeded, or a defect of ours: recorded as fatal, so the label never stays "running".
      outcome = e instanceof CrawlAborted ? 'limit_exceeded' : 'failed';
      result = failedCrawl(url, e);
    }
    if (outcome === 'ok' && result.summary.fatal) outcome = 'fatal';
    // Node data counts against the product (node-limits.ts): what is past its limits is left out
    // of the catalog (and of the release's snapshot, so comparisons see what the catalog lists).
    const otherBytes = (await crawls.forProduct(productId)).reduce((sum, c) => sum + (c.label === l ? 0 : Number(c.node_bytes ?? 0)), 0);
    const stored = limitNodes(nodeRows(productId, row.name, l, result), nodeLimits, otherBytes, url);
    if (stored.problems.length > 0) result = { ...result, problems: [...result.problems, ...stored.problems], summary: { ...result.summary, problems: result.problems.length + stored.problems.length } };
    let released = false;
    if (candidate) {
      const passed = !blocksRelease(result);
      if (passed) released = await releases.release(candidate, by);
      else await releases.discard(candidate);
      // The candidate address answers no more: a passed copy is at its release's address, a
      // refused one is gone (its problems name the vendor's upload folder).
      const to = passed ? `${productUrl}${encodeURIComponent(l)}@${candidate.number}/` : uploadFolderAddress(sftp, productId, l);
      result = readdressed(result, `${productUrl}${candidateSegment({ ...candidate, label: encodeURIComponent(l) })}/`, to);
    }
    // The nodes of the release just crawled, kept for the changes page's comparisons: a candidate
    // that passed (also when a newer one became current first: a release all the same), or the
    // current release crawled again (a rollback, a re-crawl: releases made before snapshots were
    // kept).
    const snapshotOf = candidate ? (blocksRelease(result) ? null : candidate.number) : present && !result.summary.fatal ? releases.current(productId, l) : null;
    if (snapshotOf !== null && snapshots) {
      await snapshots.save(productId, l, snapshotOf, signaturesOf(stored.rows), now().toISOString()).catch((e: unknown) => {
        // The release stands; only comparisons with it are missing (the operators' log says why).
        log?.error({ err: e, productId, label: l, release: snapshotOf }, 'storing the node snapshot of a release failed');
      });
    }
    if (!present) await releases.withdraw(productId, l);
    // A copy that did not become current keeps the current release's nodes in the catalog.
    const keepsNodes = result.summary.fatal || (candidate !== null && !released);
    result = labelNameChecked(result, l);
    const record = (r: CrawlResult) => ({
      product_id: productId,
      label: l,
      status: 'finished' as const,
      url,
      started_at: startedAt,
      finished_at: now().toISOString(),
      files_seq: filesSeq,
      summary: JSON.stringify(r.summary),
      problems: JSON.stringify(r.problems),
      units: JSON.stringify(r.units),
      platform_range: r.platformRange,
    });
    try {
      // A fatal crawl (no readable metadata: a broken upload, or the download host down) keeps
      // the last good node index; its report says what is wrong and blocks going live.
      await crawls.finish(record(result), keepsNodes ? null : stored.rows, stored.bytes);
    } catch (e) {
      // Storing failed (a defect of ours): the crawl still ends, as fatal, never "running"; the
      // database's message goes to the operators' log, not into the vendor's report.
      log?.error({ err: e, productId, label: l }, 'storing a crawl result failed');
      outcome = 'failed';
      await crawls.finish(record(failedCrawl(url, new Error('its result could not be stored (the error is in the server log)'))), null);
    } finally {
      timer?.();
      metrics?.crawls.inc({ outcome });
    }
    return { candidate, released };
  }

  return {
    report,
    platformLabels,
    crawlableLabels,
    archiveOnlyLabels,
    /** Ends the crawl worker (after the crawl in progress). */
    /**
     * Stops the crawl worker after the crawl in progress, or with `cut` at once (a shutdown: a
     * crawl can take minutes), and then hands the crawl back: it runs again at the next start.
     */
    close: (options: { cut?: boolean } = {}) => {
      closing = options.cut === true;
      return isolated.close(options.cut);
    },

    /**
     * Crawls every uploaded label (or one), and every label removed since its latest crawl (which
     * drops its nodes), waits, and returns each label's result. `fetchable` runs once the request
     * is known to be valid and before anything is fetched or recorded, when some label will be
     * read from the download host (a caller in another process checks that the host answers:
     * `pier staff crawl`).
     */
    async crawl(productId: string, label?: string, by: ReleasedBy = { kind: 'staff' }, fetchable?: () => Promise<void>): Promise<LabelCrawl[]> {
      const row = await product(productId);
      const labels = await crawlableLabels(productId);
      const withdrawn = withdrawnInFields(row.fields);
      const gone = (await report(productId)).filter((c) => !labels.includes(c.label) && !withdrawn.has(c.label) && c.stale).map((c) => c.label);
      if (label !== undefined && withdrawn.has(label)) {
        throw new ConflictError(`label "${label}" of product "${productId}" is withdrawn: it is not crawled until its notice is removed (pier staff label-notice ${productId} ${label} --clear)`, 'label_withdrawn');
      }
      if (label !== undefined && !labels.includes(label) && !gone.includes(label)) {
        const archived = (await archiveOnlyLabels(productId)).includes(label);
        throw new NotFoundError(
          archived
            ? `label "${label}" of product "${productId}" has only the archive update-site/${label}.zip, which is not crawled: upload the update site's contents to update-site/${label}/ to crawl it`
            : `product "${productId}" has no uploaded update-site label "${label}"`,
        );
      }
      const todo = label !== undefined ? [label] : [...labels, ...gone];
      // A removed label's crawl reads nothing (it only takes its nodes away).
      if (todo.some((l) => labels.includes(l))) await fetchable?.();
      for (const l of todo) await crawlLabel(row, l, null, by);
      return (await report(productId)).filter((c) => todo.includes(c.label));
    },

    /**
     * Releases the label's uploaded folder now (the vendor's explicit "upload complete"): crawls a
     * copy and makes it current when it installs. `candidate` null: the folder had not changed
     * since the current release, which was crawled again.
     */
    async release(productId: string, label: string, by: ReleasedBy): Promise<CrawlDone & { crawl: LabelCrawl }> {
      const row = await product(productId);
      if (!(await crawlableLabels(productId)).includes(label)) {
        throw new NotFoundError(`product "${productId}" has no uploaded update-site/${label}/ folder to release`);
      }
      const done = (await crawlLabel(row, label, null, by)) ?? { candidate: null, released: false };
      const crawl = (await report(productId)).find((c) => c.label === label) as LabelCrawl;
      return { ...done, crawl };
    },

    /**
     * Moves the label back to an earlier kept release and crawls it, so the node catalog follows;
     * an upload in progress in the folder is not released by this.
     */
    async rollback(productId: string, label: string, to: number | undefined, by: ReleasedBy, fetchable?: () => Promise<void>) {
      const row = await product(productId);
      // A removed folder withdraws the label (its crawl takes the pointer away): a rollback would
      // be undone by that same crawl, so it is refused and says how to bring the label back.
      if (!(await files.listLabels(productId)).some((x) => x.label === label && x.files > 0)) {
        const kept = (await releases.list(productId)).find((l) => l.label === label)?.releases.map((r) => r.number) ?? [];
        throw new LabelRemovedError(productId, label, kept);
      }
      // Before the label moves (and before `to` is looked at): a move whose crawl cannot read
      // would leave the nodes behind.
      await fetchable?.();
      const moved = await releases.rollback(productId, label, to);
      await crawlLabel(row, label, null, by, false);
      return moved;
    },

    /**
     * The automatic re-crawl (docs/vendors.md#what-triggers-a-re-crawl): every label whose files
     * changed since its last crawl started (an upload, a replacement, a removal, a rename in or
     * out, its folder renamed or removed), with no change for `settleMs`, is crawled again — also
     * when the product is live, so the catalog follows new releases and loses removed ones. Returns
     * the labels crawled as `product/label`. Several instances may run it: the claim lets one crawl
     * each change.
     */
    async crawlSettled(settleMs: number, onError: (label: string, e: unknown) => void = () => {}): Promise<string[]> {
      const settledBy = new Date(now().getTime() - settleMs).toISOString();
      const staleBefore = new Date(now().getTime() - CLAIM_STALE_MS).toISOString();
      const done: string[] = [];
      const rows = new Map<string, ProductRow | undefined>();
      for (const d of await crawls.dueLabels(settledBy, staleBefore)) {
        if (!isLabel(d.label)) continue;
        if (!rows.has(d.product_id)) rows.set(d.product_id, await products.find(d.product_id));
        const row = rows.get(d.product_id);
        if (!row) continue;
        // One label's failure (of ours: the database refusing a value, say) is reported and
        // the pass goes on: it must never stop every other product's crawls.
        try {
          if (await crawlLabel(row, d.label, { changedSeq: d.changed_seq })) done.push(`${d.product_id}/${d.label}`);
        } catch (e) {
          onError(`${d.product_id}/${d.label}`, e);
        }
      }
      return done;
    },

    /** Why the product may not go live yet: empty when every label's latest crawl finished without fatal or error problems. */
    async liveBlockers(productId: string): Promise<string[]> {
      const labels = await crawlableLabels(productId);
      if (labels.length === 0) {
        // Archives alone are offered on the page for download, but nothing could be indexed
        // (spec "States and transitions": live once the update site is uploaded and indexed).
        const archived = await archiveOnlyLabels(productId);
        if (archived.length === 0) return ['no update site has been uploaded'];
        return [
          `only archives were uploaded (${archived.map((l) => `update-site/${l}.zip`).join(', ')}); the crawler reads an update site from its unzipped folder, so upload the contents of the built repository to ${archived.map((l) => `update-site/${l}/`).join(', ')} as well`,
        ];
      }
      const crawled = await report(productId);
      const byLabel = new Map(crawled.map((c) => [c.label, c] as const));
      const recrawl = `run \`pier staff crawl ${productId}\` or wait for the automatic crawl`;
      const blockers = labels.flatMap((l) => {
        const c = byLabel.get(l);
        if (!c) return [`label ${l} has not been crawled`];
        if (c.status !== 'finished') return [`the crawl of label ${l} has not finished`];
        // The latest crawl read files that are no longer there: its nodes may be wrong.
        if (c.stale) return [`the files of label ${l} changed after its latest crawl began (${c.startedAt}): ${recrawl}`];
        if (c.summary?.fatal) return [`the latest crawl of label ${l} has fatal problems: ${c.problems.filter((p) => p.severity === 'fatal').map((p) => p.message).join('; ')}`];
        // Errors (a missing or corrupt artifact, a checksum P2 refuses) make installs from the
        // label fail: they block as fatal problems do.
        const errors = c.problems.filter((p) => p.severity === 'error');
        if (errors.length > 0) {
          const shown = errors.slice(0, 5).map((p) => p.message);
          return [`the latest crawl of label ${l} has ${errors.length} error${errors.length === 1 ? '' : 's'} (installs from it may fail): ${shown.join('; ')}${errors.length > shown.length ? '; …' : ''}`];
        }
        return [];
      });
      // A label removed (or renamed away) after its crawl still has that crawl's nodes indexed
      // (a withdrawn one's are not shown anywhere).
      const withdrawn = withdrawnInFields((await product(productId)).fields);
      for (const c of crawled) {
        if (!labels.includes(c.label) && !withdrawn.has(c.label) && c.stale) blockers.push(`label ${c.label} was removed after its latest crawl began (${c.startedAt}) and its nodes are still listed: ${recrawl}`);
      }
      return blockers;
    },

    async enable(productId: string, force = false): Promise<StateChange> {
      await product(productId);
      const blockers = await this.liveBlockers(productId);
      if (blockers.length > 0 && !force) {
        throw new ConflictError(`product "${productId}" cannot go live: ${blockers.join('; ')} (staff may override with --force)`, 'not_crawled');
      }
      await products.setState(productId, 'live', now().toISOString());
      return { productId, state: 'live', forced: blockers.length > 0, blockers };
    },

    async disable(productId: string): Promise<StateChange> {
      await product(productId);
      await products.setState(productId, 'hidden', now().toISOString());
      return { productId, state: 'hidden', forced: false, blockers: [] };
    },
  };
}

export type CrawlerService = ReturnType<typeof crawlerService>;

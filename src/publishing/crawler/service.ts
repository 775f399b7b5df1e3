/**
 * Crawls of a product's uploaded labels, their reports, and the staff rule for going live
 * (issue 11: hidden → live only when the latest crawl of every label finished without fatal
 * problems; `force` overrides and says so; spec "States and transitions": uploading alone
 * never changes the state).
 */
import { ConflictError, NotFoundError } from '../../infra/errors.js';
import type { ProductFilesReader } from '../files/reader.js';
import type { ProductRow, ProductsRepository } from '../products/repository.js';
import { type CrawlLimits, type CrawlResult, type CrawlSummary, crawlRepository, DEFAULT_CRAWL_LIMITS } from './crawl.js';
import type { CrawlProblem } from './problems.js';
import type { CrawlNodeRow, CrawlRow, CrawlsRepository } from './repository.js';

/** A running crawl not finished after this long is taken as abandoned (its process died). */
const CLAIM_STALE_MS = 15 * 60_000;

export interface LabelCrawl {
  label: string;
  status: CrawlRow['status'];
  url: string;
  startedAt: string;
  finishedAt: string | null;
  /** An upload changed the files after this crawl started. */
  stale: boolean;
  summary: CrawlSummary | null;
  problems: CrawlProblem[];
}

export interface CrawlerServiceDeps {
  crawls: CrawlsRepository;
  products: ProductsRepository;
  files: ProductFilesReader;
  /** Public URL of the download host: the crawler reads what users get. */
  downloadUrl: string;
  limits?: CrawlLimits;
  now?: () => Date;
}

export interface StateChange {
  productId: string;
  state: ProductRow['state'];
  forced: boolean;
  /** Why going live would have been refused (listed also when forced). */
  blockers: string[];
}

function failedCrawl(url: string, message: string): CrawlResult {
  const problems: CrawlProblem[] = [{ severity: 'fatal', code: 'crawl_failed', message: `the crawl failed: ${message}`, where: url }];
  return {
    url,
    units: [],
    nodes: [],
    categories: [],
    nodeSets: [],
    problems,
    summary: { units: 0, features: 0, bundles: 0, categories: 0, nodes: 0, nodeSets: 0, problems: 1, fatal: true },
  };
}

function nodeRows(productId: string, productName: string, label: string, r: CrawlResult): CrawlNodeRow[] {
  return r.nodes.map((n) => ({
    product_id: productId,
    label,
    factory_class: n.factoryClass,
    name: n.description?.name || n.factoryClass.slice(n.factoryClass.lastIndexOf('.') + 1).replace(/NodeFactory$|Factory$/, ''),
    product_name: productName,
    bundle: n.bundle,
    category_path: n.categoryPath,
    category_names: n.categoryNames.join(' / '),
    short_description: n.description?.shortDescription ?? '',
    deprecated: n.deprecated ? 1 : 0,
    data: JSON.stringify({ bundleVersion: n.bundleVersion, hidden: n.hidden, after: n.after, categoryNames: n.categoryNames, description: n.description }),
    icon_type: n.icon?.contentType ?? null,
    icon: n.icon?.base64 ?? null,
  }));
}

export function crawlerService({ crawls, products, files, downloadUrl, limits = DEFAULT_CRAWL_LIMITS, now = () => new Date() }: CrawlerServiceDeps) {
  async function product(id: string): Promise<ProductRow> {
    const row = await products.find(id);
    if (!row) throw new NotFoundError(`no product "${id}"`);
    return row;
  }

  async function report(productId: string): Promise<LabelCrawl[]> {
    await product(productId);
    const seq = Number((await files.changeStamp(productId)) ?? 0);
    return (await crawls.forProduct(productId)).map((c) => ({
      label: c.label,
      status: c.status,
      url: c.url,
      startedAt: c.started_at,
      finishedAt: c.finished_at,
      stale: Number(c.files_seq) < seq,
      summary: c.status === 'finished' ? (JSON.parse(c.summary) as CrawlSummary) : null,
      problems: JSON.parse(c.problems) as CrawlProblem[],
    }));
  }

  /** Labels that have an update-site folder (an archive alone is not a repository users can add). */
  async function crawlableLabels(productId: string): Promise<string[]> {
    return (await files.listLabels(productId)).filter((l) => l.files > 0).map((l) => l.label);
  }

  /** Labels uploaded only as `update-site/<label>.zip`: listed on the page for download, never crawled. */
  async function archiveOnlyLabels(productId: string): Promise<string[]> {
    return (await files.listLabels(productId)).filter((l) => l.files === 0 && l.hasArchive).map((l) => l.label);
  }

  /**
   * Crawls one label and stores the result. With `claim`, another process's fresh crawl of the
   * same label wins and nothing is done (returns false).
   */
  async function crawlLabel(row: ProductRow, l: string, claim: { uploadedAt: string } | null): Promise<boolean> {
    const productId = row.id;
    const url = `${downloadUrl}/${encodeURIComponent(productId)}/${encodeURIComponent(l)}/`;
    const filesSeq = Number((await files.changeStamp(productId)) ?? 0);
    const startedAt = now().toISOString();
    const start = { product_id: productId, label: l, url, started_at: startedAt, files_seq: filesSeq };
    if (claim) {
      // A claim older than this is from a process that died mid-crawl.
      const staleBefore = new Date(now().getTime() - CLAIM_STALE_MS).toISOString();
      if (!(await crawls.claim(start, { uploadedAt: claim.uploadedAt, staleBefore }))) return false;
    } else await crawls.start(start);
    let result: CrawlResult;
    try {
      result = await crawlRepository(url, limits);
    } catch (e) {
      // A defect of ours, not of the site: recorded, so the label never stays "running".
      result = failedCrawl(url, (e as Error).message);
    }
    await crawls.finish(
      {
        product_id: productId,
        label: l,
        status: 'finished',
        url,
        started_at: startedAt,
        finished_at: now().toISOString(),
        files_seq: filesSeq,
        summary: JSON.stringify(result.summary),
        problems: JSON.stringify(result.problems),
        units: JSON.stringify(result.units),
      },
      // A fatal crawl (no readable metadata: a broken upload, or the download host down) keeps
      // the last good node index; its report says what is wrong and blocks going live.
      result.summary.fatal ? null : nodeRows(productId, row.name, l, result),
    );
    return true;
  }

  /** Per product: the last upload already handled by `crawlSettled` (skips products with nothing new). */
  const handled = new Map<string, string>();

  return {
    report,
    crawlableLabels,

    /** Crawls every uploaded label (or one), waits, and returns each label's result. */
    async crawl(productId: string, label?: string): Promise<LabelCrawl[]> {
      const row = await product(productId);
      const labels = await crawlableLabels(productId);
      if (label !== undefined && !labels.includes(label)) {
        const archived = (await archiveOnlyLabels(productId)).includes(label);
        throw new NotFoundError(
          archived
            ? `label "${label}" of product "${productId}" has only the archive update-site/${label}.zip, which is not crawled: upload the update site's contents to update-site/${label}/ to crawl it`
            : `product "${productId}" has no uploaded update-site label "${label}"`,
        );
      }
      for (const l of label !== undefined ? [label] : labels) await crawlLabel(row, l, null);
      const all = await report(productId);
      return label !== undefined ? all.filter((c) => c.label === label) : all.filter((c) => labels.includes(c.label));
    },

    /**
     * The automatic re-crawl (issue 11): every label uploaded to since its last crawl started,
     * and with no writes for `settleMs`, is crawled again — also when the product is live, so
     * the catalog follows new releases. Returns the labels crawled as `product/label`.
     */
    async crawlSettled(settleMs: number): Promise<string[]> {
      const settledBy = new Date(now().getTime() - settleMs).toISOString();
      const done: string[] = [];
      for (const p of await crawls.uploadedBefore(settledBy)) {
        if (handled.get(p.product_id) === p.last_upload_at) continue;
        const row = await products.find(p.product_id);
        if (!row) continue;
        const last = new Map((await crawls.forProduct(p.product_id)).map((c) => [c.label, c] as const));
        let waiting = false;
        for (const l of await files.listLabels(p.product_id)) {
          if (l.files === 0 || l.lastUploadAt === null) continue;
          const c = last.get(l.label);
          if (c && c.started_at >= l.lastUploadAt) continue;
          if (l.lastUploadAt > settledBy) {
            waiting = true; // still being written: the next pass sees it settle
            continue;
          }
          if (await crawlLabel(row, l.label, { uploadedAt: l.lastUploadAt })) done.push(`${p.product_id}/${l.label}`);
          else waiting = true;
        }
        if (!waiting) handled.set(p.product_id, p.last_upload_at);
      }
      return done;
    },

    /** Why the product may not go live yet: empty when every label's latest crawl finished without fatal problems. */
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
      const byLabel = new Map((await report(productId)).map((c) => [c.label, c] as const));
      return labels.flatMap((l) => {
        const c = byLabel.get(l);
        if (!c) return [`label ${l} has not been crawled`];
        if (c.status !== 'finished') return [`the crawl of label ${l} has not finished`];
        if (c.summary?.fatal) return [`the latest crawl of label ${l} has fatal problems: ${c.problems.filter((p) => p.severity === 'fatal').map((p) => p.message).join('; ')}`];
        return [];
      });
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

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

  return {
    report,
    crawlableLabels,

    /** Crawls every uploaded label (or one), waits, and returns each label's result. */
    async crawl(productId: string, label?: string): Promise<LabelCrawl[]> {
      const row = await product(productId);
      const labels = await crawlableLabels(productId);
      if (label !== undefined && !labels.includes(label)) throw new NotFoundError(`product "${productId}" has no uploaded update-site label "${label}"`);
      for (const l of label !== undefined ? [label] : labels) {
        const url = `${downloadUrl}/${encodeURIComponent(productId)}/${encodeURIComponent(l)}/`;
        const filesSeq = Number((await files.changeStamp(productId)) ?? 0);
        const startedAt = now().toISOString();
        await crawls.start({ product_id: productId, label: l, url, started_at: startedAt, files_seq: filesSeq });
        const result = await crawlRepository(url, limits);
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
          nodeRows(productId, row.name, l, result),
        );
      }
      const all = await report(productId);
      return label !== undefined ? all.filter((c) => c.label === label) : all.filter((c) => labels.includes(c.label));
    },

    /** Why the product may not go live yet: empty when every label's latest crawl finished without fatal problems. */
    async liveBlockers(productId: string): Promise<string[]> {
      const labels = await crawlableLabels(productId);
      if (labels.length === 0) return ['no update site has been uploaded'];
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

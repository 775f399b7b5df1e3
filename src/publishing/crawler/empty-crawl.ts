/** Crawl results made without reading a site: a crawl that failed or was cut off, a label whose folder is gone. */
import type { StoredCrawlResult as CrawlResult } from './result.js';
import { CrawlAborted } from './isolated.js';
import type { CrawlProblem } from './problems.js';

/** A crawl that read nothing: no units, no nodes, one problem that says why. */
export function emptyCrawl(url: string, problem: CrawlProblem): CrawlResult {
  return {
    url,
    units: [],
    nodes: [],
    categories: [],
    nodeSets: [],
    problems: [problem],
    platformRange: null,
    summary: { units: 0, features: 0, bundles: 0, categories: 0, nodes: 0, nodeSets: 0, problems: 1, fatal: problem.severity === 'fatal' },
  };
}

export function failedCrawl(url: string, e: unknown): CrawlResult {
  if (e instanceof CrawlAborted) return emptyCrawl(url, { severity: 'fatal', code: 'crawl_limit_exceeded', message: e.message, where: url });
  return emptyCrawl(url, { severity: 'fatal', code: 'crawl_failed', message: `the crawl failed: ${(e as Error).message}`, where: url });
}

/**
 * The crawl of a label whose update-site folder holds no files any more (removed, or renamed to
 * another label): nothing to read, so no nodes. Not fatal (that would keep the old nodes, as for
 * a broken upload): the label is gone, its nodes must leave the catalog, and the report keeps one
 * warning that says why it has none.
 */
export function removedLabel(url: string, label: string): CrawlResult {
  return emptyCrawl(url, { severity: 'warning', code: 'label_removed', message: `update-site/${label}/ holds no files: its nodes were removed from the node catalog`, where: url });
}

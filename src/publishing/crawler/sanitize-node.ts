/**
 * What node pages show of a crawled node, made once where the crawl runs (its worker thread,
 * crawl-worker.ts) and stored: the description as sanitized HTML, cut at MAX_DESCRIPTION_HTML,
 * and the icon as sanitized SVG or a raster that is what it claims. Serving a node page or icon
 * then only reads: sanitizing a vendor's megabyte of description on the serving event loop per
 * request let anonymous clients slow every page, download and SFTP login of the process.
 *
 * Rows stored with an older NODE_SANITIZER_VERSION (0: crawled before migration 0008) are
 * sanitized once when first served and stored again (web/service.ts); raising the version after a
 * sanitizer fix does the same for every row.
 */
import { plainTextAsHtml, sanitizeNodeMarkup } from '../content/node-markup.js';
import { sanitizeSvg, sniffRasterImage } from '../content/svg.js';
import type { CrawledNode, CrawlLimits, CrawlResult } from './crawl.js';
import { summarize } from './crawl.js';
import type { NodeDescription, NodeOption } from '../model/nodes.js';
import type { CrawlProblem } from './problems.js';
import { RESULT_CAPS } from './result.js';

/** Version of what sanitizeNode does; stored with each node row (crawl_nodes.sanitized). */
export const NODE_SANITIZER_VERSION = 1;

/**
 * Characters of description a node page shows (HTML and names together): a real description is a
 * few KB; the rest of a larger one is cut, and the page says so.
 */
export const MAX_DESCRIPTION_HTML = 256 * 1024;

/** The first `n` characters of sanitized HTML, still well-formed (no half tag, entity or pair). */
function cutHtml(html: string, n: number): string {
  let t = html.slice(0, Math.max(0, n));
  if (/[\uD800-\uDBFF]$/.test(t)) t = t.slice(0, -1);
  t = t.replace(/<[^>]*$/, '').replace(/&[^;<>\s]*$/, '');
  // The sanitizer closes the elements the cut left open.
  return sanitizeNodeMarkup(t);
}

/**
 * Every description field as sanitized HTML (plain-text descriptions: one paragraph per line),
 * within `max` characters in page order; `truncated` when something was cut or left out.
 */
export function sanitizeNodeDescription(d: NodeDescription, max = MAX_DESCRIPTION_HTML): NodeDescription {
  let left = max - d.name.length - d.shortDescription.length;
  let truncated = false;
  const html = (s: string): string => {
    if (truncated) return '';
    const out = d.markup === 'html' ? sanitizeNodeMarkup(s) : plainTextAsHtml(s);
    if (out.length <= left) {
      left -= out.length;
      return out;
    }
    truncated = true;
    const cut = cutHtml(out, left);
    left = 0;
    return cut;
  };
  /** Named items (options, ports, views) while the budget lasts; the rest are left out. */
  const items = <T extends { name: string; description: string }>(list: T[]): T[] => {
    const kept: T[] = [];
    for (const item of list) {
      if (truncated || item.name.length > left) {
        truncated = true;
        break;
      }
      left -= item.name.length;
      kept.push({ ...item, description: html(item.description) });
    }
    return kept;
  };
  // Page order (web/node-page.tsx): what is cut is what a reader would reach last.
  const intro = html(d.intro);
  const options = items(d.options);
  const tabs: NodeDescription['tabs'] = [];
  for (const t of d.tabs) {
    if (truncated || t.name.length > left) {
      truncated = true;
      break;
    }
    left -= t.name.length;
    tabs.push({ name: t.name, description: html(t.description), options: items<NodeOption>(t.options) });
  }
  const inPorts = items(d.inPorts);
  const outPorts = items(d.outPorts);
  const views = items(d.views);
  const keywords: string[] = [];
  for (const k of truncated ? [] : d.keywords) {
    if (k.length > left) break;
    left -= k.length;
    keywords.push(k);
  }
  return {
    ...d,
    intro,
    tabs,
    options,
    inPorts,
    outPorts,
    views,
    keywords,
    markup: 'html',
    ...(truncated || d.truncated ? { truncated: true } : {}),
  };
}

const RASTER_TYPES = { png: 'image/png', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp' } as const;

export interface SanitizedNode {
  description: NodeDescription | null;
  icon: CrawledNode['icon'];
  /** What was cut or dropped, for the crawl's report. */
  problems: Omit<CrawlProblem, 'where'>[];
}

/** A node's description and icon as node pages serve them (see the file comment). */
export function sanitizeNode(description: NodeDescription | null, icon: CrawledNode['icon'], maxIconBytes: number): SanitizedNode {
  const problems: SanitizedNode['problems'] = [];
  const clean = description ? sanitizeNodeDescription(description) : null;
  if (clean?.truncated && !description?.truncated) {
    problems.push({ severity: 'warning', code: 'description_truncated', message: `the node description is longer than the ${MAX_DESCRIPTION_HTML / 1024} KiB of HTML a node page shows: the rest is cut` });
  }
  let safeIcon: CrawledNode['icon'] = null;
  if (icon) {
    const bytes = Buffer.from(icon.base64, 'base64');
    if (icon.contentType === 'image/svg+xml') {
      const svg = sanitizeSvg(bytes.toString('utf8'));
      if (!('svg' in svg)) problems.push({ severity: 'warning', code: 'icon_refused', message: `the node icon is not shown: ${svg.error}` });
      else if (Buffer.byteLength(svg.svg) > maxIconBytes) problems.push({ severity: 'warning', code: 'icon_refused', message: `the node icon is not shown: larger than ${maxIconBytes} bytes` });
      else safeIcon = { contentType: icon.contentType, base64: Buffer.from(svg.svg).toString('base64') };
    } else {
      const kind = sniffRasterImage(bytes);
      if (kind) safeIcon = { contentType: RASTER_TYPES[kind], base64: icon.base64 };
      else problems.push({ severity: 'warning', code: 'icon_refused', message: 'the node icon is not shown: not a PNG, JPEG, GIF or WebP image' });
    }
  }
  return { description: clean, icon: safeIcon, problems };
}

/** A crawl's result with every node sanitized (run in the crawl's worker, before posting it). */
export function sanitizeCrawlResult(r: CrawlResult, limits: Pick<CrawlLimits, 'maxIconBytes'>): CrawlResult {
  const problems = [...r.problems];
  const nodes = r.nodes.map((n) => {
    const s = sanitizeNode(n.description, n.icon, limits.maxIconBytes);
    for (const p of s.problems) {
      if (problems.length < RESULT_CAPS.problems) problems.push({ ...p, where: `${n.bundle}_${n.bundleVersion}.jar!${n.factoryClass}` });
    }
    return { ...n, description: s.description, icon: s.icon };
  });
  const result = { ...r, nodes, problems };
  return { ...result, summary: summarize(result) };
}

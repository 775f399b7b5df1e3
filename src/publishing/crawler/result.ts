/**
 * A crawl result as the crawl's worker hands it to the serving process, and its check there.
 *
 * The worker builds what is stored (storedResultOf): each node's description serialized into
 * the text its row keeps (`data`), so the serving loop never copies, walks or serializes
 * description objects; and the whole result is bounded (CrawlLimits.maxResultBytes), or it is
 * replaced by a fatal `crawl_result_too_large`, so what the serving loop receives, checks and
 * writes to the database is bounded whatever a vendor uploads.
 *
 * The serving process checks it before it is stored: the worker read vendor input, so its
 * output is treated as input too — shape, counts and sizes are bounded (lengths only, nothing
 * is parsed or serialized again), and the summary is counted again here rather than believed.
 */
import type { CrawledNode, CrawlLimits, CrawlResult } from './crawl.js';
import { summarize } from './crawl.js';
import { parseRange } from './platform-range.js';
import type { CrawlProblem } from './problems.js';

/** Most of each a label may index; far above any real site, low enough to store in one go. */
export const RESULT_CAPS = { units: 100_000, nodes: 20_000, categories: 20_000, nodeSets: 20_000, problems: 500, stringChars: 1024 * 1024 };

/** A crawled node as stored (a crawl_nodes row without its product and label), built in the crawl's worker. */
export interface StoredNode {
  factoryClass: string;
  bundle: string;
  categoryPath: string;
  categoryNames: string[];
  deprecated: boolean;
  /** The description's name, else one made of the factory's class name. */
  name: string;
  shortDescription: string;
  /** JSON of what node pages show besides the columns: `{ bundleVersion, hidden, after, categoryNames, description, platforms }`. */
  data: string;
  icon: { contentType: string; base64: string } | null;
}

/** What the serving process receives, checks and stores of one crawl. */
export type StoredCrawlResult = Omit<CrawlResult, 'nodes'> & { nodes: StoredNode[] };

/** The stored form of one node (crawl-worker.ts runs it; service.ts stores it as a row). */
export function storedNodeOf(n: CrawledNode): StoredNode {
  return {
    factoryClass: n.factoryClass,
    bundle: n.bundle,
    categoryPath: n.categoryPath,
    categoryNames: n.categoryNames,
    deprecated: n.deprecated,
    name: n.description?.name || n.factoryClass.slice(n.factoryClass.lastIndexOf('.') + 1).replace(/NodeFactory$|Factory$/, ''),
    shortDescription: n.description?.shortDescription ?? '',
    data: JSON.stringify({ bundleVersion: n.bundleVersion, hidden: n.hidden, after: n.after, categoryNames: n.categoryNames, description: n.description, platforms: n.platforms }),
    icon: n.icon,
  };
}

const len = (v: unknown) => (typeof v === 'string' ? v.length : 0);

/** Characters a stored result holds in its strings, roughly what it costs to copy, check and store (anything not a string counts as nothing: the check refuses it). */
function sizeOf(r: Pick<StoredCrawlResult, 'nodes' | 'units' | 'categories' | 'nodeSets' | 'problems'>): number {
  let n = 0;
  for (const x of r.nodes) n += len(x.data) + len(x.factoryClass) + len(x.bundle) + len(x.categoryPath) + len(x.name) + len(x.shortDescription) + len(x.icon?.base64) + 64;
  for (const u of r.units) for (const v of Object.values(u)) n += len(v) + 8;
  for (const c of r.categories) n += len(c.path) + len(c.levelId) + len(c.name) + len(c.description) + len(c.icon) + len(c.bundle) + len(c.fullPath) + 32;
  for (const s of r.nodeSets) n += len(s.bundle) + len(s.factoryClass) + 16;
  for (const p of r.problems) n += len(p.message) + len(p.where) + len(p.code) + 32;
  return n;
}

/**
 * The stored form of a crawl (in the worker): nodes serialized; a result larger than
 * `maxResultBytes` characters becomes the same crawl without units, nodes and categories and
 * with one fatal problem that says so (the label keeps its last good index).
 */
export function storedResultOf(r: CrawlResult, limits: Pick<CrawlLimits, 'maxResultBytes'>): StoredCrawlResult {
  const stored: StoredCrawlResult = { ...r, nodes: r.nodes.map(storedNodeOf) };
  const size = sizeOf(stored);
  if (size <= limits.maxResultBytes) return stored;
  const problems: CrawlProblem[] = [
    ...r.problems.slice(0, RESULT_CAPS.problems - 1),
    {
      severity: 'fatal' as const,
      code: 'crawl_result_too_large',
      message: `the crawl's result (${r.nodes.length} nodes with their descriptions and icons, ${r.units.length} units) is ${Math.ceil(size / 1024 / 1024)} MiB, over the limit of ${Math.floor(limits.maxResultBytes / 1024 / 1024)} MiB a label may index`,
      where: r.url,
    },
  ];
  const empty = { ...r, units: [], nodes: [], categories: [], nodeSets: [], problems };
  return { ...empty, summary: summarize(empty) };
}

export class InvalidCrawlResult extends Error {
  constructor(message: string) {
    super(`crawl result refused: ${message}`);
    this.name = 'InvalidCrawlResult';
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function list(v: Record<string, unknown>, key: string, max: number): Record<string, unknown>[] {
  const a = v[key];
  if (!Array.isArray(a)) throw new InvalidCrawlResult(`${key} is not a list`);
  if (a.length > max) throw new InvalidCrawlResult(`${a.length} ${key}, more than ${max}`);
  for (const item of a) if (!isObject(item)) throw new InvalidCrawlResult(`an item of ${key} is not an object`);
  return a as Record<string, unknown>[];
}

function strings(item: Record<string, unknown>, where: string, keys: string[], nullable: string[] = []): void {
  for (const k of keys) {
    const s = item[k];
    if (s === null && nullable.includes(k)) continue;
    if (typeof s !== 'string') throw new InvalidCrawlResult(`${where}.${k} is not a string`);
    if (s.length > RESULT_CAPS.stringChars) throw new InvalidCrawlResult(`${where}.${k} is longer than ${RESULT_CAPS.stringChars} characters`);
  }
}

export function checkCrawlResult(value: unknown, limits: CrawlLimits): StoredCrawlResult {
  if (!isObject(value)) throw new InvalidCrawlResult('not an object');
  if (typeof value.url !== 'string') throw new InvalidCrawlResult('url is not a string');
  for (const u of list(value, 'units', RESULT_CAPS.units)) strings(u, 'unit', ['id', 'version', 'kind'], []);
  const iconChars = Math.ceil((limits.maxIconBytes * 4) / 3) + 4;
  // A description is parsed from at most maxDescriptionBytes of XML (Python sources: 4×).
  const descriptionChars = limits.maxDescriptionBytes * 8;
  for (const n of list(value, 'nodes', RESULT_CAPS.nodes)) {
    strings(n, 'node', ['factoryClass', 'bundle', 'categoryPath', 'name', 'shortDescription'], []);
    if (!Array.isArray(n.categoryNames) || n.categoryNames.length > 64 || !n.categoryNames.every((c) => typeof c === 'string' && c.length <= 1024)) {
      throw new InvalidCrawlResult('node.categoryNames is not a short list of strings');
    }
    if (typeof n.deprecated !== 'boolean') throw new InvalidCrawlResult('node.deprecated is not a boolean');
    // The stored text of the description (and a little more): its length only, never parsed here.
    if (typeof n.data !== 'string') throw new InvalidCrawlResult('node.data is not a string');
    if (n.data.length > descriptionChars + 64 * 1024) throw new InvalidCrawlResult(`the description of ${String(n.factoryClass)} is too large`);
    if (n.icon !== null) {
      if (!isObject(n.icon)) throw new InvalidCrawlResult('node.icon is not an object');
      strings(n.icon, 'icon', ['contentType', 'base64']);
      if ((n.icon.base64 as string).length > iconChars) throw new InvalidCrawlResult(`the icon of ${String(n.factoryClass)} is over ${limits.maxIconBytes} bytes`);
    }
  }
  const factories = new Set<string>();
  for (const n of value.nodes as { factoryClass: string }[]) {
    // The node catalog's key within a label: a second row would fail the whole store.
    if (factories.has(n.factoryClass)) throw new InvalidCrawlResult(`node ${n.factoryClass} is listed twice`);
    factories.add(n.factoryClass);
  }
  for (const c of list(value, 'categories', RESULT_CAPS.categories)) strings(c, 'category', ['path', 'levelId', 'name', 'bundle', 'fullPath'], []);
  for (const s of list(value, 'nodeSets', RESULT_CAPS.nodeSets)) strings(s, 'nodeSet', ['bundle', 'factoryClass']);
  for (const p of list(value, 'problems', RESULT_CAPS.problems)) {
    strings(p, 'problem', ['code', 'message', 'where']);
    if (!['fatal', 'error', 'warning'].includes(p.severity as string)) throw new InvalidCrawlResult('problem.severity is not fatal, error or warning');
  }
  // An OSGi range is short; anything else in its place is refused rather than stored and shown.
  if (value.platformRange !== null && (typeof value.platformRange !== 'string' || value.platformRange.length > 200 || parseRange(value.platformRange) === null)) {
    throw new InvalidCrawlResult('platformRange is not null or an OSGi version range');
  }
  const r = value as unknown as StoredCrawlResult;
  // The worker bounded it; checked again by lengths alone (storedResultOf).
  if (sizeOf(r) > limits.maxResultBytes) throw new InvalidCrawlResult(`the result is larger than ${limits.maxResultBytes} characters`);
  return { ...r, summary: summarize(r) };
}

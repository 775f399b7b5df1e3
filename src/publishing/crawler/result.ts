/**
 * Checks a crawl result that came from the crawl's worker before it is stored: the worker read
 * vendor input, so its output is treated as input too — shape, counts and sizes are bounded,
 * and the summary is counted again here rather than believed.
 */
import type { CrawlLimits, CrawlResult } from './crawl.js';
import { summarize } from './crawl.js';
import { parseRange } from './platform-range.js';

/** Most of each a label may index; far above any real site, low enough to store in one go. */
export const RESULT_CAPS = { units: 100_000, nodes: 20_000, categories: 20_000, nodeSets: 20_000, problems: 500, stringChars: 1024 * 1024 };

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

export function checkCrawlResult(value: unknown, limits: CrawlLimits): CrawlResult {
  if (!isObject(value)) throw new InvalidCrawlResult('not an object');
  if (typeof value.url !== 'string') throw new InvalidCrawlResult('url is not a string');
  for (const u of list(value, 'units', RESULT_CAPS.units)) strings(u, 'unit', ['id', 'version', 'kind'], []);
  const iconChars = Math.ceil((limits.maxIconBytes * 4) / 3) + 4;
  // A description is parsed from at most maxDescriptionBytes of XML (Python sources: 4×).
  const descriptionChars = limits.maxDescriptionBytes * 8;
  for (const n of list(value, 'nodes', RESULT_CAPS.nodes)) {
    strings(n, 'node', ['factoryClass', 'bundle', 'bundleVersion', 'categoryPath'], []);
    if (!Array.isArray(n.categoryNames) || !n.categoryNames.every((c) => typeof c === 'string')) throw new InvalidCrawlResult('node.categoryNames is not a list of strings');
    if (n.description !== null && !isObject(n.description)) throw new InvalidCrawlResult('node.description is not an object');
    if (n.description && JSON.stringify(n.description).length > descriptionChars) throw new InvalidCrawlResult(`the description of ${String(n.factoryClass)} is too large`);
    if (n.platforms !== null && (!Array.isArray(n.platforms) || n.platforms.length > 64 || !n.platforms.every((x) => typeof x === 'string' && x.length <= 256))) {
      throw new InvalidCrawlResult('node.platforms is not null or a short list of strings');
    }
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
  const r = value as unknown as CrawlResult;
  return { ...r, summary: summarize(r) };
}

/**
 * What a product's node catalog may hold: node data is storage a vendor causes, so it counts
 * against that vendor's product, like its files count against its quota. A label lists at most
 * `perLabel` nodes, and the stored data of every label's nodes together stays within
 * `productBytes`; what is past either is left out of the catalog, and the crawl report says so
 * (a warning: the update site itself installs as uploaded). Pure: no I/O.
 */
import type { CrawlProblem } from './problems.js';
import type { CrawlNodeRow } from './repository.js';

export interface NodeLimits {
  /** Nodes one label's crawl stores at most (PIER_CRAWL_MAX_NODES). */
  perLabel: number;
  /** Bytes of node data one product stores at most, every label together (PIER_NODE_DATA_QUOTA). */
  productBytes: number;
}

export const DEFAULT_NODE_LIMITS: NodeLimits = { perLabel: 2_000, productBytes: 32 * 1024 * 1024 };

/** What one stored node costs: its description and icon as stored, and the text it is listed and searched by. */
export function nodeBytes(row: Pick<CrawlNodeRow, 'data' | 'icon' | 'name' | 'short_description' | 'category_names' | 'factory_class'>): number {
  return (
    Buffer.byteLength(row.data) +
    (row.icon ? Buffer.byteLength(row.icon) : 0) +
    Buffer.byteLength(row.name) +
    Buffer.byteLength(row.short_description) +
    Buffer.byteLength(row.category_names) +
    Buffer.byteLength(row.factory_class)
  );
}

const count = (n: number) => n.toLocaleString('en');
const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;

/**
 * The rows of one label's crawl the catalog keeps, in the crawl's order: the first `perLabel`,
 * then as many as fit in what the product's other labels left of `productBytes`. With the rows
 * kept, their count and bytes, and one warning per limit that left nodes out.
 */
export function limitNodes(
  rows: readonly CrawlNodeRow[],
  limits: NodeLimits,
  /** Bytes of node data the product's other labels hold now. */
  otherLabelsBytes: number,
  /** The label's update site, for the problems' `where`. */
  where: string,
): { rows: CrawlNodeRow[]; bytes: number; problems: CrawlProblem[] } {
  const problems: CrawlProblem[] = [];
  const counted = rows.slice(0, limits.perLabel);
  if (rows.length > counted.length) {
    problems.push({
      severity: 'warning',
      code: 'node_limit_exceeded',
      message: `the label has ${count(rows.length)} nodes; the node catalog lists at most ${count(limits.perLabel)} nodes per label, so ${count(rows.length - counted.length)} are not listed (the update site installs them all)`,
      where,
    });
  }
  const room = Math.max(0, limits.productBytes - otherLabelsBytes);
  const kept: CrawlNodeRow[] = [];
  let bytes = 0;
  let wanted = 0;
  // A prefix in the crawl's order: the same nodes stay listed from one crawl to the next.
  let full = false;
  for (const r of counted) {
    const b = nodeBytes(r);
    wanted += b;
    if (!full && bytes + b <= room) {
      kept.push(r);
      bytes += b;
    } else full = true;
  }
  if (kept.length < counted.length) {
    problems.push({
      severity: 'warning',
      code: 'node_data_quota_exceeded',
      message: `the descriptions and icons of this label's nodes take ${mib(wanted)} and the product's other labels ${mib(otherLabelsBytes)}; a product's node catalog holds at most ${mib(limits.productBytes)}, so ${count(counted.length - kept.length)} nodes of this label are not listed (the update site installs them all; remove labels no longer offered to make room)`,
      where,
    });
  }
  return { rows: kept, bytes, problems };
}

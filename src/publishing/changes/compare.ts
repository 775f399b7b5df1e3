/**
 * One page of what changed between two sides (changes/service.ts chooses them): both sides'
 * nodes read and signed (changes/signature.ts), compared (changes/diff.ts), and cut to the page
 * asked for. A side is thousands of nodes in a big catalog, so this runs in a worker thread of
 * its own with its own database connection (web/catalog-reads.ts), never on the serving
 * loop; what comes back is one page, whatever the sides hold.
 */
import { type ChangedNode, diffNodes, type NodeRef, type NodesDiff } from './diff.js';
import type { ReleaseNodesRepository } from './repository.js';
import { signaturesOf } from './signature.js';

/** Nodes listed on one page of a comparison (every bucket together, in the order added, removed, deprecated, changed). */
export const COMPARE_PAGE = 200;

/** A side as chosen: a label as crawled now, or a kept release of it. */
export interface SideRef {
  label: string;
  release: number | null;
}

export interface DiffCounts {
  added: number;
  removed: number;
  deprecated: number;
  changed: number;
  unchanged: number;
}

/** One page of a comparison. */
export interface ComparisonPage {
  /** This page's nodes of each bucket (`unchanged` counts them all). */
  diff: NodesDiff;
  /** Every bucket's size. */
  counts: DiffCounts;
  page: number;
  pages: number;
  /** Factory classes of this page's nodes that have a node page now. */
  paged: string[];
}

/** The page, or which side has no nodes to read any more (its release went meanwhile), or a page past the last. */
export type CompareOutcome = { ok: true; page: ComparisonPage } | { ok: false; missing: 'from' | 'to' | 'page'; pages?: number };

export interface NodesDiffer {
  /**
   * Page `page` of the comparison. `version` stands for everything the sides are read from (the
   * product's sources and crawl stamp): a comparison made under the same version is re-used for
   * its other pages; null: never re-used.
   */
  compare(productId: string, from: SideRef, to: SideRef, page: number, version: string | null): Promise<CompareOutcome>;
  close(): Promise<void>;
}

/** Whole comparisons kept for their other pages (a comparison of two big labels is a few MB). */
const DIFFS_KEPT = 4;

type Reads = Pick<ReleaseNodesRepository, 'labelNodes' | 'find' | 'factoriesWithPage'>;

async function nodesOf(snapshots: Reads, productId: string, side: SideRef) {
  if (side.release === null) return signaturesOf(await snapshots.labelNodes(productId, side.label));
  return (await snapshots.find(productId, side.label, side.release)) ?? null;
}

/** The page `page` (from 1) of the diff: COMPARE_PAGE entries of the buckets in order. */
export function diffPage(diff: NodesDiff, page: number, size = COMPARE_PAGE): { diff: NodesDiff; pages: number } {
  const total = diff.added.length + diff.removed.length + diff.deprecated.length + diff.changed.length;
  const pages = Math.max(1, Math.ceil(total / size));
  let start = (page - 1) * size;
  let room = size;
  const cut = <T>(list: T[]): T[] => {
    const from = Math.min(start, list.length);
    const part = list.slice(from, from + room);
    start -= from;
    room -= part.length;
    return part;
  };
  return { diff: { added: cut(diff.added), removed: cut(diff.removed), deprecated: cut(diff.deprecated), changed: cut(diff.changed), unchanged: diff.unchanged }, pages };
}

/** The last few whole comparisons, by product, sides and version (see NodesDiffer). */
export type DiffsKept = Map<string, NodesDiff>;

/** Reads both sides, compares them (or takes the comparison kept for `version`) and cuts page `page`. */
export async function comparePage(
  snapshots: Reads,
  productId: string,
  from: SideRef,
  to: SideRef,
  page: number,
  version: string | null = null,
  kept: DiffsKept = new Map(),
): Promise<CompareOutcome> {
  const k = version === null ? null : JSON.stringify([productId, from, to, version]);
  let full = k === null ? undefined : kept.get(k);
  if (!full) {
    const toNodes = await nodesOf(snapshots, productId, to);
    if (!toNodes) return { ok: false, missing: 'to' };
    const fromNodes = await nodesOf(snapshots, productId, from);
    if (!fromNodes) return { ok: false, missing: 'from' };
    full = diffNodes(fromNodes, toNodes);
  }
  if (k !== null) {
    kept.delete(k);
    kept.set(k, full);
    if (kept.size > DIFFS_KEPT) kept.delete(kept.keys().next().value as string);
  }
  const cut = diffPage(full, page);
  if (page > cut.pages) return { ok: false, missing: 'page', pages: cut.pages };
  const shown: (NodeRef | ChangedNode)[] = [...cut.diff.added, ...cut.diff.removed, ...cut.diff.deprecated, ...cut.diff.changed];
  const paged = await snapshots.factoriesWithPage(
    productId,
    shown.map((n) => n.factoryClass),
  );
  return {
    ok: true,
    page: {
      diff: cut.diff,
      counts: { added: full.added.length, removed: full.removed.length, deprecated: full.deprecated.length, changed: full.changed.length, unchanged: full.unchanged },
      page,
      pages: cut.pages,
      paged,
    },
  };
}

/** Compares on the calling thread: for a database only this process can open (`:memory:`) and for tests. */
export function localDiffer(snapshots: Reads): NodesDiffer {
  const kept: DiffsKept = new Map();
  return { compare: (productId, from, to, page, version) => comparePage(snapshots, productId, from, to, page, version, kept), close: async () => {} };
}

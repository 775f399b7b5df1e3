/**
 * Live products as catalog cards with their search text, kept per product until its row
 * changes (only the card, never the page fields, so memory stays small). A product's node
 * names are part of its search text (the catalog finds products by their nodes too); they are
 * kept apart, by the product's crawl stamp, so that an edit of the page's text re-reads the row
 * alone, and at most CATALOG_NODE_NAMES of them are read, from the name index.
 */
import { withdrawnInFields } from '../notices/notices.js';
import type { CrawlsRepository } from '../crawler/repository.js';
import type { ProductFields } from '../model/fields.js';
import type { ProductRow, ProductsRepository } from '../products/repository.js';
import type { CatalogCard } from './model.js';
import type { PageChanges } from './page-changes.js';
import { catalogCard } from './presenter.js';

/** Distinct node names of one product that its catalog search text holds (the first by name). */
export const CATALOG_NODE_NAMES = 2_000;
/** Distinct category paths of one product that the node search's category filter offers (the first by name). */
export const CATEGORY_FACETS = 200;

export interface IndexEntry {
  /** updated_at and last crawl of the product row when indexed. */
  stamp: string;
  updatedAt: string;
  card: CatalogCard;
  /** Folded name, and name + description + node names: what search matches. */
  name: string;
  text: string;
  /** Platform ranges of the product's crawled labels (the "works with" filter). */
  ranges: string[];
  /** The same by label (the node search's "works with" filter). */
  labelRanges: { label: string; range: string }[];
  /** Labels the vendor withdrew: their nodes and ranges are offered nowhere. */
  withdrawn: string[];
  /** The last finish of any of the product's crawls: what its nodes were read under. */
  crawled: string | null;
  /** Whether it has nodes, and its category paths (the node search's filters). */
  hasNodes: boolean;
  categories: string[];
}

export type LiveProduct = IndexEntry & { id: string };

interface NodeFacts {
  crawled: string | null;
  text: string;
  hasNodes: boolean;
  categories: string[];
}

/** Lower-cased, accents removed: "Café" matches "cafe". */
export function fold(s: string): string {
  return s.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
}

export function parseFields(row: ProductRow): ProductFields {
  return { ...(JSON.parse(row.fields) as ProductFields), name: row.name };
}

export function catalogIndex({
  repo,
  crawls,
  changes,
}: {
  repo: ProductsRepository;
  crawls: Pick<CrawlsRepository, 'nodeNamesOf' | 'nodeCategoriesOf' | 'platformRanges'>;
  changes: PageChanges;
}) {
  const entries = new Map<string, IndexEntry>();
  /** Folded node names and category paths per product, by the crawl stamp they were read under. */
  const nodeFacts = new Map<string, NodeFacts>();
  /** The last list of live products and the change counter read before it was made. */
  let liveList: { seq: number; list: LiveProduct[] } | null = null;

  async function factsOf(id: string, crawled: string | null): Promise<NodeFacts> {
    const hit = nodeFacts.get(id);
    if (hit && hit.crawled === crawled) return hit;
    const names = await crawls.nodeNamesOf(id, CATALOG_NODE_NAMES);
    const facts = { crawled, text: fold(names.join('\n')), hasNodes: names.length > 0, categories: await crawls.nodeCategoriesOf(id, CATEGORY_FACETS) };
    nodeFacts.set(id, facts);
    return facts;
  }

  async function read(): Promise<LiveProduct[]> {
    const stamps = await repo.liveStamps();
    const stampOf = (s: { updated_at: string; crawled: string | null }) => `${s.updated_at}|${s.crawled ?? ''}`;
    const stale = stamps.filter((s) => entries.get(s.id)?.stamp !== stampOf(s));
    const staleIds = stale.map((s) => s.id);
    const ranges = new Map<string, { label: string; range: string }[]>();
    for (const r of await crawls.platformRanges(staleIds)) ranges.set(r.product_id, [...(ranges.get(r.product_id) ?? []), { label: r.label, range: r.platform_range }]);
    for (const row of await repo.findLive(staleIds)) {
      const fields = parseFields(row);
      const s = stale.find((x) => x.id === row.id)!;
      const withdrawn = withdrawnInFields(row.fields);
      const labelRanges = (ranges.get(row.id) ?? []).filter((r) => !withdrawn.has(r.label));
      const facts = await factsOf(row.id, s.crawled);
      entries.set(row.id, {
        stamp: stampOf({ updated_at: row.updated_at, crawled: s.crawled }),
        updatedAt: row.updated_at,
        card: catalogCard({ id: row.id, state: row.state, fields }),
        name: fold(fields.name),
        text: `${fold(`${fields.name}\n${fields.description ?? ''}`)}\n${facts.text}`,
        ranges: labelRanges.map((r) => r.range),
        labelRanges,
        withdrawn: [...withdrawn.keys()],
        crawled: s.crawled,
        hasNodes: facts.hasNodes,
        categories: facts.categories,
      });
    }
    const live = new Set(stamps.map((s) => s.id));
    for (const id of entries.keys()) if (!live.has(id)) entries.delete(id);
    for (const id of nodeFacts.keys()) if (!live.has(id)) nodeFacts.delete(id);
    return stamps.flatMap((s) => {
      const e = entries.get(s.id);
      return e ? [{ id: s.id, ...e }] : [];
    });
  }

  return {
    /** Every live product's entry, as of the page change counter read first. */
    async live(): Promise<LiveProduct[]> {
      const seq = await changes.current();
      if (liveList?.seq === seq) return liveList.list;
      const list = await read();
      if (!liveList || seq >= liveList.seq) liveList = { seq, list };
      return list;
    },
  };
}

/**
 * Live products as catalog cards with their search text, kept per product until its row
 * changes (only the card, never the page fields, so memory stays small). A product's node
 * names are part of its search text (the catalog finds products by their nodes too); they are
 * kept apart, by the product's crawl stamp, so that an edit of the page's text re-reads the row
 * alone, and at most CATALOG_NODE_NAMES of them are read, from the name index.
 */
import { withdrawnInFields } from '../notices/notices.js';
import type { CrawlsRepository } from '../crawler/repository.js';
import type { ProductFields } from '../products/fields.js';
import type { ProductRow, ProductsRepository } from '../products/repository.js';
import type { CatalogCard } from './model.js';
import type { PageChanges } from './page-changes.js';
import { catalogCard } from './presenter.js';

/** Distinct node names of one product that its catalog search text holds (the first by name). */
export const CATALOG_NODE_NAMES = 2_000;

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
}

export type LiveProduct = IndexEntry & { id: string };

/** Lower-cased, accents removed: "Café" matches "cafe". */
export function fold(s: string): string {
  return s.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
}

export function parseFields(row: ProductRow): ProductFields {
  return { ...(JSON.parse(row.fields) as ProductFields), name: row.name };
}

export function catalogIndex({ repo, crawls, changes }: { repo: ProductsRepository; crawls: Pick<CrawlsRepository, 'nodeNamesOf' | 'platformRanges'>; changes: PageChanges }) {
  const entries = new Map<string, IndexEntry>();
  /** Folded node names per product, by the crawl stamp they were read under. */
  const nodeNames = new Map<string, { crawled: string | null; text: string }>();
  /** The last list of live products and the change counter read before it was made. */
  let liveList: { seq: number; list: LiveProduct[] } | null = null;

  async function namesOf(id: string, crawled: string | null): Promise<string> {
    const hit = nodeNames.get(id);
    if (hit && hit.crawled === crawled) return hit.text;
    const text = fold((await crawls.nodeNamesOf(id, CATALOG_NODE_NAMES)).join('\n'));
    nodeNames.set(id, { crawled, text });
    return text;
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
      entries.set(row.id, {
        stamp: stampOf({ updated_at: row.updated_at, crawled: s.crawled }),
        updatedAt: row.updated_at,
        card: catalogCard({ id: row.id, state: row.state, fields }),
        name: fold(fields.name),
        text: `${fold(`${fields.name}\n${fields.description ?? ''}`)}\n${await namesOf(row.id, s.crawled)}`,
        ranges: labelRanges.map((r) => r.range),
        labelRanges,
        withdrawn: [...withdrawn.keys()],
      });
    }
    const live = new Set(stamps.map((s) => s.id));
    for (const id of entries.keys()) if (!live.has(id)) entries.delete(id);
    for (const id of nodeNames.keys()) if (!live.has(id)) nodeNames.delete(id);
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

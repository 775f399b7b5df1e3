// Crawled node rows → what node pages, the node search, the product page's node lists and the
// catalog cards show (docs/vendors.md#your-nodes-in-the-node-catalog). Pure functions: no I/O.
import { rasterSize } from '../content/svg.js';
import type { CrawlNodeRow } from '../crawler/repository.js';
import type { InstallableUnit } from '../crawler/units.js';
import type { IconSize, NodeGroup } from './model.js';
import { nodeUrl } from '../model/node-url.js';
import { nodeGroups } from './presenter.js';

/** Rows a node list needs. */
type ListRow = Pick<CrawlNodeRow, 'factory_class' | 'name' | 'category_names' | 'short_description' | 'deprecated' | 'icon' | 'icon_type'>;

/**
 * A stored icon's own pixel size, so pages draw it unscaled (node icons are 16 px artwork that
 * scaling blurs); null for SVG (drawn at 16 px, it scales cleanly) and for unreadable headers.
 */
export function iconSizeOf(row: Pick<CrawlNodeRow, 'icon' | 'icon_type'>): IconSize {
  if (!row.icon || row.icon_type === 'image/svg+xml') return null;
  const size = rasterSize(Buffer.from(row.icon.slice(0, 64), 'base64'));
  // A header claiming a huge image is drawn at most 64 px: the page layout is not the vendor's to break.
  return size && size.width > 0 && size.height > 0 && size.width <= 64 && size.height <= 64 ? size : null;
}

/** Groups with each node's icon size (for crisp drawing) added. */
export function nodeGroupsWithIcons(productId: string, rows: ListRow[]): NodeGroup[] {
  const sizes = new Map(rows.map((r) => [nodeUrl(productId, r.factory_class), iconSizeOf(r)]));
  const groups = nodeGroups(productId, rows);
  for (const g of groups) for (const n of g.nodes) n.iconSize = sizes.get(n.url) ?? null;
  return groups;
}

/** Numeric-aware ascending order of label names ("5.9" before "5.10"): the versions' order. */
export function compareLabelsAsc(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}

/**
 * The labels whose node description differs from the previous label's in version order: the
 * stored description (already sanitized, so equal input compares equal) plus the name and
 * category the node is listed under. The first label is where the node appeared, not a change.
 */
export function descriptionChangedIn(rows: Pick<CrawlNodeRow, 'label' | 'data' | 'name' | 'category_names'>[]): string[] {
  const sorted = [...rows].sort((a, b) => compareLabelsAsc(a.label, b.label));
  const fingerprint = (r: (typeof sorted)[number]) => {
    let description: unknown = null;
    try {
      description = (JSON.parse(r.data) as { description?: unknown }).description ?? null;
    } catch {
      description = r.data;
    }
    return JSON.stringify([r.name, r.category_names, description]);
  };
  const changed: string[] = [];
  for (let i = 1; i < sorted.length; i++) if (fingerprint(sorted[i]!) !== fingerprint(sorted[i - 1]!)) changed.push(sorted[i]!.label);
  return changed;
}

/**
 * A node's name without the marks the platform's own convention adds to a superseded node
 * ("Excel Reader (XLS) (deprecated)", "Row Filter (legacy)"): the name its replacement keeps.
 */
export function baseNodeName(name: string): string {
  return unmarkedNodeName(name).toLowerCase();
}

/** `baseNodeName` as written (the name a replacement is looked up by). */
export function unmarkedNodeName(name: string): string {
  return name.replace(/\s*\((?:deprecated|legacy|old|outdated)\)\s*$/i, '').trim();
}

/**
 * The replacement of a deprecated node, when one can be named from the crawl: a node of the
 * same product, not deprecated, whose name is the deprecated one's without its mark. plugin.xml
 * only says `deprecated="true"`; the successor is by convention a new factory under the same name.
 */
export function replacementFor(
  node: { name: string; url: string },
  candidates: { name: string; url: string; deprecated: boolean }[],
): { name: string; url: string } | null {
  const base = baseNodeName(node.name);
  const hit = candidates.find((c) => !c.deprecated && c.url !== node.url && baseNodeName(c.name) === base);
  return hit ? { name: hit.name, url: hit.url } : null;
}

/** `/nodes?…` for a node search with these filters (empty ones left out). */
export function nodeSearchHref(p: { q?: string; product?: string | null; category?: string | null }): string {
  const params = new URLSearchParams();
  if (p.q) params.set('q', p.q);
  if (p.product) params.set('product', p.product);
  if (p.category) params.set('category', p.category);
  const s = params.toString();
  return s ? `/nodes?${s}` : '/nodes';
}

/**
 * The vendor a catalog card names: the provider of the label's features as its P2 metadata says
 * (`org.eclipse.equinox.p2.provider`, the feature's provider-name), the most frequent one when
 * features disagree; null when the crawl found none.
 */
export function vendorOf(unitsJson: string | null | undefined): string | null {
  if (!unitsJson) return null;
  let units: InstallableUnit[];
  try {
    units = JSON.parse(unitsJson) as InstallableUnit[];
  } catch {
    return null;
  }
  if (!Array.isArray(units)) return null;
  const counts = new Map<string, number>();
  for (const u of units) {
    if (u?.kind !== 'feature' || typeof u.provider !== 'string') continue;
    const p = u.provider.trim();
    // An unresolved `%key` is a missing translation, not a name.
    if (!p || p.startsWith('%')) continue;
    counts.set(p, (counts.get(p) ?? 0) + 1);
  }
  let best: string | null = null;
  for (const [p, n] of counts) if (best === null || n > counts.get(best)!) best = p;
  return best;
}

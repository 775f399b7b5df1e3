// Product rows → what the pages show. Pure functions: no I/O, so the page service can cache
// their output by the inputs it read.
import { createHash } from 'node:crypto';
import type { RenderedContent } from '../content/product-content.js';
import type { FileEntry, LabelSummary } from '../files/reader.js';
import { platformReleases, rangeContains } from '../crawler/platform-range.js';
import type { LabelNotices, ProductFields } from '../model/fields.js';
import { nodeUrl } from '../model/node-url.js';
import { own } from '../notices/notices.js';
import { isWithdrawn, labelNoticeView } from '../notices/view.js';
import { normalizeHex, readableOn, textColorOn } from './colors.js';
import type { CatalogCard, Colors, InstallLabel, NodeGroup, ProductPageModel, SiteInfo, WorkflowFile } from './model.js';

/** Example workflows a product page lists; the download host's folder index lists them all. */
export const PAGE_WORKFLOWS = 100;

/** What was uploaded for a product (files/reader.ts). */
export interface ProductFilesView {
  labels: LabelSummary[];
  /** The first example workflows (at most PAGE_WORKFLOWS), sorted. */
  workflows: FileEntry[];
  /** Every file under `workflows/` (more than `workflows` lists when the folder is larger). */
  workflowCount?: number;
  /** Labels with a folder and no release: the download host serves nothing for them (docs/vendors.md "Releases"). */
  unreleased?: ReadonlySet<string>;
}

export interface ProductInput {
  id: string;
  state: 'hidden' | 'live';
  fields: ProductFields;
}

/** A stable default gradient from the product id, for products that set no colours. */
function defaultColors(id: string): [string, string] {
  const hue = createHash('sha256').update(id).digest()[0]! * (360 / 256);
  return [hslHex(hue, 0.55, 0.36), hslHex((hue + 40) % 360, 0.6, 0.5)];
}

function hslHex(h: number, s: number, l: number): string {
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => {
    const k = (n + h / 30) % 12;
    const c = l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1));
    return Math.round(c * 255).toString(16).padStart(2, '0');
  };
  return `#${f(0)}${f(8)}${f(4)}`;
}

export function productColors(id: string, style: ProductFields['style']): Colors {
  const [d1, d2] = defaultColors(id);
  const color1 = normalizeHex(style?.color1, d1);
  // One colour set: a flat header in that colour rather than a clash with the default.
  const color2 = normalizeHex(style?.color2, style?.color1 ? color1 : d2);
  return { color1, color2, ...readableOn([color1, color2]) };
}

/** Short version tag of the icon so its URL changes when the icon does; null without one. */
export function iconVersion(fields: ProductFields): string | null {
  const icon = fields.icon ?? fields.iconBase64;
  return icon ? createHash('sha256').update(icon).digest('hex').slice(0, 12) : null;
}

function iconUrl(p: ProductInput): string | null {
  const v = iconVersion(p.fields);
  return v ? `/product/${p.id}/icon?v=${v}` : null;
}

export function catalogCard(p: ProductInput): CatalogCard {
  return {
    id: p.id,
    name: p.fields.name,
    description: p.fields.description ?? '',
    iconUrl: iconUrl(p),
    colors: productColors(p.id, p.fields.style),
  };
}

/** Numeric-aware descending order ("5.10" above "5.9"). */
function compareLabelsDesc(a: string, b: string): number {
  return b.localeCompare(a, 'en', { numeric: true });
}

/**
 * The labels to offer, best first: the one equal to the current platform release is
 * recommended; else the highest whose platform range (`ranges`, from the latest crawls) holds
 * that release; else the highest (docs/vendors.md#labels-and-the-install-section).
 *
 * A label is offered when its folder `update-site/<label>/` has files (an update site the
 * platform adds by URL) or when it has the archive `update-site/<label>.zip` (spec area A
 * "Files"): the platform also installs from a local archive file, so a vendor who uploads only
 * the archive still gets an install entry, with the download link and no update-site URL (none
 * exists). The recommendation looks at every offered label alike: the label names the platform
 * release the extension is built for, and that matters more to the user than how it is delivered.
 */
export function installLabels(
  site: SiteInfo,
  productId: string,
  labels: ProductFilesView['labels'],
  release: string | null,
  /** Each crawled label's platform range (OSGi notation). */
  ranges: ReadonlyMap<string, string | null> = new Map(),
  /** The product's label notices: withdrawn labels are not offered (nor recommended), deprecated ones carry their notice. */
  notices?: LabelNotices,
  /** Labels with a folder and no release: listed as not released yet, with no URL, never recommended. */
  unreleased: ReadonlySet<string> = new Set(),
): InstallLabel[] {
  const sorted = labels.filter((l) => (l.files > 0 || l.hasArchive) && !isWithdrawn(notices, l.label)).sort((a, b) => compareLabelsDesc(a.label, b.label));
  const offered = new Set(sorted.map((l) => l.label));
  const installable = sorted.filter((l) => !unreleased.has(l.label));
  const named = installable.find((l) => l.label === release)?.label;
  const fits = release ? installable.find((l) => rangeContains(ranges.get(l.label) ?? '', release))?.label : undefined;
  const recommended = named ?? fits ?? installable[0]?.label ?? null;
  const why =
    named !== undefined
      ? `Built for the current platform release, ${release}.`
      : fits !== undefined
        ? `Works with the current platform release, ${release}.`
        : installable.length > 1
          ? 'The newest label.'
          : null;
  const base = `${site.downloadUrl}/${productId}`;
  const rows = sorted.map((l) => ({
    label: l.label,
    url: l.files > 0 && !unreleased.has(l.label) ? `${base}/${l.label}` : null,
    ...(unreleased.has(l.label) ? { unreleased: true } : {}),
    recommended: l.label === recommended,
    archiveUrl: l.hasArchive ? `${base}/${l.label}.zip` : null,
    archiveBytes: l.archiveBytes,
    lastUploadAt: l.lastUploadAt,
    platformRange: ranges.get(l.label) ?? null,
    platformReleases: platformReleases(ranges.get(l.label) ?? null),
    why: l.label === recommended ? why : null,
    notice: labelNoticeView(l.label, own(notices, l.label), offered),
  }));
  return [...rows.filter((r) => r.recommended), ...rows.filter((r) => !r.recommended)];
}

export function productPageModel(
  site: SiteInfo,
  p: ProductInput,
  release: string | null,
  files: ProductFilesView | null,
  /** `renderProductContent` of the fields, with PAGE_IDS reserved (made off the serving loop). */
  content: RenderedContent,
  /** Each crawled label's platform range (OSGi notation). */
  ranges: ReadonlyMap<string, string | null> = new Map(),
): ProductPageModel {
  const f = p.fields;
  const colors = productColors(p.id, f.style);
  const badgeColor = normalizeHex(f.style?.badgeColor, colors.color1);
  const workflows: WorkflowFile[] | null = files
    ? files.workflows.map((w) => ({
        path: w.path,
        url: `${site.downloadUrl}/workflows/${p.id}/${w.path.split('/').map(encodeURIComponent).join('/')}`,
        size: w.size,
      }))
    : null;
  return {
    id: p.id,
    name: f.name,
    description: f.description ?? '',
    hidden: p.state !== 'live',
    pageUrl: `${site.baseUrl}/product/${p.id}`,
    iconUrl: iconUrl(p),
    colors,
    backgroundImageUrl: f.style?.backgroundImageUrl ? cssUrl(f.style.backgroundImageUrl) : null,
    badge: content.latest
      ? { version: content.latest.version, date: content.latest.date, color: badgeColor, text: textColorOn([badgeColor]) }
      : null,
    content,
    labels: files ? installLabels(site, p.id, files.labels, release, ranges, f.labels, files.unreleased) : null,
    workflows,
    workflowsMore:
      files && (files.workflowCount ?? 0) > files.workflows.length ? { total: files.workflowCount ?? 0, indexUrl: `${site.downloadUrl}/workflows/${p.id}/` } : null,
    contact: f.contact ?? null,
    feedUrl: p.state === 'live' ? `/product/${p.id}/releases.atom` : null,
    nodes: null,
  };
}

/** Crawled nodes grouped by their named category path, groups and nodes sorted by name. */
export function nodeGroups(
  productId: string,
  rows: { factory_class: string; name: string; category_names: string; short_description: string; deprecated: number; icon: string | null }[],
): NodeGroup[] {
  const groups = new Map<string, NodeGroup>();
  for (const r of rows) {
    let g = groups.get(r.category_names);
    if (!g) {
      g = { category: r.category_names || 'Uncategorized', nodes: [] };
      groups.set(r.category_names, g);
    }
    const url = nodeUrl(productId, r.factory_class);
    g.nodes.push({ name: r.name, url, shortDescription: r.short_description, deprecated: r.deprecated === 1, iconUrl: r.icon ? `${url}/icon` : null });
  }
  const byName = (a: string, b: string) => a.localeCompare(b, 'en', { sensitivity: 'base' });
  for (const g of groups.values()) g.nodes.sort((a, b) => byName(a.name, b.name));
  return [...groups.values()].sort((a, b) => byName(a.category, b.category));
}

/**
 * A stored background URL (validated absolute http(s) on PATCH) made safe inside CSS
 * `url("…")`: the URL serializer percent-encodes quotes and spaces; the rest is escaped here.
 */
export function cssUrl(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  return url.href.replace(/["'()\\\s<>]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

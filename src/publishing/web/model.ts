// What the pages show, computed once per product (presenter.ts) and rendered by the TSX views.
import type { RenderedContent } from '../content/product-content.js';
import type { LabelNoticeView } from '../notices/view.js';

export interface SiteInfo {
  name: string;
  baseUrl: string;
  downloadUrl: string;
}

export interface Colors {
  color1: string;
  color2: string;
  /** Light or dark, whichever reads best on both gradient ends. */
  text: string;
  /** Veil between gradient and text when the text alone would not reach AA contrast. */
  scrim: string | null;
}

export interface InstallLabel {
  label: string;
  /** The update site to add in the platform; null for a label uploaded only as an archive, or not released yet. */
  url: string | null;
  /** A folder was uploaded but the label has no release yet: nothing to install from it (never recommended). */
  unreleased?: boolean;
  recommended: boolean;
  /** `{download_url}/<product>/<label>.zip`, or null without an archive. */
  archiveUrl: string | null;
  archiveBytes: number;
  lastUploadAt: string | null;
  /** Platform releases the label installs into, from its latest crawl (OSGi range); null: unknown. */
  platformRange?: string | null;
  /** The same as people read it ("5.1 – 5.3"). */
  platformReleases?: string | null;
  /** Why the recommended label is recommended (null on the others). */
  why?: string | null;
  /** Set while the label is deprecated; withdrawn labels are not offered at all. */
  notice: LabelNoticeView | null;
}

export interface WorkflowFile {
  path: string;
  url: string;
  size: number;
}

export interface ProductPageModel {
  id: string;
  name: string;
  description: string;
  hidden: boolean;
  pageUrl: string;
  /** Versioned icon URL (changes with the icon), or null without an icon. */
  iconUrl: string | null;
  colors: Colors;
  backgroundImageUrl: string | null;
  badge: { version: string; date: string; color: string; text: string } | null;
  content: RenderedContent;
  /** Uploaded update-site labels, best first; null while the files part is not available. */
  labels: InstallLabel[] | null;
  workflows: WorkflowFile[] | null;
  /** When the product has more example workflows than the page lists: how many, and the folder index listing them all. */
  workflowsMore?: { total: number; indexUrl: string } | null;
  contact: { name: string; email: string } | null;
  /** The product's release feed; null while hidden (feeds list live products only, README "Product pages"). */
  feedUrl: string | null;
  /** Nodes of the best crawled label, grouped by named category path; null before any crawl. */
  nodes: { label: string; groups: NodeGroup[] } | null;
  /** The changes page, when there are two labels or a label with an earlier release. */
  changesUrl?: string;
  /** Installs counted by the download host (complete days only); absent without statistics. */
  downloads?: import('../stats/service.js').DownloadsChartModel;
  /** Nodes of every crawled label with an update site, best label first, each bounded (web/product-nodes.ts); null before any crawl. */
  nodeLabels?: LabelNodes[] | null;
}

/** One label's nodes on the product page: its count, its first nodes (web/product-nodes.ts) and its full list's address. */
export interface LabelNodes {
  label: string;
  /** The label's update site. */
  url: string;
  recommended: boolean;
  count: number;
  /** Nodes in `groups`: the label's first ones (none for labels past the page's preview). */
  shown: number;
  groups: NodeGroup[];
  /** The label's node list, paged (`/product/<id>/nodes?label=…`). */
  listUrl: string;
}

/** A label's node list, one page of it (`/product/<id>/nodes?label=…&page=…`). */
export interface LabelNodesPageModel {
  productId: string;
  productName: string;
  productUrl: string;
  productHidden: boolean;
  label: string;
  recommended: boolean;
  count: number;
  page: number;
  pages: number;
  /** Position of the page's first node in the label's list, from 1. */
  first: number;
  groups: NodeGroup[];
  /** Every label of the product with nodes (the page offers to switch), best first. */
  labels: { label: string; count: number; url: string; current: boolean }[];
  /** The page before and after this one, when there is one. */
  previousUrl: string | null;
  nextUrl: string | null;
}

/** A raster icon's own pixel size (drawn unscaled), or null: SVG or unknown, drawn at 16 px. */
export type IconSize = { width: number; height: number } | null;

export interface NodeListItem {
  name: string;
  url: string;
  shortDescription: string;
  deprecated: boolean;
  iconUrl: string | null;
  iconSize?: IconSize;
}

export interface NodeGroup {
  category: string;
  nodes: NodeListItem[];
}

export interface NodePageModel {
  productId: string;
  productName: string;
  productUrl: string;
  productHidden: boolean;
  label: string;
  /** The update site to add in the platform to install this node. */
  installUrl: string;
  url: string;
  name: string;
  factoryClass: string;
  bundle: string;
  categoryNames: string[];
  deprecated: boolean;
  iconUrl: string | null;
  /** The icon's own pixel size, to draw it unscaled; null when unknown (SVG, or no icon). */
  iconSize: { width: number; height: number } | null;
  /** Every description field as sanitized HTML, as the crawl stored it (crawler/sanitize-node.ts). */
  description: import('../model/nodes.js').NodeDescription | null;
  /** Platforms whose users get this node; null: every platform. */
  platforms: string[] | null;
  /** The deprecation notice of the label the page installs from. */
  labelNotice?: LabelNoticeView | null;
  productIconUrl: string | null;
  productColors: Colors;
  /** Every label with an update site that has the node, highest version first. */
  labels: { label: string; url: string; recommended: boolean; installed: boolean }[];
  /** Labels (ascending) whose description differs from the label before them in version order. */
  descriptionChangedIn: string[];
  /** A current node of the same product that replaces this deprecated one, when one can be named. */
  replacement: { name: string; url: string } | null;
  /** Node search over this product, and over this node's category. */
  productSearchUrl: string;
  categorySearchUrl: string | null;
}

export interface NodeSearchModel {
  query: string;
  hits: {
    name: string;
    url: string;
    productName: string;
    productUrl: string;
    category: string;
    shortDescription: string;
    iconUrl?: string | null;
    iconSize?: IconSize;
    /** A node search for this hit's category (and product). */
    categoryUrl?: string | null;
  }[];
  /** The filters as asked (a product id, a category path, a platform release), or null. */
  product?: string | null;
  category?: string | null;
  works?: string | null;
  /** What the filters offer: live products with nodes, and indexed category paths. */
  facets?: { products: { id: string; name: string }[]; categories: string[] };
  /** More nodes matched than a page shows (NODE_SEARCH_LIMIT). */
  capped?: boolean;
}

export interface CatalogCard {
  id: string;
  name: string;
  description: string;
  iconUrl: string | null;
  colors: Colors;
  /** Card facts: the badge's version, the vendor, distinct nodes across labels, last upload or crawl. */
  version?: string | null;
  vendor?: string | null;
  nodeCount?: number;
  lastUpdate?: string | null;
}

export interface CatalogPageModel {
  query: string;
  /** The "works with" release filter (`?works=5.3`), `""` for none. */
  works?: string;
  cards: CatalogCard[];
  total: number;
  page: number;
  pages: number;
}

/** An answer as kept and sent: encoded bytes, content type and entity tag. */
export interface Served {
  body: Buffer;
  type: string;
  etag: string;
  /**
   * An older version, served while the current one cannot be rendered (its render is deferred by
   * the render-time budget): correct for its own version, never to be filed as the current answer.
   */
  provisional?: true;
}

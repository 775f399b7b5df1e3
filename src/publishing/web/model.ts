// What the pages show, computed once per product (presenter.ts) and rendered by the TSX views.
import type { RenderedContent } from '../content/product-content.js';

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
  url: string;
  recommended: boolean;
  archiveUrl: string | null;
  archiveBytes: number;
  lastUploadAt: string | null;
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
  contact: { name: string; email: string } | null;
  feedUrl: string;
}

export interface CatalogCard {
  id: string;
  name: string;
  description: string;
  iconUrl: string | null;
  colors: Colors;
}

export interface CatalogPageModel {
  query: string;
  cards: CatalogCard[];
  total: number;
  page: number;
  pages: number;
}

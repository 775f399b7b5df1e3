// What pages show of a label's notice (notices.ts): pure, used by the page presenter.
import type { FeedNotice } from '../content/feeds.js';
import type { LabelNotice, LabelNotices } from '../model/fields.js';
import { own } from './notices.js';

/** A deprecated label's notice as pages show it (a withdrawn label is not shown at all). */
export interface LabelNoticeView {
  label: string;
  message: string | null;
  /** When the label was deprecated (ISO 8601). */
  since: string;
  /** The replacement label when the product page offers it (else no link: it would lead nowhere). */
  replacement: string | null;
}

/** The id of a label's install entry on the product page (`#label:5.2`). A colon is in no vendor heading id (github-slugger drops it), so the two never collide. */
export const labelAnchor = (label: string) => `label:${label}`;

export function isWithdrawn(notices: LabelNotices | undefined, label: string): boolean {
  return own(notices, label)?.status === 'withdrawn';
}

/** The view of `label`'s notice among the `offered` labels, or null when it is not deprecated. */
export function labelNoticeView(label: string, notice: LabelNotice | undefined, offered: ReadonlySet<string>): LabelNoticeView | null {
  if (notice?.status !== 'deprecated') return null;
  const r = notice.replacement;
  return { label, message: notice.message ?? null, since: notice.since, replacement: r !== undefined && offered.has(r) ? r : null };
}

/** Every stored notice as a feed entry (content/feeds.ts), the replacement by its update-site URL. */
export function feedNotices(notices: LabelNotices | undefined, downloadUrl: string, productId: string): FeedNotice[] {
  return Object.entries(notices ?? {}).map(([label, n]) => ({
    label,
    status: n.status,
    since: n.since,
    message: n.message ?? null,
    replacement: n.replacement ? { label: n.replacement, url: `${downloadUrl}/${productId}/${n.replacement}` } : null,
  }));
}

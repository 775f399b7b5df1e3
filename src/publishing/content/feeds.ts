// Release feeds: Atom 1.0 (RFC 4287), one entry per dated release whose content is
// the rendered notes of that release, built with the `feed` library.
import { Feed } from 'feed';
import type { RenderedRelease } from './product-content.js';

export interface FeedProduct {
  id: string;
  name: string;
  description: string;
  pageUrl: string;
  /** Feed-level author (RFC 4287 §4.1.1: required unless every entry has one). */
  author: string;
  /** When the product last changed (ISO); the feed's <updated> when it is newer than any release. */
  updatedAt: string;
  releases: RenderedRelease[];
  /** Deprecated and withdrawn labels, each an entry dated when its status changed. */
  notices?: FeedNotice[];
}

export interface FeedNotice {
  label: string;
  status: 'deprecated' | 'withdrawn';
  /** ISO 8601. */
  since: string;
  message: string | null;
  replacement: { label: string; url: string } | null;
}

/** A label notice's entry: one per label and status change (its id names both, RFC 4287 §4.2.6). */
function noticeEntry(p: FeedProduct, n: FeedNotice, withProductName: boolean) {
  const title = `${withProductName ? `${p.name} ` : ''}${n.label} ${n.status}`;
  let content = `<p>Label <strong>${escapeHtml(n.label)}</strong> is ${n.status}${n.status === 'withdrawn' ? ': it is no longer offered and its update site is gone' : ''}.</p>`;
  if (n.message) content += `<p>${escapeHtml(n.message)}</p>`;
  if (n.replacement) content += `<p>Use ${escapeHtml(n.replacement.label)} instead: <a href="${escapeHtml(n.replacement.url)}">${escapeHtml(n.replacement.url)}</a></p>`;
  return {
    title: escapeHtml(title),
    id: `${p.pageUrl}#label:${n.label}:${n.status}:${n.since}`,
    link: `${p.pageUrl}#label:${n.label}`,
    date: new Date(n.since),
    content: html(content),
    author: [{ name: p.author }],
  };
}

type Item = ReturnType<typeof entryOf>;

/** Release entries and notice entries together, newest first (stable: equal dates keep their order). */
function withNotices(items: Item[], notices: { product: FeedProduct; notice: FeedNotice }[], withProductName: boolean): Item[] {
  if (notices.length === 0) return items;
  const all = [...items, ...notices.map((n) => noticeEntry(n.product, n.notice, withProductName))];
  return all.sort((a, b) => b.date.getTime() - a.date.getTime());
}

/** `]]>` cannot appear inside the CDATA sections the library writes; `>` may be escaped in HTML. */
function html(s: string): string {
  return s.replace(/]]>/g, ']]&gt;');
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** The notes of one release as HTML: summary, then each change type with its items. */
export function releaseNotesHtml(r: RenderedRelease): string {
  let out = r.summaryHtml;
  for (const s of r.sections) {
    out += `<h3>${escapeHtml(s.type)}</h3><ul>${s.itemsHtml.map((i) => `<li>${i}</li>`).join('')}</ul>`;
  }
  return html(out);
}

const dated = (r: RenderedRelease): r is RenderedRelease & { date: string } => !r.unreleased && r.date !== null;
const releaseTime = (date: string) => new Date(`${date}T00:00:00Z`);

interface Entry {
  product: FeedProduct;
  release: RenderedRelease & { date: string };
}

function entryOf(e: Entry, withProductName: boolean) {
  const title = `${withProductName ? `${e.product.name} ` : ''}${e.release.version}${e.release.yanked ? ' (yanked)' : ''}`;
  const link = `${e.product.pageUrl}#${e.release.id}`;
  return {
    // Entry titles are type="html" in this library: escape so a name never becomes markup.
    title: escapeHtml(title),
    // Stable per product and version (RFC 4287 §4.2.6): the release's anchor on the page.
    id: link,
    link,
    date: releaseTime(e.release.date),
    content: releaseNotesHtml(e.release),
    author: [{ name: e.product.author }],
  };
}

/** Newer of the product's last change and its newest release (RFC 4287 §4.2.15). */
function latest(times: Date[]): Date {
  return new Date(Math.max(0, ...times.map((t) => t.getTime())));
}

export function productFeed(p: FeedProduct, selfUrl: string): string {
  const entries = p.releases.filter(dated).map((release) => ({ product: p, release }));
  const feed = new Feed({
    id: p.pageUrl,
    title: `${p.name}: releases`,
    ...(p.description ? { description: p.description } : {}),
    link: p.pageUrl,
    feed: selfUrl,
    updated: latest([new Date(p.updatedAt), ...entries.map((e) => releaseTime(e.release.date))]),
    author: { name: p.author },
    generator: 'Pier',
  });
  const notices = (p.notices ?? []).map((notice) => ({ product: p, notice }));
  for (const item of withNotices(entries.map((e) => entryOf(e, false)), notices, false)) feed.addItem(item);
  return feed.atom1();
}

/** Every live product's releases, newest first (by date, then product name). */
export function siteFeed(products: FeedProduct[], site: { name: string; baseUrl: string; selfUrl: string }): string {
  const entries: Entry[] = products.flatMap((product) => product.releases.filter(dated).map((release) => ({ product, release })));
  entries.sort((a, b) => (a.release.date === b.release.date ? a.product.name.localeCompare(b.product.name) : a.release.date < b.release.date ? 1 : -1));
  const feed = new Feed({
    id: `${site.baseUrl}/`,
    title: `${site.name}: extension releases`,
    link: `${site.baseUrl}/`,
    feed: site.selfUrl,
    updated: latest([...products.map((p) => new Date(p.updatedAt)), ...entries.map((e) => releaseTime(e.release.date))]),
    author: { name: site.name },
    generator: 'Pier',
  });
  const notices = products.flatMap((product) => (product.notices ?? []).map((notice) => ({ product, notice })));
  for (const item of withNotices(entries.map((e) => entryOf(e, true)), notices, true)) feed.addItem(item);
  return feed.atom1();
}

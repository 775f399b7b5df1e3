// Release feeds (issue 7): Atom 1.0 (RFC 4287), one entry per dated release whose content is
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
  for (const e of entries) feed.addItem(entryOf(e, false));
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
  for (const e of entries) feed.addItem(entryOf(e, true));
  return feed.atom1();
}

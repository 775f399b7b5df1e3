// Renders every Markdown field of a product for its page and feeds: one slugger for the
// whole page so anchors are unique across text, FAQ and changelog, the platform release
// substituted everywhere first, and the same changelog/FAQ parsers as the PATCH validation.
import GithubSlugger from 'github-slugger';
import type { ProductFields } from '../model/fields.js';
import { type ChangelogRelease, latestRelease, parseChangelog } from './changelog.js';
import { parseFaq } from './faq.js';
import { type Heading, type LinkReferences, linkReferences, renderMarkdown } from './markdown.js';
import { substitutePlatformRelease } from './placeholder.js';

export interface RenderedSection {
  type: string;
  /** One of the Keep a Changelog types (plus Info): shown with a badge. */
  known: boolean;
  itemsHtml: string[];
}

export interface RenderedRelease {
  version: string;
  date: string | null;
  unreleased: boolean;
  yanked: boolean;
  breaking: boolean;
  /** Anchor of the release on the page. */
  id: string;
  summaryHtml: string;
  sections: RenderedSection[];
}

export interface RenderedFaqEntry {
  question: string;
  id: string;
  answerHtml: string;
}

export interface RenderedContent {
  descriptionText: string;
  textHtml: string;
  /** Headings of `text`, for the sidebar. */
  headings: Heading[];
  instructionsHtml: string;
  licenseHtml: string;
  faq: RenderedFaqEntry[];
  /** Parsed changelog, or null when there is none or it no longer parses. */
  changelog: { title: string; introHtml: string; releases: RenderedRelease[] } | null;
  /** Fallback when a stored changelog does not parse: rendered as plain Markdown. */
  changelogHtml: string;
  /** Newest dated release (not unreleased, not yanked): the version badge. */
  latest: { version: string; date: string } | null;
}

/** Level of the page's own section headings (h2); vendor headings sit below. */
const SECTION_LEVEL = 2;

export function renderProductContent(
  fields: ProductFields,
  release: string | null,
  reservedIds: readonly string[] = [],
): RenderedContent {
  const slugger = new GithubSlugger();
  for (const id of reservedIds) slugger.slug(id);
  const md = (src: string | undefined) => substitutePlatformRelease(src ?? '', release);

  // The page's h1 is the product name, so a vendor "# Heading" becomes an h2 in the body.
  const text = renderMarkdown(md(fields.text), { slugger, headingOffset: 1 });
  const instructions = renderMarkdown(md(fields.instructions), { slugger, headingOffset: SECTION_LEVEL });
  const license = renderMarkdown(md(fields.license), { slugger, headingOffset: SECTION_LEVEL });

  const faqSource = md(fields.faq);
  const faqRefs = linkReferences(faqSource);
  const faq = parseFaq(faqSource, { slugger }).entries.map((e) => ({
    question: e.question,
    id: e.id,
    answerHtml: renderMarkdown(e.answerMarkdown, { slugger, headingOffset: SECTION_LEVEL, references: faqRefs }).html,
  }));

  const changelogSource = md(fields.changelog);
  let changelog: RenderedContent['changelog'] = null;
  let changelogHtml = '';
  let latest: RenderedContent['latest'] = null;
  if (changelogSource.trim() !== '') {
    const parsed = parseChangelog(changelogSource);
    if (parsed.changelog) {
      const refs = linkReferences(changelogSource);
      const ids = new Set<string>();
      const newest = latestRelease(parsed.changelog);
      latest = newest?.date ? { version: newest.version, date: newest.date } : null;
      changelog = {
        title: parsed.changelog.title,
        introHtml: renderMarkdown(parsed.changelog.intro, { slugger, headingOffset: SECTION_LEVEL, references: refs }).html,
        releases: parsed.changelog.releases.map((r) => renderRelease(r, refs, slugger, ids)),
      };
    } else {
      changelogHtml = renderMarkdown(changelogSource, { slugger, headingOffset: SECTION_LEVEL }).html;
    }
  }

  return {
    descriptionText: fields.description ?? '',
    textHtml: text.html,
    headings: text.headings,
    instructionsHtml: instructions.html,
    licenseHtml: license.html,
    faq,
    changelog,
    changelogHtml,
    latest,
  };
}

/** `release-1.2.0`: readable, stable across edits of other releases, unique on the page. */
function releaseId(version: string, taken: Set<string>): string {
  const base = `release-${version.toLowerCase().replace(/[^a-z0-9._-]+/g, '-')}`;
  let id = base;
  for (let n = 1; taken.has(id); n++) id = `${base}-${n}`;
  taken.add(id);
  return id;
}

function renderRelease(r: ChangelogRelease, references: LinkReferences, slugger: GithubSlugger, ids: Set<string>): RenderedRelease {
  const render = (src: string) => renderMarkdown(src, { slugger, headingOffset: SECTION_LEVEL + 2, references }).html;
  return {
    version: r.version,
    date: r.date,
    unreleased: r.unreleased,
    yanked: r.yanked,
    breaking: r.breaking,
    id: releaseId(r.version, ids),
    summaryHtml: render(r.summary),
    sections: r.sections.map((s) => ({
      type: s.type,
      known: s.known,
      itemsHtml: s.items.map((item) => unwrapParagraph(render(item.markdown))),
    })),
  };
}

/** A one-paragraph item renders as its inline content, so list items stay tight. */
function unwrapParagraph(html: string): string {
  const m = /^<p>([\s\S]*)<\/p>\n?$/.exec(html);
  return m?.[1] !== undefined && !m[1].includes('<p>') ? m[1] : html;
}

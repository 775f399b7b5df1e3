// Markdown for vendor-supplied fields (text, faq, changelog, instructions, license).
// Parsing for validation runs with html:false (structure only). Rendering for pages runs with
// html:true, as vendors copy READMEs with <details>, <kbd> or sized images, and everything it
// produces goes through a strict sanitize-html allowlist (NOTES "Changelog and Markdown",
// docs/vendors.md#markdown-changelog-and-faq-on-the-page): no scripts, event handlers, script/data
// URLs, iframes, forms or style attributes.
// Heading ids come from github-slugger so anchors match what vendors see on GitHub.
import { randomBytes } from 'node:crypto';
import GithubSlugger, { slug } from 'github-slugger';
import MarkdownIt from 'markdown-it';
import sanitizeHtml from 'sanitize-html';
import { inlineText, normalizeNewlines, type Token } from './tokens.js';

export interface Heading {
  level: number;
  text: string;
  id: string;
}

export interface RenderOptions {
  /**
   * Shared slugger so several documents on one page (text, FAQ, changelog) get unique ids
   * between them; pre-seed it with ids the page itself uses. A fresh one per call otherwise.
   */
  slugger?: GithubSlugger;
  /** Levels to add to every heading (capped at h6), so vendor "# Title" fits under the page's own h1/h2. */
  headingOffset?: number;
  /** Definitions from the whole document this fragment was cut from (linkReferences). */
  references?: LinkReferences;
}

interface RenderEnv {
  references?: Record<string, { href: string; title: string }>;
  slugger?: GithubSlugger;
  headings?: Heading[];
  headingOffset?: number;
}

/**
 * Generated heading ids travel to the sanitizer under this per-process attribute name, which
 * vendor HTML cannot guess: only they become `id`s, so a raw <h2 id="install"> can neither clash
 * with the page's own anchors nor shadow an element the page's script looks up.
 */
const OWN_ID = `data-pier-${randomBytes(6).toString('hex')}`;

function ownHeadingId(tagName: string, attribs: sanitizeHtml.Attributes): sanitizeHtml.Tag {
  const { id: _vendorId, [OWN_ID]: own, ...rest } = attribs;
  return { tagName, attribs: own ? { ...rest, id: own } : rest };
}

/** The next unique anchor id for a heading's text. */
export function headingId(slugger: GithubSlugger, text: string): string {
  // A heading of only punctuation/emoji slugs to "", which would be no anchor at all.
  return slugger.slug(slug(text) === '' ? 'section' : text);
}

/**
 * Core rule: give every heading a github-slugger id (in attribute `attr`) and record it for
 * the page's sidebar.
 */
const headingIds = (attr: string) => (md: MarkdownIt): void => {
  md.core.ruler.push('pier_heading_ids', (state) => {
    const env = state.env as RenderEnv;
    const slugger = env.slugger ?? new GithubSlugger();
    const tokens = state.tokens;
    for (let i = 0; i < tokens.length; i++) {
      const open = tokens[i];
      if (open?.type !== 'heading_open') continue;
      const text = inlineText(tokens[i + 1]?.children ?? null);
      const id = headingId(slugger, text);
      open.attrSet(attr, id);
      const level = Math.min(6, Number(open.tag.slice(1)) + (env.headingOffset ?? 0));
      const close = tokens[i + 2];
      open.tag = `h${level}`;
      if (close?.type === 'heading_close') close.tag = open.tag;
      env.headings?.push({ level, text, id });
    }
  });
};

export function createMarkdown(): MarkdownIt {
  const md = new MarkdownIt({ html: false, linkify: true, typographer: false });
  md.use(headingIds('id'));
  return md;
}

/** True for an absolute http(s) link: it leaves the site, so it gets rel="nofollow ugc noopener". */
function isExternal(href: string | undefined): boolean {
  return /^https?:/i.test(href ?? '');
}

const SANITIZE: sanitizeHtml.IOptions = {
  allowedTags: [
    'p', 'br', 'hr', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'blockquote', 'ul', 'ol', 'li',
    'pre', 'code', 'em', 'strong', 's', 'del', 'a', 'img',
    'table', 'thead', 'tbody', 'tr', 'th', 'td', 'caption',
    // Harmless inline and block HTML that vendors paste from READMEs.
    'details', 'summary', 'kbd', 'sup', 'sub', 'b', 'i', 'u', 'small', 'mark', 'ins', 'abbr',
    'dl', 'dt', 'dd', 'div', 'span', 'figure', 'figcaption',
  ],
  // Everything else (script, style, iframe, object, form, input, svg, math…) goes with its content.
  nonTextTags: ['script', 'style', 'textarea', 'option', 'noscript', 'title', 'iframe', 'object', 'template', 'xmp', 'noembed', 'noframes', 'svg', 'math'],
  allowedAttributes: {
    a: ['href', 'title', 'rel'],
    img: ['src', 'alt', 'title', 'width', 'height', 'loading'],
    abbr: ['title'],
    details: ['open'],
    h1: ['id'], h2: ['id'], h3: ['id'], h4: ['id'], h5: ['id'], h6: ['id'],
    ol: ['start'],
    code: ['class'],
    th: ['style'],
    td: ['style'],
  },
  // Fence info strings become "language-xxx" classes; table alignment is an inline style.
  allowedClasses: { code: ['language-*'] },
  allowedStyles: {
    th: { 'text-align': [/^(?:left|right|center)$/] },
    td: { 'text-align': [/^(?:left|right|center)$/] },
  },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: ['http', 'https'] },
  allowProtocolRelative: false,
  transformTags: {
    // Vendor links are user content (rel "ugc"): no ranking credit, no window.opener.
    a: (tagName, attribs) => {
      const { rel: _rel, ...rest } = attribs;
      return { tagName, attribs: isExternal(rest.href) || rest.href?.startsWith('mailto:') ? { ...rest, rel: 'nofollow ugc noopener' } : rest };
    },
    img: (tagName, attribs) => ({ tagName, attribs: { ...attribs, loading: 'lazy' } }),
    h1: ownHeadingId,
    h2: ownHeadingId,
    h3: ownHeadingId,
    h4: ownHeadingId,
    h5: ownHeadingId,
    h6: ownHeadingId,
  },
};

const shared = createMarkdown();
/** The page renderer: raw HTML on, then the allowlist above decides what survives. */
const renderer = new MarkdownIt({ html: true, linkify: true, typographer: false }).use(headingIds(OWN_ID));

let lastParsed: { text: string; tokens: Token[] } | null = null;

/** Characters handed to the page renderer so far: the work a page render does (tests check it grows linearly). */
let renderedChars = 0;
export function renderedCharacters(): number {
  return renderedChars;
}

/**
 * The block token stream of `text` (comments already stripped). The PATCH validator reads one
 * document several times (changelog or FAQ structure, then its links), so the last parse is
 * kept. Callers only read the tokens.
 */
export function parseMarkdown(text: string): Token[] {
  if (lastParsed?.text === text) return lastParsed.tokens;
  const tokens = shared.parse(text, {});
  lastParsed = { text, tokens };
  return tokens;
}

/**
 * Renders vendor Markdown to safe HTML and lists its headings (for sidebar anchors).
 * HTML comments are removed first, as a vendor expects them hidden (GitHub does the same).
 */
export function renderMarkdown(
  src: string,
  options: RenderOptions = {},
): { html: string; headings: Heading[] } {
  const env: RenderEnv = { slugger: options.slugger ?? new GithubSlugger(), headings: [], headingOffset: options.headingOffset ?? 0 };
  // A child of the shared table: definitions inside the fragment are added to the child only
  // (markdown-it keeps the first definition of a label, and looks labels up through the chain).
  if (options.references) env.references = Object.create(options.references) as Record<string, { href: string; title: string }>;
  const text = stripHtmlComments(src);
  renderedChars += text.length;
  const raw = renderer.render(text, env);
  return { html: sanitizeHtml(raw, SANITIZE), headings: env.headings ?? [] };
}

/** True for http(s) URLs with a host and for mailto: — the only links the spec accepts. */
function isAbsoluteUrl(href: string): boolean {
  try {
    const url = new URL(href);
    if (url.protocol === 'mailto:') return true;
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.host !== '';
  } catch {
    return false;
  }
}

/**
 * Link and image targets that are not absolute http(s)/mailto URLs and not pure "#fragment"
 * anchors. The spec says links must be absolute (no path rewriting), so the PATCH validator
 * reports these with their 1-based line.
 */
export function findRelativeLinks(src: string): { line: number; href: string }[] {
  const found: { line: number; href: string }[] = [];
  let blockLine = 0;
  for (const token of parseMarkdown(stripHtmlComments(src))) {
    // Table cells carry no map; the row's map (seen just before) is the right line.
    if (token.map) blockLine = token.map[0];
    if (token.type !== 'inline' || !token.children) continue;
    const lastLine = token.map ? token.map[1] - 1 : blockLine;
    collectLinks(token.children, blockLine, lastLine, found);
  }
  return found;
}

function collectLinks(
  children: readonly Token[],
  firstLine: number,
  lastLine: number,
  found: { line: number; href: string }[],
): void {
  // Each soft/hard break inside a block is one source newline, so counting them gives the
  // link's own line within a multi-line paragraph.
  let offset = 0;
  for (const child of children) {
    if (child.type === 'softbreak' || child.type === 'hardbreak') offset++;
    const target =
      child.type === 'link_open' ? child.attrGet('href') : child.type === 'image' ? child.attrGet('src') : null;
    if (target === null || target.startsWith('#') || isAbsoluteUrl(target)) continue;
    found.push({ line: Math.min(firstLine + offset, lastLine) + 1, href: target });
  }
}

const codeFinder = new MarkdownIt({ html: true });

/**
 * Removes HTML comments but keeps every newline, so line numbers reported afterwards still
 * point into the vendor's original text. Comments inside fenced or indented code blocks are
 * code, not comments, and stay. An unterminated "<!--" hides the rest of the document, as it
 * would on GitHub (CommonMark HTML block type 2 runs to the end).
 */
export function stripHtmlComments(src: string): string {
  const text = normalizeNewlines(src);
  if (!text.includes('<!--')) return text;
  // Parse with html:true so a fence written inside a comment is not mistaken for code.
  const codeLines = new Set<number>();
  for (const token of codeFinder.parse(text, {})) {
    if ((token.type === 'fence' || token.type === 'code_block') && token.map) {
      for (let l = token.map[0]; l < token.map[1]; l++) codeLines.add(l);
    }
  }
  let out = '';
  let pos = 0;
  let line = 0;
  for (;;) {
    const start = text.indexOf('<!--', pos);
    if (start === -1) break;
    line += countNewlines(text, pos, start);
    if (codeLines.has(line)) {
      out += text.slice(pos, start + 4);
      pos = start + 4;
      continue;
    }
    // From start + 2 so the empty comments "<!-->" and "<!--->" close where HTML closes them.
    const close = text.indexOf('-->', start + 2);
    const end = close === -1 ? text.length : close + 3;
    const removedNewlines = countNewlines(text, start, end);
    out += text.slice(pos, start) + '\n'.repeat(removedNewlines);
    line += removedNewlines;
    pos = end;
  }
  return out + text.slice(pos);
}

function countNewlines(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = text.indexOf('\n', from); i !== -1 && i < to; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** Link reference definitions by normalised label, as markdown-it keeps them in its env. */
export type LinkReferences = Readonly<Record<string, { href: string; title: string }>>;

/**
 * The document's link reference definitions ("[label]: url"). The changelog and FAQ hand out
 * fragments (items, answers) that may use "[#123]"-style references defined once at the
 * bottom; each fragment is rendered with these (RenderOptions.references) so they still
 * resolve. Handed over as markdown-it's own lookup table rather than as Markdown appended to
 * every fragment, which would parse every definition once per fragment: n items with n
 * definitions would cost n² (a 2,000-item changelog took 20 s).
 */
export function linkReferences(src: string): LinkReferences {
  const env: { references?: Record<string, { href: string; title: string }> } = {};
  shared.parse(stripHtmlComments(src), env);
  // No prototype: a label can never hit an inherited property.
  return Object.assign(Object.create(null) as Record<string, { href: string; title: string }>, env.references ?? {});
}

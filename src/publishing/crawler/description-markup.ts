/**
 * The markup inside a node description's `intro`, `option`, `port`, `view` and `tab` elements,
 * as HTML. KNIME's description schemas allow a small HTML-like vocabulary there (`p`, lists,
 * `a href`, `b`, `i`, `u`, `tt`, `pre`, `br`, `sup`, `sub`, `h3`, tables); the node page shows it
 * as the node's own dialog does. Whitespace inside it is XML layout, not line breaks, so runs of
 * whitespace collapse to one space everywhere but inside `pre`.
 *
 * Only that vocabulary is written out (anything else contributes its text), attribute values are
 * never copied except a link's checked `href`, and text is escaped: the output is a safe subset by
 * construction. The page still runs it through the sanitizer (content/node-markup.ts).
 */
import type { XmlElement } from './xml.js';

/** Description element → the HTML element written for it. */
const TAGS: Record<string, string> = {
  p: 'p',
  br: 'br',
  ul: 'ul',
  ol: 'ol',
  li: 'li',
  a: 'a',
  b: 'b',
  strong: 'strong',
  i: 'i',
  em: 'em',
  u: 'u',
  tt: 'code',
  code: 'code',
  pre: 'pre',
  sup: 'sup',
  sub: 'sub',
  // The page's own headings take h1–h3; a description's headings sit under them.
  h1: 'h4',
  h2: 'h4',
  h3: 'h4',
  h4: 'h5',
  h5: 'h5',
  h6: 'h5',
  table: 'table',
  thead: 'thead',
  tbody: 'tbody',
  tr: 'tr',
  th: 'th',
  td: 'td',
  hr: 'hr',
  dl: 'dl',
  dt: 'dt',
  dd: 'dd',
};
const VOID = new Set(['br', 'hr']);
/** HTML ends an open `p` at any of these: a `p` holding one is written as a `div` to keep its shape. */
const ENDS_PARAGRAPH = new Set(['p', 'ul', 'ol', 'pre', 'table', 'h4', 'h5', 'hr', 'dl']);
const MAX_DEPTH = 64;

const escapeText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const escapeAttr = (s: string) => escapeText(s).replace(/"/g, '&quot;');

/** An absolute http(s) or mailto link, or null: relative links point into the jar, not the web. */
function safeHref(href: string | undefined): string | null {
  if (!href) return null;
  const h = href.trim();
  if (!/^(https?:\/\/|mailto:)/i.test(h)) return null;
  try {
    return new URL(h).href;
  } catch {
    return null;
  }
}

/** Whether a block that ends a paragraph is written somewhere inside `el` (bounded by the depth cap). */
function holdsBlock(el: XmlElement, depth: number): boolean {
  return el.children.some((c) => {
    if (typeof c === 'string' || depth + 1 >= MAX_DEPTH) return false;
    const tag = TAGS[c.name.toLowerCase()];
    return (tag !== undefined && ENDS_PARAGRAPH.has(tag)) || holdsBlock(c, depth + 1);
  });
}

/** The element's content as HTML (the element's own tag is not included). */
export function markupOf(el: XmlElement | undefined): string {
  if (!el) return '';
  const out: string[] = [];
  const walk = (e: XmlElement, inPre: boolean, depth: number) => {
    for (const c of e.children) {
      if (typeof c === 'string') {
        out.push(escapeText(inPre ? c : c.replace(/\s+/g, ' ')));
        continue;
      }
      const tag = depth < MAX_DEPTH ? TAGS[c.name.toLowerCase()] : undefined;
      if (!tag) {
        walk(c, inPre, depth + 1);
        continue;
      }
      if (VOID.has(tag)) {
        // A `<br>` with content (the XML allows it) keeps the content after the break.
        out.push(`<${tag} />`);
        walk(c, inPre, depth + 1);
        continue;
      }
      const href = tag === 'a' ? safeHref(c.attrs.href) : null;
      if (tag === 'a' && !href) {
        walk(c, inPre, depth + 1);
        continue;
      }
      const written = tag === 'p' && holdsBlock(c, depth) ? 'div' : tag;
      out.push(href ? `<a href="${escapeAttr(href)}">` : `<${written}>`);
      walk(c, inPre || tag === 'pre', depth + 1);
      out.push(`</${written}>`);
    }
  };
  walk(el, false, 0);
  return out.join('').trim();
}

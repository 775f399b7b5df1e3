// Product icons arrive as SVG markup (spec "Product": icon) and end up on public pages, so the
// markup is rebuilt from an allowlist instead of being filtered: anything we do not know is
// left out. DOCTYPE/ENTITY are refused before parsing (billion laughs, XXE) and entities are
// never expanded by the parser; we decode only the predefined ones ourselves.
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { ATTRIBUTES, ELEMENTS, NON_DRAWING, PRESENTATION, STYLE_FUNCTIONS, TEXT_ELEMENTS, UNWRAP } from './svg-allowlist.js';

const SVG_NS = 'http://www.w3.org/2000/svg';

export type SvgResult = { svg: string } | { error: string; line?: number };

type XmlNode = Record<string, unknown>;

const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  processEntities: false,
  htmlEntities: false,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  cdataPropName: '#cdata',
  ignoreDeclaration: true,
  ignorePiTags: true,
});

export function sanitizeSvg(markup: string): SvgResult {
  const xml = markup.replace(/^\uFEFF/, '');
  const declaration = /<!(?:DOCTYPE|ENTITY)/i.exec(xml);
  if (declaration) {
    return { error: 'DOCTYPE and ENTITY declarations are not allowed in SVG', line: lineAt(xml, declaration.index) };
  }
  const valid = XMLValidator.validate(xml);
  if (valid !== true) return { error: `the SVG is not well-formed XML: ${valid.err.msg}`, line: valid.err.line };
  let nodes: XmlNode[];
  try {
    nodes = parser.parse(xml) as XmlNode[];
  } catch (e) {
    // The parser refuses what the validator lets through (e.g. nesting deeper than 100).
    return { error: `the SVG could not be read: ${e instanceof Error ? e.message : String(e)}` };
  }
  const roots = nodes.filter((n) => tagOf(n) !== null);
  const root = roots[0];
  if (roots.length !== 1 || !root) return { error: 'the SVG must have exactly one root element' };
  if (tagOf(root) !== 'svg') return { error: `the root element must be <svg>, found <${tagOf(root)}>` };
  const children = renderChildren(root, 'svg');
  if (!children.some((c) => c.tag !== '#text' && !NON_DRAWING.has(c.tag))) {
    return { error: 'the SVG draws nothing once scripts, links and unsupported elements are removed' };
  }
  const attrs = renderAttributes(root);
  return { svg: `<svg xmlns="${SVG_NS}"${attrs}>${children.map((c) => c.markup).join('')}</svg>` };
}

interface Piece {
  tag: string;
  markup: string;
}

function tagOf(node: XmlNode): string | null {
  const key = Object.keys(node).find((k) => k !== ':@');
  return key === undefined || key.startsWith('#') ? null : key;
}

function renderChildren(node: XmlNode, tag: string): Piece[] {
  const children = node[tag];
  if (!Array.isArray(children)) return [];
  const pieces: Piece[] = [];
  for (const child of children as XmlNode[]) {
    const childTag = tagOf(child);
    if (childTag === null) {
      if (TEXT_ELEMENTS.has(tag)) pieces.push({ tag: '#text', markup: escapeText(textOf(child)) });
    } else if (UNWRAP.has(childTag)) {
      pieces.push(...renderChildren(child, childTag));
    } else if (ELEMENTS.has(childTag) && childTag !== 'svg') {
      // A nested <svg> would restart namespace handling; icons do not need it.
      const inner = renderChildren(child, childTag).map((p) => p.markup).join('');
      const open = `<${childTag}${renderAttributes(child)}`;
      pieces.push({ tag: childTag, markup: inner === '' ? `${open}/>` : `${open}>${inner}</${childTag}>` });
    }
    // Anything else (script, style, foreignObject, image, metadata, editor namespaces) is
    // dropped together with its content.
  }
  return pieces;
}

function textOf(node: XmlNode): string {
  const text = node['#text'];
  if (typeof text === 'string') return decodeEntities(text);
  // CDATA content is literal: no entity decoding.
  const cdata = node['#cdata'];
  if (Array.isArray(cdata)) return cdata.map((c: XmlNode) => (typeof c['#text'] === 'string' ? c['#text'] : '')).join('');
  return '';
}

function renderAttributes(node: XmlNode): string {
  const attrs = node[':@'];
  if (typeof attrs !== 'object' || attrs === null) return '';
  const seen = new Set<string>();
  let out = '';
  for (const [rawName, raw] of Object.entries(attrs)) {
    // SVG 2 reads plain href; renaming spares us declaring the xlink namespace.
    const name = rawName === 'xlink:href' ? 'href' : rawName;
    if (typeof raw !== 'string' || !ATTRIBUTES.has(name) || seen.has(name)) continue;
    const value = cleanValue(name, decodeEntities(raw).replace(/[\t\n\r]/g, ' '));
    if (value === null) continue;
    seen.add(name);
    out += ` ${name}="${escapeAttr(value)}"`;
  }
  return out;
}

/** The value to keep, or null to drop the attribute. */
function cleanValue(name: string, value: string): string | null {
  if (!isSafeReference(value)) return null;
  if (name === 'href') return /^#[^\s]+$/.test(value.trim()) ? value.trim() : null;
  if (name === 'style') return cleanStyle(value);
  if (PRESENTATION.has(name)) return cleanPresentation(value);
  return value;
}

/** No script or data URL and no url(…) leaving the document, however the value is spelled. */
function isSafeReference(value: string): boolean {
  // Browsers ignore control characters and spaces inside URLs ("java\tscript:").
  const compact = [...value].filter((c) => c > ' ' && c !== '\u007f').join('').toLowerCase();
  return !/(?:javascript|vbscript|data):/.test(compact) && urlsAreLocal(compact);
}

/**
 * A presentation attribute is parsed by the browser as a CSS value (SVG 2 §6.6), so CSS
 * escapes apply: `u\rl(…)` and `\75 rl(…)` are url(…), and functions such as image-set()
 * fetch too. The value is judged after CSS unescaping, and kept only when it needs neither
 * escapes nor comments (no real icon does) and calls only allowlisted functions.
 */
function cleanPresentation(value: string): string | null {
  if (value.includes('\\') || value.includes('/*')) return null;
  const css = cssUnescape(value);
  if (!isSafeReference(css)) return null;
  return cssFunctions(css).every((f) => STYLE_FUNCTIONS.has(f)) ? value : null;
}

/** CSS Syntax 3 §4.3.7 "consume an escaped code point", applied to a whole value. */
export function cssUnescape(value: string): string {
  return value.replace(/\\(?:([0-9a-fA-F]{1,6})[ \t\n\r\f]?|([\s\S])|$)/g, (_m, hex: string | undefined, ch: string | undefined) => {
    if (hex !== undefined) {
      const code = Number.parseInt(hex, 16);
      const valid = code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
      return valid ? String.fromCodePoint(code) : '\uFFFD';
    }
    // An escaped newline is dropped inside strings; elsewhere "\" + anything is that character.
    if (ch === '\n') return '';
    return ch ?? '\uFFFD';
  });
}

/** Every url(…) must point into the document ("#id"). */
function urlsAreLocal(compact: string): boolean {
  for (const m of compact.matchAll(/url\(['"]?(.?)/g)) if (m[1] !== '#') return false;
  return true;
}

/** Keeps presentation declarations with plain values; CSS escapes and at-rules drop it all. */
function cleanStyle(style: string): string | null {
  if (/[\\@{}<>]|\/\*/.test(style)) return null;
  const kept: string[] = [];
  for (const declaration of style.split(';')) {
    const colon = declaration.indexOf(':');
    if (colon === -1) continue;
    const prop = declaration.slice(0, colon).trim().toLowerCase();
    const value = declaration.slice(colon + 1).trim();
    if (!PRESENTATION.has(prop) || value === '') continue;
    if (cssFunctions(value).every((f) => STYLE_FUNCTIONS.has(f))) kept.push(`${prop}:${value}`);
  }
  return kept.length ? kept.join(';') : null;
}

/** Names before each "(" (lower case; "" for a bare parenthesis). Scans backwards from each
 * "(" so the cost stays linear whatever the input (a regex here backtracks quadratically). */
function cssFunctions(value: string): string[] {
  const names: string[] = [];
  for (let i = value.indexOf('('); i !== -1; i = value.indexOf('(', i + 1)) {
    let end = i;
    while (end > 0 && /\s/.test(value[end - 1] ?? '')) end--;
    let start = end;
    while (start > 0 && /[a-z-]/i.test(value[start - 1] ?? '')) start--;
    names.push(value.slice(start, end).toLowerCase());
  }
  return names;
}

/** Predefined XML entities and character references; anything else stays literal text. */
function decodeEntities(text: string): string {
  return text.replace(/&(#[xX][0-9a-fA-F]+|#[0-9]+|lt|gt|amp|quot|apos);/g, (whole, body: string) => {
    const named: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };
    if (!body.startsWith('#')) return named[body] ?? whole;
    const code = body[1] === 'x' || body[1] === 'X' ? Number.parseInt(body.slice(2), 16) : Number(body.slice(1));
    const valid = code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
    return valid ? String.fromCodePoint(code) : '\uFFFD';
  });
}

/** XML 1.0 "Char" production: anything else (NUL, most C0, lone surrogates) makes output unparseable. */
function isXmlChar(cp: number): boolean {
  return cp === 0x9 || cp === 0xa || cp === 0xd || (cp >= 0x20 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) || cp >= 0x10000;
}

function escapeText(text: string): string {
  let kept = '';
  // for…of walks code points, so a valid surrogate pair arrives as one character.
  for (const ch of text) if (isXmlChar(ch.codePointAt(0) ?? 0)) kept += ch;
  return kept.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function escapeAttr(text: string): string {
  return escapeText(text).replace(/"/g, '&quot;');
}

function lineAt(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

/** Identifies a raster upload (iconBase64) by its magic bytes, never by a declared type. */
export function sniffRasterImage(bytes: Uint8Array): 'png' | 'jpeg' | 'gif' | 'webp' | null {
  const starts = (sig: readonly number[], at = 0) => sig.every((b, i) => bytes[at + i] === b);
  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  if (starts([0xff, 0xd8, 0xff])) return 'jpeg';
  if (starts([0x47, 0x49, 0x46, 0x38]) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61) return 'gif';
  if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return 'webp';
  return null;
}

/**
 * The pixel size a PNG or GIF declares in its header, or null (other formats, or a size no icon
 * has): node icons are drawn at this size so 16 px artwork stays sharp instead of being scaled.
 */
export function rasterSize(bytes: Uint8Array): { width: number; height: number } | null {
  const kind = sniffRasterImage(bytes);
  let width = 0;
  let height = 0;
  if (kind === 'png' && bytes.length >= 24) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    width = view.getUint32(16);
    height = view.getUint32(20);
  } else if (kind === 'gif' && bytes.length >= 10) {
    width = bytes[6]! | (bytes[7]! << 8);
    height = bytes[8]! | (bytes[9]! << 8);
  }
  return width >= 1 && height >= 1 && width <= 512 && height <= 512 ? { width, height } : null;
}

/**
 * Safe XML for the crawler. Vendor XML is hostile input: entity declarations are refused before
 * parsing (no "billion laughs", no external entities — nothing is ever fetched for a DTD), sizes
 * are capped by the caller, and errors carry a line so the integrity report can point at them.
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';

export interface XmlElement {
  name: string;
  attrs: Record<string, string>;
  children: (XmlElement | string)[];
}

export class XmlProblem extends Error {
  constructor(
    message: string,
    readonly line?: number,
  ) {
    super(message);
    this.name = 'XmlProblem';
  }
}

const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  removeNSPrefix: true,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  // Only the five predefined entities and character references; declared ones are refused below.
  processEntities: true,
  htmlEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  commentPropName: false,
});

type Ordered = Record<string, unknown>;

function convert(items: Ordered[]): (XmlElement | string)[] {
  const out: (XmlElement | string)[] = [];
  for (const item of items) {
    for (const [key, value] of Object.entries(item)) {
      if (key === ':@') continue;
      if (key === '#text') out.push(String(value));
      else if (!key.startsWith('?') && !key.startsWith('!')) {
        const attrs = (item[':@'] ?? {}) as Record<string, string>;
        out.push({ name: key, attrs, children: convert((value as Ordered[]) ?? []) });
      }
    }
  }
  return out;
}

/**
 * Most elements a document may have. The parsed tree takes far more memory and time per element
 * than per byte: 16 MiB of `<p/>` is four million elements (about 1 GB and most of a minute),
 * while real repository metadata has a few dozen elements per installable unit.
 */
export const DEFAULT_MAX_XML_ELEMENTS = 500_000;

/** An upper bound on the elements of `text` (every `<` opens at most one), in one linear pass. */
function markupCount(text: string, stopAt: number): number {
  let n = 0;
  for (let i = text.indexOf('<'); i !== -1 && n <= stopAt; i = text.indexOf('<', i + 1)) n++;
  return n;
}

/** Parses a document and returns its root element; throws XmlProblem with a line when invalid. */
export function parseXml(input: Buffer | string, maxBytes: number, maxElements = DEFAULT_MAX_XML_ELEMENTS): XmlElement {
  const size = typeof input === 'string' ? Buffer.byteLength(input) : input.length;
  if (size > maxBytes) throw new XmlProblem(`XML document of ${size} bytes is over the limit of ${maxBytes}`);
  let text = typeof input === 'string' ? input : input.toString('utf8');
  // Half of the `<` are closing tags at most: counted before anything is built.
  if (markupCount(text, 2 * maxElements) > 2 * maxElements) throw new XmlProblem(`more than ${maxElements} XML elements`);
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const entity = /<!ENTITY/i.exec(text);
  if (entity) {
    const line = text.slice(0, entity.index).split('\n').length;
    throw new XmlProblem('entity declarations are not allowed (entity expansion and external entities)', line);
  }
  const valid = XMLValidator.validate(text);
  if (valid !== true) throw new XmlProblem(valid.err.msg, valid.err.line);
  let parsed: Ordered[];
  try {
    parsed = parser.parse(text) as Ordered[];
  } catch (e) {
    // The validator lets a few shapes through that the parser refuses (a DOCTYPE inside an element).
    throw new XmlProblem((e as Error).message);
  }
  const root = convert(parsed).find((n): n is XmlElement => typeof n !== 'string');
  if (!root) throw new XmlProblem('no root element');
  return root;
}

export const childElements = (el: XmlElement | undefined, name?: string): XmlElement[] =>
  (el?.children ?? []).filter((c): c is XmlElement => typeof c !== 'string' && (name === undefined || c.name === name));

export const child = (el: XmlElement | undefined, name: string): XmlElement | undefined => childElements(el, name)[0];

/** Every descendant named `name`, depth first. */
export function descendants(el: XmlElement, name: string): XmlElement[] {
  const out: XmlElement[] = [];
  const walk = (e: XmlElement) => {
    for (const c of childElements(e)) {
      if (c.name === name) out.push(c);
      walk(c);
    }
  };
  walk(el);
  return out;
}

const BLOCK = new Set(['p', 'br', 'li', 'ul', 'ol', 'h3', 'h4', 'pre', 'div', 'tr', 'table']);

/** The text of an element with whitespace collapsed; block elements become line breaks. */
export function textOf(el: XmlElement | undefined): string {
  if (!el) return '';
  const parts: string[] = [];
  const walk = (e: XmlElement) => {
    for (const c of e.children) {
      if (typeof c === 'string') parts.push(c);
      else {
        if (BLOCK.has(c.name)) parts.push('\n');
        walk(c);
        if (BLOCK.has(c.name)) parts.push('\n');
      }
    }
  };
  walk(el);
  return parts
    .join('')
    .split('\n')
    .map((l) => l.replace(/\s+/g, ' ').trim())
    .filter((l) => l.length > 0)
    .join('\n');
}

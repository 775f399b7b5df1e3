/**
 * The P2 repository as a P2 client reads it: `p2.index` names the factories to try, a simple
 * repository has `content.{jar,xml,xml.xz}` and `artifacts.{jar,xml,xml.xz}`, a composite has
 * `compositeContent`/`compositeArtifacts` listing children (relative or absolute), followed
 * with a depth and cycle guard. Artifact locations come from the repository's mapping rules.
 */
import xz from 'xz-decompress';
import { type FetchLimits, FetchProblem, fetchBytes, withinScope } from './fetcher.js';
import { JarProblem, openJar } from './jar.js';
import type { UnitRequirement } from './platform-range.js';
import type { ProblemList } from './problems.js';
import { child, childElements, parseXml, type XmlElement, XmlProblem } from './xml.js';

export interface RawUnit {
  id: string;
  version: string;
  properties: Map<string, string>;
  provides: { namespace: string; name: string }[];
  /** `<requires>`: what the unit needs installed with it (the label's platform range comes from these). */
  requires: UnitRequirement[];
  filter: string | null;
  license: string | null;
  copyright: string | null;
  artifacts: { classifier: string; id: string; version: string }[];
}

export interface ArtifactInfo {
  classifier: string;
  id: string;
  version: string;
  url: string;
  size: number | null;
  md5: string | null;
  sha256: string | null;
}

export interface RepositoryContents {
  units: RawUnit[];
  /** Keyed by `classifier/id/version`. */
  artifacts: Map<string, ArtifactInfo>;
  /** Whether the metadata of the top repository could be read at all. */
  readable: boolean;
}

export interface ReadLimits extends FetchLimits {
  maxXmlBytes: number;
  /** Most elements in one metadata file (the parsed tree grows with elements, not bytes). */
  maxXmlElements: number;
  maxCompositeDepth: number;
  maxChildren: number;
}

export const artifactKey = (classifier: string, id: string, version: string) => `${classifier}/${id}/${version}`;

/** Which files each p2.index factory name stands for, in the order P2 tries them. */
const FACTORY_FILES: Record<string, string[]> = {
  'content.xml': ['content.jar', 'content.xml'],
  'content.xml.xz': ['content.xml.xz'],
  'compositeContent.xml': ['compositeContent.jar', 'compositeContent.xml'],
  'artifacts.xml': ['artifacts.jar', 'artifacts.xml'],
  'artifacts.xml.xz': ['artifacts.xml.xz'],
  'compositeArtifacts.xml': ['compositeArtifacts.jar', 'compositeArtifacts.xml'],
};
const DEFAULT_ORDER = {
  metadata: ['content.xml.xz', 'content.xml', 'compositeContent.xml'],
  artifact: ['artifacts.xml.xz', 'artifacts.xml', 'compositeArtifacts.xml'],
};

/** `p2.index` (a Java properties file): the factory order per kind; `!` ends the list. */
export function parseP2Index(text: string): { metadata?: string[]; artifact?: string[] } {
  const out: { metadata?: string[]; artifact?: string[] } = {};
  for (const raw of text.replace(/\\\r?\n\s*/g, '').split(/\r?\n/)) {
    const m = /^\s*(metadata|artifact)\.repository\.factory\.order\s*[=:]\s*(.*)$/.exec(raw);
    if (!m) continue;
    const names: string[] = [];
    for (const n of m[2]!.split(',').map((s) => s.trim().replace(/^\\/, ''))) {
      if (n === '!') break;
      if (n) names.push(n);
    }
    out[m[1] as 'metadata' | 'artifact'] = names;
  }
  return out;
}

const mib = (n: number) => `${Math.round((n / 1024 / 1024) * 10) / 10} MiB`;

async function unxz(file: string, bytes: Buffer, maxBytes: number): Promise<Buffer> {
  const stream = new xz.XzReadableStream(new Blob([new Uint8Array(bytes)]).stream() as ReadableStream<Uint8Array>);
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const c of stream as unknown as AsyncIterable<Uint8Array>) {
    total += c.length;
    if (total > maxBytes) {
      throw new XmlProblem(`${file} expands beyond ${mib(maxBytes)}`);
    }
    chunks.push(Buffer.from(c));
  }
  return Buffer.concat(chunks, total);
}

/** Bytes of one metadata file, unpacked: the XML inside a `.jar`, or the `.xz` decompressed. */
async function loadXmlFile(url: string, file: string, limits: ReadLimits): Promise<Buffer | null> {
  const bytes = await fetchBytes(url, limits, file.endsWith('.xml') ? limits.maxXmlBytes : limits.maxBytes);
  if (!bytes) return null;
  if (file.endsWith('.xz')) return unxz(file, bytes, limits.maxXmlBytes);
  if (file.endsWith('.jar')) {
    const jar = await openJar(bytes, { maxEntryBytes: limits.maxXmlBytes, maxTotalBytes: limits.maxXmlBytes, maxRatio: 1000 });
    try {
      const inner = file.replace(/\.jar$/, '.xml');
      const xml = await jar.read(inner);
      if (!xml) throw new JarProblem(`${file} holds no ${inner}`);
      return xml;
    } finally {
      jar.close();
    }
  }
  return bytes;
}

interface Loaded {
  file: string;
  root: XmlElement;
}

/** Tries the factories in order; the first file that exists wins (a broken one is reported and ends the search). */
async function loadFirst(base: string, factories: string[], problems: ProblemList, limits: ReadLimits): Promise<Loaded | null> {
  for (const factory of factories) {
    for (const file of FACTORY_FILES[factory] ?? []) {
      const url = new URL(file, base).href;
      try {
        const bytes = await loadXmlFile(url, file, limits);
        if (!bytes) continue;
        try {
          return { file, root: parseXml(bytes, limits.maxXmlBytes, limits.maxXmlElements) };
        } catch (e) {
          if (e instanceof XmlProblem) throw new XmlProblem(`${file.replace(/\.xml\.xz$|\.jar$/, '.xml')}: ${e.message}`, e.line);
          throw e;
        }
      } catch (e) {
        const code = e instanceof XmlProblem ? 'xml_error' : e instanceof JarProblem ? 'jar_unreadable' : 'fetch_failed';
        problems.add({
          severity: 'error',
          code,
          message: (e as Error).message,
          where: url,
          ...(e instanceof XmlProblem && e.line ? { line: e.line } : {}),
        });
        return null;
      }
    }
  }
  return null;
}

const props = (el: XmlElement | undefined) =>
  new Map(childElements(child(el, 'properties'), 'property').map((p) => [p.attrs.name ?? '', p.attrs.value ?? ''] as const));

function elementText(el: XmlElement | undefined): string | null {
  return el ? el.children.filter((c): c is string => typeof c === 'string').join('').trim() : null;
}

function readUnits(root: XmlElement): RawUnit[] {
  return childElements(child(root, 'units'), 'unit').map((u) => ({
    id: u.attrs.id ?? '',
    version: u.attrs.version ?? '0.0.0',
    properties: props(u),
    provides: childElements(child(u, 'provides'), 'provided').map((p) => ({ namespace: p.attrs.namespace ?? '', name: p.attrs.name ?? '' })),
    requires: readRequires(u),
    filter: elementText(child(u, 'filter')),
    license: elementText(child(child(u, 'licenses'), 'license')),
    copyright: elementText(child(u, 'copyright')),
    artifacts: childElements(child(u, 'artifacts'), 'artifact').map((a) => ({
      classifier: a.attrs.classifier ?? '',
      id: a.attrs.id ?? '',
      version: a.attrs.version ?? '',
    })),
  }));
}

/**
 * A unit's `<requires>`: `<required namespace name range>` (optional and greedy attributes, an
 * optional `<filter>` child), as P2 publishers write for bundles and features. The newer
 * `<requiredProperties namespace match>` form is kept with its match as the name and no range:
 * real metadata uses it only for the execution environment (`osgi.ee`), never for a platform unit.
 */
function readRequires(u: XmlElement): UnitRequirement[] {
  const requires = child(u, 'requires');
  const plain = childElements(requires, 'required').map((r) => ({
    namespace: r.attrs.namespace ?? '',
    name: r.attrs.name ?? '',
    range: r.attrs.range ?? '0.0.0',
    optional: r.attrs.optional === 'true',
    greedy: r.attrs.greedy !== 'false',
    filter: elementText(child(r, 'filter')) || null,
  }));
  const properties = childElements(requires, 'requiredProperties').map((r) => ({
    namespace: r.attrs.namespace ?? '',
    name: r.attrs.match ?? '',
    range: '',
    optional: r.attrs.optional === 'true',
    greedy: r.attrs.greedy !== 'false',
    filter: elementText(child(r, 'filter')) || null,
  }));
  return [...plain, ...properties];
}

/** `(& (classifier=osgi.bundle) (format=packed))` → pairs; enough for the rules build tools write. */
function filterPairs(filter: string): [string, string][] {
  return [...filter.matchAll(/\(\s*([\w.]+)\s*=\s*([^()]*?)\s*\)/g)].map((m) => [m[1]!, m[2]!]);
}

function readArtifacts(root: XmlElement, base: string, into: Map<string, ArtifactInfo>): void {
  const rules = childElements(child(root, 'mappings'), 'rule').map((r) => ({ pairs: filterPairs(r.attrs.filter ?? ''), output: r.attrs.output ?? '' }));
  const repoUrl = base.replace(/\/$/, '');
  for (const a of childElements(child(root, 'artifacts'), 'artifact')) {
    const p = props(a);
    if (p.has('format')) continue; // packed (pack200) copies: P2 prefers the canonical one
    const fields: Record<string, string> = { classifier: a.attrs.classifier ?? '', id: a.attrs.id ?? '', version: a.attrs.version ?? '' };
    const rule = rules.find((r) => r.pairs.every(([k, v]) => (k === 'format' ? false : fields[k] === v)));
    if (!rule) continue;
    const url = rule.output.replace(/\$\{(\w+)\}/g, (_m, k: string) => (k === 'repoUrl' ? repoUrl : (fields[k] ?? '')));
    const num = (k: string) => (p.has(k) && /^\d+$/.test(p.get(k)!) ? Number(p.get(k)) : null);
    into.set(artifactKey(fields.classifier!, fields.id!, fields.version!), {
      classifier: fields.classifier!,
      id: fields.id!,
      version: fields.version!,
      url,
      size: num('download.size'),
      md5: p.get('download.md5')?.toLowerCase() ?? null,
      sha256: p.get('download.checksum.sha-256')?.toLowerCase() ?? null,
    });
  }
}

/**
 * Children of a composite repository, resolved against its URL. A child outside the crawl's
 * scope (the product's own folder) is refused with a problem naming it: it would index another
 * product's nodes as this one's.
 */
function compositeChildren(root: XmlElement, base: string, limits: ReadLimits, problems: ProblemList): string[] {
  return childElements(child(root, 'children'), 'child')
    .slice(0, limits.maxChildren)
    .flatMap((c) => {
      const loc = c.attrs.location ?? '';
      let url: string;
      try {
        url = new URL(loc, base).href;
      } catch {
        problems.add({ severity: 'error', code: 'composite_child_refused', message: `composite child "${loc}" is not a valid URL`, where: base });
        return [];
      }
      if (!url.endsWith('/')) url = `${url}/`;
      if (limits.scope !== undefined && !withinScope(url, limits.scope)) {
        problems.add({
          severity: 'error',
          code: 'composite_child_refused',
          message: `composite child "${loc}" (${url}) is outside this product's folder ${limits.scope}: not read`,
          where: base,
        });
        return [];
      }
      return [url];
    });
}

/** Reads the repository at `url` (ending in `/`), following composites. */
export async function readRepository(url: string, problems: ProblemList, limits: ReadLimits): Promise<RepositoryContents> {
  const units: RawUnit[] = [];
  const artifacts = new Map<string, ArtifactInfo>();
  const seen = new Set<string>();
  let readable = false;

  async function visit(base: string, depth: number, kind: 'metadata' | 'artifact', path: string[]): Promise<boolean> {
    if (path.includes(base)) {
      problems.add({ severity: 'error', code: 'composite_cycle', message: `composite repository cycle: ${[...path, base].join(' → ')}`, where: base });
      return false;
    }
    if (depth > limits.maxCompositeDepth) {
      problems.add({ severity: 'error', code: 'composite_too_deep', message: `composite repositories nested deeper than ${limits.maxCompositeDepth}`, where: base });
      return false;
    }
    const seenKey = `${kind} ${base}`;
    if (seen.has(seenKey)) return true; // a diamond: the same child twice is read once, as P2 does
    seen.add(seenKey);
    let order = DEFAULT_ORDER[kind];
    try {
      const index = await fetchBytes(new URL('p2.index', base).href, limits, 64 * 1024);
      if (index) order = parseP2Index(index.toString('utf8'))[kind] ?? order;
    } catch (e) {
      problems.add({ severity: 'warning', code: 'fetch_failed', message: (e as Error).message, where: new URL('p2.index', base).href });
    }
    const loaded = await loadFirst(base, order, problems, limits);
    if (!loaded) return false;
    if (loaded.file.startsWith('composite')) {
      let any = false;
      for (const c of compositeChildren(loaded.root, base, limits, problems)) {
        if (await visit(c, depth + 1, kind, [...path, base])) any = true;
      }
      return any;
    }
    if (kind === 'metadata') {
      const read = readUnits(loaded.root);
      // Metadata that parses but lists nothing installs nothing: say so instead of a clean report.
      if (read.length === 0) problems.add({ severity: 'error', code: 'metadata_empty', message: `${loaded.file} lists no installable units`, where: new URL(loaded.file, base).href });
      units.push(...read);
    }
    else readArtifacts(loaded.root, base, artifacts);
    return true;
  }

  try {
    readable = await visit(url, 0, 'metadata', []);
    await visit(url, 0, 'artifact', []);
  } catch (e) {
    if (!(e instanceof FetchProblem)) throw e;
    problems.add({ severity: 'error', code: 'fetch_failed', message: e.message, where: e.url });
  }
  return { units, artifacts, readable };
}

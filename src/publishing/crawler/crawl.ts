/**
 * One crawl of one update-site URL: the repository as P2 reads it, every installable unit, and
 * the nodes of every bundle that can hold them, with an integrity report. Never throws for
 * anything the site contains: every defect becomes a problem in the result.
 */
import { createHash } from 'node:crypto';
import path from 'node:path/posix';
import { FetchProblem, fetchBytes, remoteSize } from './fetcher.js';
import { DEFAULT_JAR_LIMITS, type Jar, type JarLimits, JarProblem, openJar } from './jar.js';
import type { NodeDescription } from '../model/nodes.js';
import { readNodeDescription } from './node-description.js';
import { type ArtifactInfo, artifactKey, type ReadLimits, readRepository } from './p2.js';
import {
  categoryFullPath,
  type DeclaredCategory,
  normalizePath,
  readPluginXml,
  resolveCategoryPath,
} from './plugin-xml.js';
import { KNIME_CATEGORIES, type PlatformCategory } from '../../infra/platform-categories.js';
import { type CrawlProblem, ProblemList } from './problems.js';
import { readKnimeYml, readPythonModule } from './python-extension.js';
import { describePlatformFilter, unionPlatforms } from './platform-filter.js';
import { DEFAULT_CORE_PREFIXES, platformRange } from './platform-range.js';
import { describeUnit, type InstallableUnit, mayHoldNodes } from './units.js';
import { DEFAULT_MAX_XML_ELEMENTS, parseXml, XmlProblem } from './xml.js';

export interface CrawlLimits extends ReadLimits {
  jar: JarLimits;
  /** Largest jar downloaded. */
  maxJarBytes: number;
  maxDescriptionBytes: number;
  maxIconBytes: number;
  /** Bundles read at once. */
  concurrency: number;
  /** Requests one crawl may make in all (composites of composites multiply quickly). */
  maxRequests: number;
  /** Characters of pure-Python module source one crawl reads in all (each is parsed once). */
  maxPythonCharacters: number;
  /**
   * Characters of everything one crawl hands to the serving process (node descriptions, icons,
   * units, problems); more ends the crawl as fatal `crawl_result_too_large` (result.ts), so what
   * the serving loop copies, checks and stores stays bounded.
   */
  maxResultBytes: number;
}

export const DEFAULT_CRAWL_LIMITS: CrawlLimits = {
  timeoutMs: 30_000,
  maxBytes: 256 * 1024 * 1024,
  // A vendor's own repository metadata is a few MB at most; parsed XML takes ~60x its size
  // in memory, and crawls run in the serving process.
  maxXmlBytes: 16 * 1024 * 1024,
  maxXmlElements: DEFAULT_MAX_XML_ELEMENTS,
  maxCompositeDepth: 5,
  maxChildren: 100,
  jar: DEFAULT_JAR_LIMITS,
  maxJarBytes: 256 * 1024 * 1024,
  maxDescriptionBytes: 1024 * 1024,
  maxIconBytes: 256 * 1024,
  concurrency: 4,
  maxRequests: 10_000,
  // Two modules at the 4 MiB per-module limit: far above real extensions (tens of KB), and it
  // bounds what one vendor's crawl can spend in the parser, whatever its jars repeat.
  maxPythonCharacters: 8 * 1024 * 1024,
  // Real extensions index a few MiB (hundreds of nodes of 5-20 KB of description each).
  maxResultBytes: 32 * 1024 * 1024,
};

export interface CrawledNode {
  factoryClass: string;
  bundle: string;
  bundleVersion: string;
  categoryPath: string;
  /** Named path, one name per segment, resolved across bundles. */
  categoryNames: string[];
  after: string | null;
  deprecated: boolean;
  hidden: boolean;
  description: NodeDescription | null;
  icon: { contentType: string; base64: string } | null;
  /** Platforms whose users get the node (from the holding plug-ins' filters); null: every platform. */
  platforms: string[] | null;
}

export interface CrawlSummary {
  units: number;
  features: number;
  bundles: number;
  categories: number;
  nodes: number;
  nodeSets: number;
  problems: number;
  fatal: boolean;
}

export interface CrawlResult {
  url: string;
  units: InstallableUnit[];
  nodes: CrawledNode[];
  categories: (DeclaredCategory & { fullPath: string })[];
  nodeSets: { bundle: string; factoryClass: string }[];
  problems: CrawlProblem[];
  summary: CrawlSummary;
  /** Platform releases the label installs into, OSGi notation (platform-range.ts); null: none found. */
  platformRange: string | null;
}

const ICON_TYPES: Record<string, string> = { '.png': 'image/png', '.gif': 'image/gif', '.svg': 'image/svg+xml', '.jpg': 'image/jpeg' };
const hex = (algo: string, b: Buffer) => createHash(algo).update(b).digest('hex');

/** Runs `fn` over `items` with at most `n` at once. */
async function pool<T>(items: T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/**
 * `scope` (a URL prefix ending in `/`, the product's folder on the download host) confines every
 * fetch of the crawl, composite children included; without it the crawl stays on the origin.
 */
export async function crawlRepository(
  url: string,
  crawlLimits: CrawlLimits = DEFAULT_CRAWL_LIMITS,
  scope?: string,
  /** Name prefixes of the platform's core units (PIER_PLATFORM_CORE_PREFIXES). */
  corePrefixes: readonly string[] = DEFAULT_CORE_PREFIXES,
  /** Node categories the platform itself declares (PIER_PLATFORM_CATEGORIES): never warned about as undeclared. */
  platformCategories: readonly PlatformCategory[] = KNIME_CATEGORIES,
): Promise<CrawlResult> {
  const base = url.endsWith('/') ? url : `${url}/`;
  // Every fetch of this crawl stays on the label's own host and shares one request budget.
  const limits: CrawlLimits = { ...crawlLimits, origin: new URL(base).origin, budget: { left: crawlLimits.maxRequests }, ...(scope ? { scope } : {}) };
  const problems = new ProblemList();
  const repo = await readRepository(base, problems, limits);
  if (!repo.readable) {
    problems.add({ severity: 'fatal', code: 'metadata_unreadable', message: 'no readable P2 metadata (content.jar, content.xml, content.xml.xz or a composite)', where: base });
  }
  const units = repo.units.map(describeUnit);
  const platform = platformRange(repo.units, corePrefixes);
  for (const c of platform.conflicts) {
    problems.add({
      severity: 'warning',
      code: 'platform_range_conflict',
      message: `${c.a.unit} requires ${c.a.requirement} ${c.a.range} and ${c.b.unit} requires ${c.b.requirement} ${c.b.range}: no platform release satisfies both, so the label cannot be installed as a whole`,
      where: `${c.a.unit} / ${c.b.unit}`,
    });
  }
  const categories: DeclaredCategory[] = [];
  const nodeSets: { bundle: string; factoryClass: string }[] = [];
  const nodes: CrawledNode[] = [];
  /** Python module sources read so far in this crawl: each module once, all of them within a budget. */
  const python: PythonBudget = { characters: 0, read: new Set() };

  const needsBytes = repo.units.filter(mayHoldNodes);
  const referenced = new Map<string, ArtifactInfo | null>();
  for (const u of repo.units) {
    for (const a of u.artifacts) referenced.set(artifactKey(a.classifier, a.id, a.version), repo.artifacts.get(artifactKey(a.classifier, a.id, a.version)) ?? null);
  }

  // Artifacts the crawl does not read: only their presence is checked.
  const others = [...referenced.entries()].filter(([k]) => !needsBytes.some((u) => u.artifacts.some((a) => artifactKey(a.classifier, a.id, a.version) === k)));
  await pool(others, limits.concurrency, async ([key, info]) => {
    if (!info) {
      problems.add({ severity: 'error', code: 'artifact_missing', message: `artifact ${key} is not in the artifact repository`, where: key });
      return;
    }
    try {
      const size = await remoteSize(info.url, limits);
      if (size === null) problems.add({ severity: 'error', code: 'artifact_missing', message: `artifact ${key} not found`, where: info.url });
      // A file of another size has another checksum, which P2 refuses when it downloads it.
      else if (info.size !== null && size >= 0 && size !== info.size) {
        problems.add({ severity: 'error', code: 'checksum_mismatch', message: `artifact ${key} has ${size} bytes where the artifacts metadata says ${info.size} (P2 refuses it: its checksum cannot match)`, where: info.url });
      }
    } catch (e) {
      problems.add({ severity: 'error', code: 'fetch_failed', message: (e as Error).message, where: info.url });
    }
  });

  await pool(needsBytes, limits.concurrency, async (unit) => {
    const ref = unit.artifacts.find((a) => a.classifier === 'osgi.bundle');
    if (!ref) return;
    const key = artifactKey(ref.classifier, ref.id, ref.version);
    const info = referenced.get(key);
    if (!info) {
      problems.add({ severity: 'error', code: 'artifact_missing', message: `bundle ${ref.id} ${ref.version} is not in the artifact repository`, where: key });
      return;
    }
    let bytes: Buffer | null;
    try {
      bytes = await fetchBytes(info.url, limits, limits.maxJarBytes);
    } catch (e) {
      problems.add({ severity: 'error', code: 'fetch_failed', message: (e as Error).message, where: info.url });
      return;
    }
    if (!bytes) {
      problems.add({ severity: 'error', code: 'artifact_missing', message: `bundle ${ref.id} ${ref.version} not found`, where: info.url });
      return;
    }
    // P2 refuses an artifact whose checksum differs (download.checksum.sha-256, then md5).
    const mismatch =
      (info.sha256 && hex('sha256', bytes) !== info.sha256 && 'sha-256') || (info.md5 && hex('md5', bytes) !== info.md5 && 'md5') || null;
    if (mismatch) {
      problems.add({ severity: 'error', code: 'checksum_mismatch', message: `${mismatch} of ${ref.id}_${ref.version}.jar differs from artifacts metadata`, where: info.url });
      return;
    }
    let jar: Jar;
    try {
      jar = await openJar(bytes, limits.jar);
    } catch (e) {
      problems.add({ severity: 'error', code: 'jar_unreadable', message: (e as Error).message, where: info.url });
      return;
    }
    const where = (entry: string) => `${ref.id}_${ref.version}.jar!${entry}`;
    try {
      const pluginXml = await jar.read('plugin.xml');
      if (!pluginXml) return;
      const decl = readPluginXml(parseXml(pluginXml, limits.maxDescriptionBytes * 4), unit.id);
      categories.push(...decl.categories);
      nodeSets.push(...decl.nodeSets.map((factoryClass) => ({ bundle: unit.id, factoryClass })));
      for (const node of decl.nodes) {
        const described = await readDescription(jar, node.factoryClass, limits, (p) => problems.add({ ...p, where: where(p.where) }));
        nodes.push({
          factoryClass: node.factoryClass,
          bundle: unit.id,
          bundleVersion: unit.version,
          categoryPath: node.categoryPath,
          categoryNames: [],
          after: node.after,
          deprecated: node.deprecated,
          hidden: node.hidden,
          description: described?.description ?? null,
          icon: described?.icon ?? null,
          platforms: describePlatformFilter(unit.filter),
        });
      }
      // Each folder once, however often plugin.xml lists it.
      for (const ext of new Set(decl.pythonExtensions.map((e) => (inside('', e) ?? e).replace(/(.)\/+$/, '$1')))) {
        await readPythonExtension(jar, ext, unit, limits, python, { categories, nodes }, (p) => problems.add({ ...p, where: where(p.where) }));
      }
    } catch (e) {
      if (e instanceof XmlProblem) problems.add({ severity: 'error', code: 'xml_error', message: `plugin.xml: ${e.message}`, where: where('plugin.xml'), ...(e.line ? { line: e.line } : {}) });
      else if (e instanceof JarProblem) problems.add({ severity: 'error', code: 'jar_unreadable', message: e.message, where: info.url });
      else throw e;
    } finally {
      jar.close();
    }
  });

  const byFullPath = new Map(categories.map((c) => [categoryFullPath(c), c] as const));
  const platformNames = new Map(platformCategories.map((c) => [normalizePath(c.path), c.name] as const));
  const undeclared = new Set<string>();
  for (const n of nodes) {
    const r = resolveCategoryPath(n.categoryPath, byFullPath, platformNames);
    n.categoryNames = r.names;
    for (const u of r.undeclared) undeclared.add(u);
  }
  for (const u of [...undeclared].sort()) {
    problems.add({ severity: 'warning', code: 'category_undeclared', message: `category ${u} is not declared by any bundle of the site, nor by the platform (PIER_PLATFORM_CATEGORIES)`, where: u });
  }
  const unique = newestPerFactory(nodes, problems);
  const list = problems.items;
  const result = {
    url: base,
    units,
    nodes: unique,
    categories: categories.map((c) => ({ ...c, fullPath: categoryFullPath(c) })),
    nodeSets,
    problems: list,
    platformRange: platform.range,
  };
  return { ...result, summary: summarize(result) };
}

/**
 * OSGi version order (major.minor.micro numerically, then the qualifier as a string), as P2
 * picks the highest version of a bundle to install.
 */
export function compareOsgiVersions(a: string, b: string): number {
  const pa = a.split('.');
  const pb = b.split('.');
  for (let i = 0; i < 3; i++) {
    const d = (Number.parseInt(pa[i] ?? '0', 10) || 0) - (Number.parseInt(pb[i] ?? '0', 10) || 0);
    if (d !== 0) return Math.sign(d);
  }
  const qa = pa.slice(3).join('.');
  const qb = pb.slice(3).join('.');
  return qa < qb ? -1 : qa > qb ? 1 : 0;
}

/**
 * One node per factory class, sorted: the node catalog keys a label's nodes by factory class.
 * A site with several versions of a bundle (or the same factory in two bundles) lists the one
 * a P2 client installs, the highest version, and says so in a warning.
 */
/** Copies of one node each from a different plug-in, and at least one of them platform-filtered. */
function onePerPlatform(copies: CrawledNode[]): boolean {
  return new Set(copies.map((n) => n.bundle)).size === copies.length && copies.some((n) => n.platforms !== null);
}

function newestPerFactory(nodes: CrawledNode[], problems: ProblemList): CrawledNode[] {
  const byFactory = new Map<string, CrawledNode[]>();
  for (const n of nodes) {
    const same = byFactory.get(n.factoryClass);
    if (same) same.push(n);
    else byFactory.set(n.factoryClass, [n]);
  }
  const out: CrawledNode[] = [];
  for (const [factoryClass, same] of byFactory) {
    same.sort((a, b) => compareOsgiVersions(b.bundleVersion, a.bundleVersion) || (a.bundle < b.bundle ? -1 : a.bundle > b.bundle ? 1 : 0));
    const kept = same[0]!;
    out.push(kept);
    // Platform-filtered plug-ins (one per operating system, as native integrations are built)
    // declaring one node: one node, for the union of their platforms; not a duplicate.
    if (same.length > 1 && onePerPlatform(same)) {
      kept.platforms = same.reduce<string[] | null>((acc, n) => unionPlatforms(acc, n.platforms), kept.platforms);
      continue;
    }
    if (same.length > 1) {
      problems.add({
        severity: 'warning',
        code: 'node_duplicate',
        message: `node ${factoryClass} is in ${same.map((n) => `${n.bundle} ${n.bundleVersion}`).join(', ')}: the node catalog lists the one in ${kept.bundle} ${kept.bundleVersion}`,
        where: factoryClass,
      });
    }
  }
  return out.sort((a, b) => (a.factoryClass < b.factoryClass ? -1 : a.factoryClass > b.factoryClass ? 1 : 0));
}

/** The counts of a result (also recounted by the serving process for a worker's result). */
export function summarize(r: Pick<CrawlResult, 'units' | 'nodeSets' | 'problems'> & { nodes: readonly unknown[] }): CrawlSummary {
  return {
    units: r.units.length,
    features: r.units.filter((u) => u.kind === 'feature').length,
    bundles: r.units.filter((u) => u.kind === 'bundle').length,
    categories: r.units.filter((u) => u.kind === 'category').length,
    nodes: r.nodes.length,
    nodeSets: r.nodeSets.length,
    problems: r.problems.length,
    fatal: r.problems.some((p) => p.severity === 'fatal'),
  };
}

/** A jar path inside `base`, or null when it would leave the jar root (traversal). */
function inside(base: string, rel: string): string | null {
  const p = path.normalize(path.join(base, rel));
  return p.startsWith('..') || p.startsWith('/') ? null : p;
}

interface PythonBudget {
  characters: number;
  /** `<bundle>@<version>!<module file>` of each module read. */
  read: Set<string>;
}

/** Nodes of a pure-Python extension, read statically from `knime.yml` and the module's source. */
async function readPythonExtension(
  jar: Jar,
  extensionPath: string,
  unit: { id: string; version: string; filter: string | null },
  limits: CrawlLimits,
  budget: PythonBudget,
  into: { categories: DeclaredCategory[]; nodes: CrawledNode[] },
  report: (p: CrawlProblem) => void,
): Promise<void> {
  const base = inside('', extensionPath);
  if (base === null) {
    report({ severity: 'error', code: 'jar_unreadable', message: `PythonExtension path ${extensionPath} leaves the jar`, where: extensionPath });
    return;
  }
  try {
    const yml = await jar.read(`${base}/knime.yml`);
    if (!yml) {
      report({ severity: 'warning', code: 'description_missing', message: 'pure-Python extension without knime.yml', where: `${base}/knime.yml` });
      return;
    }
    const meta = readKnimeYml(yml.toString('utf8'));
    const module = meta.extension_module ?? '';
    const file = /^[A-Za-z_][\w.]*$/.test(module) ? inside(base, `${module.replace(/\./g, '/')}.py`) : null;
    const source = file ? await jar.read(file) : null;
    if (!file || !source) {
      report({ severity: 'warning', code: 'description_missing', message: `extension_module "${module}" not found`, where: `${base}/knime.yml` });
      return;
    }
    if (source.length > limits.maxDescriptionBytes * 4) {
      report({ severity: 'error', code: 'jar_unreadable', message: `${file} is larger than ${limits.maxDescriptionBytes * 4} bytes`, where: file });
      return;
    }
    const moduleKey = `${unit.id}@${unit.version}!${file}`;
    if (budget.read.has(moduleKey)) return;
    budget.read.add(moduleKey);
    if (budget.characters + source.length > limits.maxPythonCharacters) {
      report({ severity: 'error', code: 'crawl_limit_exceeded', message: `${file} not read: this crawl already read ${budget.characters} characters of Python modules (the limit is ${limits.maxPythonCharacters})`, where: file });
      return;
    }
    budget.characters += source.length;
    const parsed = readPythonModule(source.toString('utf8'), `${meta.group_id ?? unit.id}.${meta.name ?? module}`);
    for (const c of parsed.categories) into.categories.push({ path: c.path, levelId: c.levelId, name: c.name, description: c.description, icon: null, bundle: unit.id });
    for (const n of parsed.nodes) {
      let icon: CrawledNode['icon'] = null;
      const iconFile = n.iconPath ? inside(path.dirname(file), n.iconPath) : null;
      const type = iconFile ? ICON_TYPES[path.extname(iconFile).toLowerCase()] : undefined;
      if (iconFile && type) {
        const bytes = await jar.read(iconFile);
        if (bytes && bytes.length <= limits.maxIconBytes) icon = { contentType: type, base64: bytes.toString('base64') };
        else if (bytes) report(iconTooLarge(iconFile, bytes.length, limits));
      }
      into.nodes.push({
        factoryClass: n.id,
        bundle: unit.id,
        bundleVersion: unit.version,
        categoryPath: n.categoryPath,
        categoryNames: [],
        after: null,
        deprecated: false,
        hidden: false,
        description: n.description,
        icon,
        platforms: describePlatformFilter(unit.filter),
      });
    }
  } catch (e) {
    if (!(e instanceof JarProblem)) throw e;
    report({ severity: 'error', code: 'jar_unreadable', message: e.message, where: base });
  }
}

/** An icon over maxIconBytes is left out; the report says so (a node page shows a 16 px icon). */
function iconTooLarge(where: string, size: number, limits: CrawlLimits): CrawlProblem {
  return { severity: 'warning', code: 'icon_refused', message: `the node icon is not shown: ${size} bytes, larger than ${limits.maxIconBytes}`, where };
}

/** The description beside the factory class, and its icon; problems are reported, not thrown. */
async function readDescription(
  jar: Jar,
  factoryClass: string,
  limits: CrawlLimits,
  report: (p: CrawlProblem) => void,
): Promise<{ description: NodeDescription; icon: CrawledNode['icon'] } | null> {
  const entry = `${factoryClass.replace(/\./g, '/')}.xml`;
  let raw: Buffer | null;
  try {
    raw = await jar.read(entry);
  } catch (e) {
    report({ severity: 'error', code: 'jar_unreadable', message: (e as Error).message, where: entry });
    return null;
  }
  if (!raw) {
    report({ severity: 'warning', code: 'description_missing', message: `no node description ${entry} (nodes described in Java code cannot be listed statically)`, where: entry });
    return null;
  }
  let description: NodeDescription;
  try {
    description = readNodeDescription(parseXml(raw, limits.maxDescriptionBytes), raw.toString('utf8', 0, 4096));
  } catch (e) {
    if (!(e instanceof XmlProblem)) throw e;
    report({ severity: 'error', code: 'xml_error', message: e.message, where: entry, ...(e.line ? { line: e.line } : {}) });
    return null;
  }
  let icon: CrawledNode['icon'] = null;
  if (description.icon) {
    // Relative to the description's folder; a path leaving the jar root is not followed.
    const target = path.normalize(path.join(path.dirname(entry), description.icon));
    const type = ICON_TYPES[path.extname(target).toLowerCase()];
    if (type && !target.startsWith('..') && !target.startsWith('/')) {
      try {
        const bytes = await jar.read(target);
        if (bytes && bytes.length <= limits.maxIconBytes) icon = { contentType: type, base64: bytes.toString('base64') };
        else if (bytes) report(iconTooLarge(target, bytes.length, limits));
      } catch (e) {
        if (!(e instanceof JarProblem)) throw e;
        report({ severity: 'warning', code: 'jar_unreadable', message: e.message, where: target });
      }
    }
  }
  return { description, icon };
}

export { FetchProblem };

/**
 * `plugin.xml` of a bundle: the KNIME node repository extensions. Nodes
 * (`org.knime.workbench.repository.nodes`), categories (`…categories`, often declared in a
 * different bundle than the nodes) and node sets (`…nodesets`, listed in Java code, so only
 * recorded).
 */
import { childElements, type XmlElement } from './xml.js';

const EP = 'org.knime.workbench.repository.';

export interface DeclaredNode {
  factoryClass: string;
  categoryPath: string;
  after: string | null;
  deprecated: boolean;
  hidden: boolean;
}

export interface DeclaredCategory {
  /** Parent path, e.g. `/community`. */
  path: string;
  levelId: string;
  name: string;
  description: string | null;
  icon: string | null;
  bundle: string;
}

export interface PluginDeclarations {
  nodes: DeclaredNode[];
  categories: DeclaredCategory[];
  nodeSets: string[];
  /** `org.knime.python3.nodes.PythonExtension` folders (pure-Python extensions). */
  pythonExtensions: string[];
}

const bool = (v: string | undefined) => v === 'true';

export function readPluginXml(root: XmlElement, bundle: string): PluginDeclarations {
  const out: PluginDeclarations = { nodes: [], categories: [], nodeSets: [], pythonExtensions: [] };
  for (const ext of childElements(root, 'extension')) {
    const point = ext.attrs.point ?? '';
    if (point === `${EP}nodes`) {
      for (const n of childElements(ext, 'node')) {
        if (!n.attrs['factory-class']) continue;
        out.nodes.push({
          factoryClass: n.attrs['factory-class'],
          categoryPath: normalizePath(n.attrs['category-path'] ?? '/'),
          after: n.attrs.after ?? null,
          deprecated: bool(n.attrs.deprecated),
          hidden: bool(n.attrs.hidden),
        });
      }
    } else if (point === `${EP}categories`) {
      for (const c of childElements(ext, 'category')) {
        if (!c.attrs['level-id']) continue;
        out.categories.push({
          path: normalizePath(c.attrs.path ?? '/'),
          levelId: c.attrs['level-id'],
          name: c.attrs.name ?? c.attrs['level-id'],
          description: c.attrs.description ?? null,
          icon: c.attrs.icon ?? null,
          bundle,
        });
      }
    } else if (point === `${EP}nodesets`) {
      for (const s of childElements(ext, 'nodeset')) if (s.attrs['factory-class']) out.nodeSets.push(s.attrs['factory-class']);
    } else if (point === 'org.knime.python3.nodes.PythonExtension') {
      for (const p of childElements(ext, 'PythonExtension')) if (p.attrs.ExtensionPath) out.pythonExtensions.push(p.attrs.ExtensionPath);
    }
  }
  return out;
}

/** `community//example/` → `/community/example`. */
export function normalizePath(p: string): string {
  const segs = p.split('/').filter((s) => s.length > 0);
  return `/${segs.join('/')}`;
}

/** The full path of a category: its parent path plus its level id. */
export const categoryFullPath = (c: DeclaredCategory) => normalizePath(`${c.path}/${c.levelId}`);

/**
 * Names every segment of `path` from the categories of all bundles, else from the categories the
 * platform itself declares (`platform`: full path → name, such as KNIME's `/community` →
 * "Community Nodes"): `/community/example` → `["Community Nodes", "Example"]`. Segments declared
 * by neither keep their id and are listed as undeclared.
 */
export function resolveCategoryPath(
  path: string,
  byFullPath: Map<string, DeclaredCategory>,
  platform: ReadonlyMap<string, string> = new Map(),
): { names: string[]; undeclared: string[] } {
  const segs = normalizePath(path).split('/').filter(Boolean);
  const names: string[] = [];
  const undeclared: string[] = [];
  for (let i = 0; i < segs.length; i++) {
    const full = `/${segs.slice(0, i + 1).join('/')}`;
    const name = byFullPath.get(full)?.name ?? platform.get(full);
    names.push(name ?? segs[i]!);
    if (name === undefined) undeclared.push(full);
  }
  return { names, undeclared };
}

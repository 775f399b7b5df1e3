/**
 * Installable units: features (`*.feature.group`), bundles, categories, with their
 * human-readable properties. `%key` values resolve from the unit's own `df_LT.key` property
 * (the default locale P2 writes for externalised strings).
 */
import type { RawUnit } from './p2.js';

export type UnitKind = 'feature' | 'bundle' | 'category' | 'other';

export interface InstallableUnit {
  id: string;
  version: string;
  kind: UnitKind;
  name: string | null;
  description: string | null;
  provider: string | null;
  license: string | null;
  copyright: string | null;
}

const P = 'org.eclipse.equinox.p2.';

function resolve(unit: RawUnit, value: string | undefined): string | null {
  if (value === undefined) return null;
  if (value.startsWith('%')) return unit.properties.get(`df_LT.${value.slice(1)}`) ?? value;
  return value;
}

export function unitKind(u: RawUnit): UnitKind {
  if (u.properties.get(`${P}type.category`) === 'true') return 'category';
  if (u.id.endsWith('.feature.group') && u.properties.get(`${P}type.group`) === 'true') return 'feature';
  if (u.provides.some((p) => p.namespace === 'osgi.bundle')) return 'bundle';
  return 'other';
}

export function describeUnit(u: RawUnit): InstallableUnit {
  return {
    id: u.id,
    version: u.version,
    kind: unitKind(u),
    name: resolve(u, u.properties.get(`${P}name`)),
    description: resolve(u, u.properties.get(`${P}description`)),
    provider: resolve(u, u.properties.get(`${P}provider`)),
    license: resolve(u, u.license ?? undefined),
    copyright: resolve(u, u.copyright ?? undefined),
  };
}

/**
 * A fragment (it provides the `osgi.fragment` capability, from `Fragment-Host` in its manifest)
 * only adds classes or native code to its host: its plugin.xml is not a source of nodes.
 */
export const isFragment = (u: RawUnit): boolean => u.provides.some((p) => p.namespace === 'osgi.fragment');

/**
 * Bundles that can hold nodes: not source bundles and not fragments. A plug-in with a platform
 * filter still holds nodes, which the users of those platforms see (its node records the platforms).
 */
export function mayHoldNodes(u: RawUnit): boolean {
  if (unitKind(u) !== 'bundle') return false;
  if (u.id.endsWith('.source') || u.properties.get(`${P}type.source`) !== undefined) return false;
  return !isFragment(u);
}

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
 * Bundles that can hold nodes: not source bundles and not OS-specific fragments (a filter on
 * `osgi.os`/`osgi.arch`/`osgi.ws`), as the issue asks.
 */
export function mayHoldNodes(u: RawUnit): boolean {
  if (unitKind(u) !== 'bundle') return false;
  if (u.id.endsWith('.source') || u.properties.get(`${P}type.source`) !== undefined) return false;
  if (u.filter && /osgi\.(os|ws|arch)\s*=/.test(u.filter)) return false;
  return true;
}

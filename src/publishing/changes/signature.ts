/**
 * The compact signature of a node (docs/vendors.md#what-changed-between-labels): what a user of
 * the node notices when it changes between two labels or releases — its name, category,
 * deprecation, ports, options by dialog tab — and a hash standing for the rest of its
 * description. Kept per release (release_nodes) and computed from the label's crawled rows, so
 * both sides of a comparison are made by this one function. Pure: no I/O.
 */
import { createHash } from 'node:crypto';
import type { NodeDescription, NodePort } from '../model/nodes.js';

export interface PortSignature {
  /** The port's position among its side's fixed ports (the description's `index`); null for a dynamic group. */
  index: number | null;
  name: string;
  /**
   * The port type's name when the crawl knows it. Node description XML names and describes a
   * port but does not carry its type (the factory's code does), so this is often null; the
   * diff then reports a port whose name changed at the same position.
   */
  type: string | null;
  /** The group identifier of a dynamic port group (description schema v3.x and later). */
  group: string | null;
}

export interface OptionGroup {
  /** The dialog tab's name; null for options outside any tab. */
  tab: string | null;
  names: string[];
}

export interface NodeSignature {
  factoryClass: string;
  name: string;
  categoryNames: string[];
  deprecated: boolean;
  inPorts: PortSignature[];
  outPorts: PortSignature[];
  options: OptionGroup[];
  /** SHA-256 (base64url, 22 characters) of the description's own texts; null without a description. */
  descriptionHash: string | null;
  /** Short hashes of each option's and port's text (`option:<name>`, `in:#<index>`, `out:group:<id>`); absent without a description. */
  itemHashes?: Record<string, string>;
}

/** The fields of a crawl_nodes row the signature reads (crawler/service.ts nodeRows). */
export interface NodeRowLike {
  factory_class: string;
  name: string;
  deprecated: number;
  /** JSON: `{ categoryNames, description, … }`. */
  data: string;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function port(p: NodePort, position: number): PortSignature {
  const group = typeof p.dynamicGroup === 'string' ? p.dynamicGroup : null;
  const type = (p as NodePort & { type?: unknown }).type;
  return {
    index: group !== null ? null : typeof p.index === 'number' ? p.index : position,
    name: str(p.name),
    type: typeof type === 'string' && type !== '' ? type : null,
    group,
  };
}

function ports(list: unknown): PortSignature[] {
  if (!Array.isArray(list)) return [];
  let fixed = 0;
  return (list as NodePort[]).map((p) => port(p, p.dynamicGroup === null || p.dynamicGroup === undefined ? fixed++ : -1));
}

const optionNames = (list: unknown): string[] => (Array.isArray(list) ? list.map((o) => str((o as { name?: unknown }).name)) : []);

function options(d: NodeDescription): OptionGroup[] {
  const groups: OptionGroup[] = [];
  const top = optionNames(d.options);
  if (top.length) groups.push({ tab: null, names: top });
  if (Array.isArray(d.tabs)) for (const t of d.tabs) groups.push({ tab: str(t.name), names: optionNames(t.options) });
  return groups;
}

const hash = (v: unknown) => createHash('sha256').update(JSON.stringify(v)).digest('base64url').slice(0, 22);

/**
 * The description's own texts (short description, intro, tab descriptions, views, keywords),
 * without what the signature holds on its own (name, ports' and options' names) and without how
 * it was stored (schema generation, markup flag, icon path).
 */
function descriptionHash(d: NodeDescription): string {
  return hash([
    str(d.shortDescription),
    str(d.intro),
    Array.isArray(d.tabs) ? d.tabs.map((t) => str(t.description)) : [],
    Array.isArray(d.views) ? d.views.map((v) => [str(v.name), str(v.description)]) : [],
    Array.isArray(d.keywords) ? d.keywords.map(str) : [],
  ]);
}

/**
 * A short hash of each option's and port's text, by option name and port position or group: an
 * edited text counts as a description change, while a new option's or port's text does not
 * (its addition says it).
 */
function itemHashes(d: NodeDescription): Record<string, string> {
  const out: Record<string, string> = {};
  const put = (key: string, text: unknown) => {
    if (!(key in out)) out[key] = hash(str(text)).slice(0, 8);
  };
  const opts = (list: unknown) => {
    if (Array.isArray(list)) for (const o of list as { name?: unknown; description?: unknown }[]) put(`option:${str(o.name)}`, o.description);
  };
  opts(d.options);
  if (Array.isArray(d.tabs)) for (const t of d.tabs) opts(t.options);
  for (const [side, list] of [['in', d.inPorts], ['out', d.outPorts]] as const) {
    const sigs = ports(list);
    for (let i = 0; i < sigs.length; i++) {
      const p = sigs[i] as PortSignature;
      put(`${side}:${p.group === null ? `#${p.index}` : `group:${p.group}`}`, (list as NodePort[])[i]?.description);
    }
  }
  return out;
}

/** The signature of a crawled node row (stored by the crawler; its `data` is our own JSON). */
export function signatureOfRow(row: NodeRowLike): NodeSignature {
  let data: { categoryNames?: unknown; description?: NodeDescription | null } = {};
  try {
    data = JSON.parse(row.data) as typeof data;
  } catch {
    // A row of ours that does not parse has no description to compare; its columns still do.
  }
  const d = data.description && typeof data.description === 'object' ? data.description : null;
  return {
    factoryClass: row.factory_class,
    name: row.name,
    categoryNames: Array.isArray(data.categoryNames) ? data.categoryNames.map(str) : [],
    deprecated: row.deprecated === 1,
    inPorts: d ? ports(d.inPorts) : [],
    outPorts: d ? ports(d.outPorts) : [],
    options: d ? options(d) : [],
    descriptionHash: d ? descriptionHash(d) : null,
    ...(d ? { itemHashes: itemHashes(d) } : {}),
  };
}

/** Signatures of a label's rows, by factory class (the node's key within a label). */
export function signaturesOf(rows: readonly NodeRowLike[]): NodeSignature[] {
  return rows.map(signatureOfRow).sort((a, b) => (a.factoryClass < b.factoryClass ? -1 : a.factoryClass > b.factoryClass ? 1 : 0));
}

/**
 * What changed between two sets of node signatures: nodes added, removed, newly
 * deprecated, and changed, each change named (a port added, removed or retyped, an option
 * added, removed or moved to another tab, the name, the category, the description's text).
 * Every node of either side lands in exactly one bucket, or counts as unchanged. Pure: no I/O.
 */
import type { NodeSignature, OptionGroup, PortSignature } from './signature.js';

export type PortSide = 'input' | 'output';

export type NodeChange =
  | { kind: 'name'; from: string; to: string }
  | { kind: 'category'; from: string[]; to: string[] }
  | { kind: 'undeprecated' }
  | { kind: 'port-added'; side: PortSide; index: number; name: string; type: string | null }
  | { kind: 'port-removed'; side: PortSide; index: number; name: string; type: string | null }
  | { kind: 'port-changed'; side: PortSide; index: number; from: { name: string; type: string | null }; to: { name: string; type: string | null } }
  | { kind: 'port-group-added'; side: PortSide; group: string; name: string }
  | { kind: 'port-group-removed'; side: PortSide; group: string; name: string }
  | { kind: 'option-added'; name: string; tab: string | null }
  | { kind: 'option-removed'; name: string; tab: string | null }
  | { kind: 'option-moved'; name: string; from: string | null; to: string | null }
  | { kind: 'description' };

export interface NodeRef {
  factoryClass: string;
  name: string;
  categoryNames: string[];
  deprecated: boolean;
}

export interface ChangedNode extends NodeRef {
  changes: NodeChange[];
}

export interface NodesDiff {
  added: NodeRef[];
  removed: NodeRef[];
  /** Deprecated in `to`, not in `from`; with whatever else changed. */
  deprecated: ChangedNode[];
  changed: ChangedNode[];
  /** Nodes on both sides with no change. */
  unchanged: number;
}

const ref = (s: NodeSignature): NodeRef => ({ factoryClass: s.factoryClass, name: s.name, categoryNames: s.categoryNames, deprecated: s.deprecated });

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

function portChanges(side: PortSide, from: PortSignature[], to: PortSignature[]): NodeChange[] {
  const out: NodeChange[] = [];
  // Fixed ports by position; dynamic groups by identifier (what a workflow's connections refer to).
  const fixed = (ps: PortSignature[]) => new Map(ps.filter((p) => p.group === null).map((p) => [p.index ?? 0, p] as const));
  const groups = (ps: PortSignature[]) => new Map(ps.filter((p) => p.group !== null).map((p) => [p.group as string, p] as const));
  const a = fixed(from);
  const b = fixed(to);
  const indexes = [...new Set([...a.keys(), ...b.keys()])].sort((x, y) => x - y);
  for (const i of indexes) {
    const x = a.get(i);
    const y = b.get(i);
    if (x && !y) out.push({ kind: 'port-removed', side, index: i, name: x.name, type: x.type });
    else if (!x && y) out.push({ kind: 'port-added', side, index: i, name: y.name, type: y.type });
    else if (x && y && (x.name !== y.name || x.type !== y.type)) {
      out.push({ kind: 'port-changed', side, index: i, from: { name: x.name, type: x.type }, to: { name: y.name, type: y.type } });
    }
  }
  const ga = groups(from);
  const gb = groups(to);
  for (const [g, p] of ga) if (!gb.has(g)) out.push({ kind: 'port-group-removed', side, group: g, name: p.name });
  for (const [g, p] of gb) if (!ga.has(g)) out.push({ kind: 'port-group-added', side, group: g, name: p.name });
  return out;
}

function optionChanges(from: OptionGroup[], to: OptionGroup[]): NodeChange[] {
  // An option is known by its name; the tab it sits in is where the dialog shows it.
  const tabs = (groups: OptionGroup[]) => {
    const m = new Map<string, string | null>();
    for (const g of groups) for (const n of g.names) if (!m.has(n)) m.set(n, g.tab);
    return m;
  };
  const a = tabs(from);
  const b = tabs(to);
  const out: NodeChange[] = [];
  for (const [name, tab] of a) {
    if (!b.has(name)) out.push({ kind: 'option-removed', name, tab });
    else if (b.get(name) !== tab) out.push({ kind: 'option-moved', name, from: tab, to: b.get(name) ?? null });
  }
  for (const [name, tab] of b) if (!a.has(name)) out.push({ kind: 'option-added', name, tab });
  return out;
}

/** An option or port on both sides whose text differs. */
function editedItem(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  if (!a || !b) return false;
  return Object.keys(a).some((k) => k in b && a[k] !== b[k]);
}

/** What changed in one node from `a` to `b` (empty: nothing a user would notice). */
export function nodeChanges(a: NodeSignature, b: NodeSignature): NodeChange[] {
  const out: NodeChange[] = [];
  if (a.name !== b.name) out.push({ kind: 'name', from: a.name, to: b.name });
  if (!sameList(a.categoryNames, b.categoryNames)) out.push({ kind: 'category', from: a.categoryNames, to: b.categoryNames });
  if (a.deprecated && !b.deprecated) out.push({ kind: 'undeprecated' });
  out.push(...portChanges('input', a.inPorts, b.inPorts), ...portChanges('output', a.outPorts, b.outPorts));
  out.push(...optionChanges(a.options, b.options));
  if (a.descriptionHash !== b.descriptionHash || editedItem(a.itemHashes, b.itemHashes)) out.push({ kind: 'description' });
  return out;
}

const byName = (x: NodeRef, y: NodeRef) =>
  x.name.localeCompare(y.name, 'en', { sensitivity: 'base' }) || (x.factoryClass < y.factoryClass ? -1 : x.factoryClass > y.factoryClass ? 1 : 0);

/** The changes from node set `from` to node set `to`, each bucket sorted by node name. */
export function diffNodes(from: readonly NodeSignature[], to: readonly NodeSignature[]): NodesDiff {
  const a = new Map(from.map((n) => [n.factoryClass, n] as const));
  const b = new Map(to.map((n) => [n.factoryClass, n] as const));
  const diff: NodesDiff = { added: [], removed: [], deprecated: [], changed: [], unchanged: 0 };
  for (const [k, n] of a) if (!b.has(k)) diff.removed.push(ref(n));
  for (const [k, n] of b) {
    const old = a.get(k);
    if (!old) {
      diff.added.push(ref(n));
      continue;
    }
    const changes = nodeChanges(old, n);
    if (n.deprecated && !old.deprecated) diff.deprecated.push({ ...ref(n), changes });
    else if (changes.length > 0) diff.changed.push({ ...ref(n), changes });
    else diff.unchanged++;
  }
  diff.added.sort(byName);
  diff.removed.sort(byName);
  diff.deprecated.sort(byName);
  diff.changed.sort(byName);
  return diff;
}

const SIDE = { input: 'Input port', output: 'Output port' } as const;
const GROUP = { input: 'Dynamic input ports', output: 'Dynamic output ports' } as const;
const portText = (p: { name: string; type: string | null }) => (p.type ? `${p.name} (${p.type})` : p.name);
const tabText = (tab: string | null) => (tab === null ? 'outside tabs' : `tab “${tab}”`);

/** One change in words, e.g. `Input port 2: Table → Model` (ports counted from 1, as users do). */
export function describeChange(c: NodeChange): string {
  switch (c.kind) {
    case 'name':
      return `Renamed: ${c.from} → ${c.to}`;
    case 'category':
      return `Category: ${c.from.join(' / ') || '(none)'} → ${c.to.join(' / ') || '(none)'}`;
    case 'undeprecated':
      return 'No longer deprecated';
    case 'port-added':
      return `${SIDE[c.side]} ${c.index + 1} added: ${portText(c)}`;
    case 'port-removed':
      return `${SIDE[c.side]} ${c.index + 1} removed: ${portText(c)}`;
    case 'port-changed':
      // Types when both sides know them, else the names the description gives.
      return c.from.type && c.to.type && c.from.type !== c.to.type
        ? `${SIDE[c.side]} ${c.index + 1}: ${c.from.type} → ${c.to.type}`
        : `${SIDE[c.side]} ${c.index + 1}: ${portText(c.from)} → ${portText(c.to)}`;
    case 'port-group-added':
      return `${GROUP[c.side]} “${c.group}” added${c.name ? `: ${c.name}` : ''}`;
    case 'port-group-removed':
      return `${GROUP[c.side]} “${c.group}” removed${c.name ? `: ${c.name}` : ''}`;
    case 'option-added':
      return `Option “${c.name}” added (${tabText(c.tab)})`;
    case 'option-removed':
      return `Option “${c.name}” removed (${tabText(c.tab)})`;
    case 'option-moved':
      return `Option “${c.name}” moved from ${tabText(c.from)} to ${tabText(c.to)}`;
    case 'description':
      return 'Description text changed';
  }
}

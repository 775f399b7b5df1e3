import { nodeUrl } from '../model/node-url.js';
import { type ChangedNode, describeChange, type NodeRef } from './diff.js';
import type { Comparison } from './service.js';

/** One page of a comparison as the API answers it: node page URLs and each change in words. */
export function presentComparison(productId: string, c: Comparison) {
  const paged = new Set(c.paged);
  const node = (n: NodeRef) => ({
    factoryClass: n.factoryClass,
    name: n.name,
    categoryNames: n.categoryNames,
    deprecated: n.deprecated,
    url: paged.has(n.factoryClass) ? nodeUrl(productId, n.factoryClass) : null,
  });
  const changed = (n: ChangedNode) => ({ ...node(n), changes: n.changes.map((x) => ({ ...x, text: describeChange(x) })) });
  return {
    from: c.from,
    to: c.to,
    added: c.diff.added.map(node),
    removed: c.diff.removed.map(node),
    deprecated: c.diff.deprecated.map(changed),
    changed: c.diff.changed.map(changed),
    unchanged: c.diff.unchanged,
    counts: c.counts,
    page: c.page,
    pages: c.pages,
  };
}

/**
 * Node description XML (`<FactorySimpleName>.xml` beside the factory class), in every schema
 * generation: DTD-based files without a namespace (1.x/2.0), and the namespaced
 * `http://knime.org/node/v2.x`, `v3.x` and `v4.1` schemas. Namespace prefixes are removed by
 * the parser, so one reader covers them; later generations only add elements (dynamic ports,
 * keywords), which are optional here.
 */
import type { NodeDescription, NodeOption, NodePort } from '../model/nodes.js';
import { markupOf } from './description-markup.js';
import { child, childElements, textOf, type XmlElement } from './xml.js';

const options = (el: XmlElement | undefined): NodeOption[] =>
  childElements(el, 'option').map((o) => ({ name: o.attrs.name ?? '', description: markupOf(o) }));

const index = (v: string | undefined) => (v !== undefined && /^\d{1,4}$/.test(v) ? Number(v) : null);

function ports(el: XmlElement | undefined, fixed: string, dynamic: string): NodePort[] {
  return childElements(el).flatMap((p): NodePort[] =>
    p.name === fixed
      ? [{ index: index(p.attrs.index), name: p.attrs.name ?? '', description: markupOf(p), dynamicGroup: null }]
      : p.name === dynamic
        ? [{ index: null, name: p.attrs.name ?? '', description: markupOf(p), dynamicGroup: p.attrs['group-identifier'] ?? '' }]
        : [],
  );
}

/** Reads a parsed description; `rawText` tells the schema generation (namespace or DOCTYPE). */
export function readNodeDescription(root: XmlElement, rawText: string): NodeDescription {
  const ns = /xmlns(?::\w+)?\s*=\s*["']https?:\/\/knime\.org\/node(?:2012)?\/(v[\d.]+)["']/.exec(rawText);
  const full = child(root, 'fullDescription');
  const portsEl = child(root, 'ports');
  return {
    name: textOf(child(root, 'name')),
    nodeType: root.attrs.type ?? null,
    icon: root.attrs.icon ?? null,
    shortDescription: textOf(child(root, 'shortDescription')),
    intro: markupOf(child(full, 'intro')),
    options: options(full),
    tabs: childElements(full, 'tab').map((t) => ({ name: t.attrs.name ?? '', description: markupOf(child(t, 'description')), options: options(t) })),
    inPorts: ports(portsEl, 'inPort', 'dynInPort'),
    outPorts: ports(portsEl, 'outPort', 'dynOutPort'),
    views: childElements(child(root, 'views'), 'view').map((v) => ({ index: index(v.attrs.index), name: v.attrs.name ?? '', description: markupOf(v) })),
    keywords: childElements(child(root, 'keywords'), 'keyword').map((k) => textOf(k)).filter(Boolean),
    schema: ns ? ns[1]! : /<!DOCTYPE/i.test(rawText) ? 'dtd' : 'none',
    markup: 'html',
  };
}

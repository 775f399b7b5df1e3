/**
 * A node's description, in one shape for every schema generation and for pure-Python
 * extensions: the crawler fills it (crawler/node-description.ts, crawler/python-extension.ts),
 * the changes page compares it (changes/signature.ts) and the node pages show it (web/). It is
 * data only, on the ground floor, so that those parts share it without importing one another.
 */
export interface NodeOption {
  name: string;
  /** HTML when the description's `markup` is `html`, plain text otherwise. */
  description: string;
}

export interface NodePort {
  index: number | null;
  name: string;
  description: string;
  /** Dynamic port groups (v3.x+): the group identifier. */
  dynamicGroup: string | null;
}

export interface NodeDescription {
  name: string;
  nodeType: string | null;
  /** Path of the icon relative to the description file. */
  icon: string | null;
  shortDescription: string;
  intro: string;
  options: NodeOption[];
  tabs: { name: string; description: string; options: NodeOption[] }[];
  inPorts: NodePort[];
  outPorts: NodePort[];
  views: { index: number | null; name: string; description: string }[];
  keywords: string[];
  /** e.g. `dtd`, `v2.8`, `v4.1`. */
  schema: string;
  /**
   * `html`: intro and every option, tab, port and view description hold the description's own
   * markup as HTML (description-markup.ts). Absent: plain text, one paragraph per line (crawls
   * stored before markup was kept, and pure-Python extensions' docstrings).
   */
  markup?: 'html';
  /** Longer than a node page shows: cut when sanitized (crawler/sanitize-node.ts). */
  truncated?: true;
}

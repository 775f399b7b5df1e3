/**
 * Pure-Python extensions (plugin.xml `org.knime.python3.nodes.PythonExtension`): nodes are read
 * statically from the sources — `knime.yml`, the `knext.category(...)` assignments and the
 * `@knext.node(...)` decorators with their port decorators and the class docstring. Vendor code
 * is never executed: this is a small tokenizer for literal arguments, nothing more.
 */
import type { NodeDescription, NodePort } from './node-description.js';

export interface PythonNode {
  /** `<group_id>.<name>.<ClassName>`: stable id of the node inside its product. */
  id: string;
  categoryPath: string;
  description: NodeDescription;
  iconPath: string | null;
}

export interface PythonCategory {
  path: string;
  levelId: string;
  name: string;
  description: string | null;
}

type Value = { kind: 'str'; value: string } | { kind: 'name'; value: string } | { kind: 'other' };

/** `key: value` lines of knime.yml (top-level scalars are all the crawler needs). */
export function readKnimeYml(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const m = /^([A-Za-z_][\w-]*):\s*(.*?)\s*$/.exec(line);
    if (!m || m[2] === '') continue;
    out[m[1]!] = m[2]!.replace(/^(['"])(.*)\1$/, '$2').replace(/\s+#.*$/, '');
  }
  return out;
}

class Reader {
  i = 0;
  constructor(readonly s: string) {}

  skipSpace(): void {
    for (;;) {
      while (this.i < this.s.length && /\s|\\/.test(this.s[this.i]!)) this.i++;
      if (this.s[this.i] === '#') while (this.i < this.s.length && this.s[this.i] !== '\n') this.i++;
      else return;
    }
  }

  /** A string literal at the cursor (any prefix, quotes, triple quotes), or null. */
  string(): string | null {
    const m = /^([rRbBuUfF]{0,2})('''|"""|'|")/.exec(this.s.slice(this.i, this.i + 5));
    if (!m) return null;
    const raw = /r/i.test(m[1]!);
    const q = m[2]!;
    let j = this.i + m[0].length;
    let out = '';
    while (j < this.s.length && !this.s.startsWith(q, j)) {
      if (this.s[j] === '\\' && !raw) {
        const n = this.s[j + 1] ?? '';
        out += n === 'n' ? '\n' : n === 't' ? '\t' : n === '\n' ? '' : n;
        j += 2;
      } else out += this.s[j++];
      if (q.length === 1 && this.s[j] === '\n') return null;
    }
    this.i = j + q.length;
    return out;
  }

  /** One argument value; adjacent strings concatenate as in Python. */
  value(): Value {
    this.skipSpace();
    let s = this.string();
    if (s !== null) {
      for (;;) {
        this.skipSpace();
        const next = this.string();
        if (next === null) break;
        s += next;
      }
      return { kind: 'str', value: s };
    }
    const name = /^[A-Za-z_][\w.]*/.exec(this.s.slice(this.i, this.i + 200));
    if (name) {
      this.i += name[0].length;
      this.skipSpace();
      if (this.s[this.i] !== '(' && this.s[this.i] !== '[') return { kind: 'name', value: name[0] };
    }
    this.skipExpression();
    return { kind: 'other' };
  }

  /** Skips to the next `,` or `)` at depth 0 (strings and brackets respected). */
  skipExpression(): void {
    let depth = 0;
    while (this.i < this.s.length) {
      const c = this.s[this.i]!;
      if (this.string() !== null) continue;
      if (c === '(' || c === '[' || c === '{') depth++;
      else if (c === ')' || c === ']' || c === '}') {
        if (depth === 0) return;
        depth--;
      } else if (c === ',' && depth === 0) return;
      this.i++;
    }
  }

  /** Keyword (and positional) arguments of a call whose `(` is at the cursor. */
  args(): { positional: Value[]; keywords: Map<string, Value> } {
    const positional: Value[] = [];
    const keywords = new Map<string, Value>();
    this.i++; // (
    for (let guard = 0; guard < 200; guard++) {
      this.skipSpace();
      if (this.i >= this.s.length) break;
      if (this.s[this.i] === ')') {
        this.i++;
        break;
      }
      const kw = /^([A-Za-z_]\w*)\s*=(?!=)/.exec(this.s.slice(this.i, this.i + 100));
      if (kw) {
        this.i += kw[0].length;
        keywords.set(kw[1]!, this.value());
      } else positional.push(this.value());
      this.skipSpace();
      if (this.s[this.i] === ',') this.i++;
    }
    return { positional, keywords };
  }
}

const str = (v: Value | undefined) => (v?.kind === 'str' ? v.value : null);
const lastName = (v: Value | undefined) => (v?.kind === 'name' ? v.value.slice(v.value.lastIndexOf('.') + 1) : null);

/** First line of a docstring = short description; the rest = full description (PEP 257). */
function docstring(text: string): { short: string; full: string } {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  const short = lines[0]!.trim();
  const rest = lines.slice(1);
  const indent = Math.min(...rest.filter((l) => l.trim()).map((l) => l.length - l.trimStart().length), 1000);
  return { short, full: rest.map((l) => l.slice(indent === 1000 ? 0 : indent)).join('\n').trim() };
}

/** Categories and nodes of one Python module. */
export function readPythonModule(source: string, extensionId: string): { categories: PythonCategory[]; nodes: PythonNode[] } {
  const r = new Reader(source);
  const categories: PythonCategory[] = [];
  const categoryVars = new Map<string, string>();
  const nodes: PythonNode[] = [];
  const catRe = /^([A-Za-z_]\w*)\s*=\s*knext\.category\s*(?=\()/gm;
  for (const m of source.matchAll(catRe)) {
    r.i = m.index! + m[0].length;
    const { keywords } = r.args();
    const path = str(keywords.get('path')) ?? '/';
    const levelId = str(keywords.get('level_id'));
    if (!levelId) continue;
    const parent = categoryVars.get(keywords.get('path')?.kind === 'name' ? (keywords.get('path') as { value: string }).value : '') ?? path;
    const c = { path: parent, levelId, name: str(keywords.get('name')) ?? levelId, description: str(keywords.get('description')) };
    categories.push(c);
    categoryVars.set(m[1]!, `${c.path.replace(/\/+$/, '')}/${levelId}`);
  }
  const nodeRe = /^[ \t]*@knext\.node\s*(?=\()/gm;
  for (const m of source.matchAll(nodeRe)) {
    r.i = m.index! + m[0].length;
    const call = r.args();
    // knext.node(name, node_type, icon_path, category, ...): positional or keyword.
    const keywords = new Map(call.keywords);
    ['name', 'node_type', 'icon_path', 'category'].forEach((k, i) => {
      const v = call.positional[i];
      if (v && !keywords.has(k)) keywords.set(k, v);
    });
    const inPorts: NodePort[] = [];
    const outPorts: NodePort[] = [];
    const views: NodeDescription['views'] = [];
    // The decorators below it, then the class and its docstring.
    for (let guard = 0; guard < 50; guard++) {
      r.skipSpace();
      const deco = /^@knext\.(\w+)\s*(?=\()/.exec(r.s.slice(r.i, r.i + 100));
      if (!deco) break;
      r.i += deco[0].length;
      const a = r.args();
      const port = { index: null, name: str(a.keywords.get('name')) ?? str(a.positional[0]) ?? '', description: str(a.keywords.get('description')) ?? str(a.positional[1]) ?? '', dynamicGroup: null };
      if (/^input_/.test(deco[1]!)) inPorts.push({ ...port, index: inPorts.length });
      else if (/^output_/.test(deco[1]!)) outPorts.push({ ...port, index: outPorts.length });
      else if (/view$/.test(deco[1]!)) views.push({ index: views.length, name: port.name, description: port.description });
    }
    r.skipSpace();
    const cls = /^class\s+([A-Za-z_]\w*)[^:]*:/.exec(r.s.slice(r.i, r.i + 500));
    if (!cls) continue;
    r.i += cls[0].length;
    r.skipSpace();
    const doc = docstring(r.string() ?? '');
    const category = keywords.get('category');
    const categoryPath = category?.kind === 'name' ? (categoryVars.get(category.value) ?? '/') : (str(category) ?? '/');
    const name = str(keywords.get('name')) ?? cls[1]!;
    nodes.push({
      id: `${extensionId}.${cls[1]}`,
      categoryPath,
      iconPath: str(keywords.get('icon_path')),
      description: {
        name,
        nodeType: lastName(keywords.get('node_type')),
        icon: str(keywords.get('icon_path')),
        shortDescription: doc.short,
        intro: doc.full,
        options: [],
        tabs: [],
        inPorts,
        outPorts,
        views,
        keywords: [],
        schema: 'python',
      },
    });
  }
  return { categories, nodes };
}

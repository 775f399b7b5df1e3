/**
 * Pure-Python extensions (plugin.xml `org.knime.python3.nodes.PythonExtension`): nodes are read
 * statically from the sources — `knime.yml`, the `knext.category(...)` assignments and the
 * `@knext.node(...)` decorators with their port decorators and the class docstring. Vendor code
 * is never executed: this is a small tokenizer for literal arguments, nothing more.
 */
import type { NodeDescription, NodePort } from '../model/nodes.js';

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

/** Counts the reader's work (characters and tokens visited): tests check it grows linearly. */
export interface WorkMeter {
  steps: number;
}

/** `key: value` lines of knime.yml (top-level scalars are all the crawler needs). */
export function readKnimeYml(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    // No pattern with two adjacent unbounded runs: a long line of spaces stays linear.
    const m = /^([A-Za-z_][\w-]*):(.*)$/.exec(line);
    if (!m) continue;
    let value = m[2]!;
    const comment = value.search(/\s#/);
    if (comment !== -1) value = value.slice(0, comment);
    value = value.trim();
    if (value === '') continue;
    out[m[1]!] = value.replace(/^(['"])(.*)\1$/, '$2');
  }
  return out;
}

const OPEN = new Set(['(', '[', '{']);
const CLOSE = new Set([')', ']', '}']);
const isWord = (c: string | undefined) => c !== undefined && /\w/.test(c);

/**
 * One pass over the whole source: where each string literal and comment ends, and where each
 * bracket closes. Everything after it jumps over strings and bracketed groups in one step, so
 * no part of the source is scanned again per decorator (an unclosed `(` repeated on every line
 * made a per-call scan to the end of the file quadratic).
 */
class Tokens {
  /** At the first character of a string literal (its prefix) or a comment: the index after it; else 0. */
  readonly skip: Int32Array;
  /** At an opening bracket in code: the index of its closing bracket, or the source's length when unclosed. */
  readonly close: Int32Array;
  /** 1 where the character is code (not inside a string literal or a comment). */
  readonly code: Uint8Array;

  constructor(
    readonly s: string,
    meter: WorkMeter,
  ) {
    const n = s.length;
    this.skip = new Int32Array(n);
    this.close = new Int32Array(n);
    this.code = new Uint8Array(n);
    const stack: number[] = [];
    let i = 0;
    while (i < n) {
      meter.steps++;
      const c = s[i]!;
      if (c === '#') {
        const nl = s.indexOf('\n', i);
        const end = nl === -1 ? n : nl;
        meter.steps += end - i;
        this.skip[i] = end;
        i = end;
        continue;
      }
      const quote = this.quoteAt(i);
      if (quote) {
        const end = this.stringEnd(quote.body, quote.q, meter);
        this.skip[i] = end;
        i = end;
        continue;
      }
      this.code[i] = 1;
      if (OPEN.has(c)) stack.push(i);
      else if (CLOSE.has(c) && stack.length > 0) this.close[stack.pop()!] = i;
      i++;
    }
    for (const open of stack) this.close[open] = n;
  }

  /** A string literal starting at `i`: prefix letters (a whole token) and a quote. */
  quoteAt(i: number): { q: string; body: number; raw: boolean } | null {
    const c = this.s[i];
    if (c !== '"' && c !== "'" && !(c !== undefined && /[rRbBuUfF]/.test(c))) return null;
    const m = /^([rRbBuUfF]{0,2})('''|"""|'|")/.exec(this.s.slice(i, i + 5));
    if (!m || (m[1]!.length > 0 && isWord(this.s[i - 1]))) return null;
    return { q: m[2]!, body: i + m[0].length, raw: /r/i.test(m[1]!) };
  }

  /** The index after the literal whose body starts at `j`; a single-quoted one ends at a line end. */
  private stringEnd(j: number, q: string, meter: WorkMeter): number {
    const s = this.s;
    while (j < s.length) {
      meter.steps++;
      // A backslash keeps the next character inside the literal, raw or not (Python's lexer).
      if (s[j] === '\\') j += 2;
      else if (s.startsWith(q, j)) return j + q.length;
      else if (q.length === 1 && s[j] === '\n') return j;
      else j++;
    }
    return s.length;
  }
}

class Reader {
  i = 0;
  constructor(
    readonly t: Tokens,
    readonly meter: WorkMeter,
  ) {}

  get s(): string {
    return this.t.s;
  }

  /** The next `n` characters (a bounded look-ahead: one step), for a pattern to look at. */
  peek(n: number): string {
    this.meter.steps++;
    return this.s.slice(this.i, this.i + n);
  }

  skipSpace(): void {
    const s = this.s;
    while (this.i < s.length) {
      this.meter.steps++;
      const c = s[this.i]!;
      if (c === '#') this.i = this.t.skip[this.i]!;
      else if (c === '\\' || /\s/.test(c)) this.i++;
      else return;
    }
  }

  /** A string literal at the cursor (any prefix, quotes, triple quotes), or null. */
  string(): string | null {
    const at = this.i;
    if (at >= this.s.length || this.t.skip[at] === 0 || this.s[at] === '#') return null;
    const quote = this.t.quoteAt(at);
    if (!quote) return null;
    const end = this.t.skip[at]!;
    const closed = end - quote.q.length >= quote.body && this.s.startsWith(quote.q, end - quote.q.length);
    const bodyEnd = closed ? end - quote.q.length : end;
    const parts: string[] = [];
    for (let j = quote.body; j < bodyEnd; ) {
      this.meter.steps++;
      if (this.s[j] === '\\' && !quote.raw) {
        const n = this.s[j + 1] ?? '';
        parts.push(n === 'n' ? '\n' : n === 't' ? '\t' : n === '\n' ? '' : n);
        j += 2;
      } else parts.push(this.s[j++]!);
    }
    this.i = end;
    return parts.join('');
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
    const name = /^[A-Za-z_][\w.]*/.exec(this.peek(200));
    if (name) {
      this.i += name[0].length;
      this.skipSpace();
      if (this.s[this.i] !== '(' && this.s[this.i] !== '[') return { kind: 'name', value: name[0] };
    }
    this.skipExpression();
    return { kind: 'other' };
  }

  /** Skips to the next `,` or closing bracket outside brackets, jumping over strings and groups. */
  skipExpression(): void {
    const s = this.s;
    while (this.i < s.length) {
      this.meter.steps++;
      const c = s[this.i]!;
      const skip = this.t.skip[this.i]!;
      if (skip > 0) this.i = skip;
      else if (OPEN.has(c)) this.i = this.t.close[this.i]! + 1;
      else if (CLOSE.has(c) || c === ',') return;
      else this.i++;
    }
    this.i = Math.min(this.i, s.length);
  }

  /** Keyword (and positional) arguments of a call whose `(` is at the cursor. */
  args(): { positional: Value[]; keywords: Map<string, Value> } {
    const positional: Value[] = [];
    const keywords = new Map<string, Value>();
    this.i++; // (
    for (let guard = 0; guard < 200; guard++) {
      this.skipSpace();
      if (this.i >= this.s.length) break;
      if (CLOSE.has(this.s[this.i]!)) {
        this.i++;
        break;
      }
      const start = this.i;
      const kw = /^([A-Za-z_]\w*)\s*=(?!=)/.exec(this.peek(100));
      if (kw) {
        this.i += kw[0].length;
        keywords.set(kw[1]!, this.value());
      } else positional.push(this.value());
      this.skipSpace();
      if (this.s[this.i] === ',') this.i++;
      else if (this.i === start) this.i++; // never stand still on a character no rule takes
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
  // A loop, not Math.min(...): a docstring may have more lines than a call may have arguments.
  let indent = 1000;
  for (const l of rest) if (l.trim()) indent = Math.min(indent, l.length - l.trimStart().length);
  return { short, full: rest.map((l) => l.slice(indent === 1000 ? 0 : indent)).join('\n').trim() };
}

/** Categories and nodes of one Python module. */
export function readPythonModule(source: string, extensionId: string, meter: WorkMeter = { steps: 0 }): { categories: PythonCategory[]; nodes: PythonNode[] } {
  const tokens = new Tokens(source, meter);
  const r = new Reader(tokens, meter);
  // Each of the two regex passes below reads the source once.
  meter.steps += 2 * source.length;
  const categories: PythonCategory[] = [];
  const categoryVars = new Map<string, string>();
  const nodes: PythonNode[] = [];
  const catRe = /^([A-Za-z_]\w*)\s*=\s*knext\.category\s*(?=\()/gm;
  for (const m of source.matchAll(catRe)) {
    if (!tokens.code[m.index!]) continue; // inside a string literal or a comment
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
    if (!tokens.code[m.index! + m[0].indexOf('@')]) continue; // inside a string literal or a comment
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
      const deco = /^@knext\.(\w+)\s*(?=\()/.exec(r.peek(100));
      if (!deco) break;
      r.i += deco[0].length;
      const a = r.args();
      const port = { index: null, name: str(a.keywords.get('name')) ?? str(a.positional[0]) ?? '', description: str(a.keywords.get('description')) ?? str(a.positional[1]) ?? '', dynamicGroup: null };
      if (/^input_/.test(deco[1]!)) inPorts.push({ ...port, index: inPorts.length });
      else if (/^output_/.test(deco[1]!)) outPorts.push({ ...port, index: outPorts.length });
      else if (/view$/.test(deco[1]!)) views.push({ index: views.length, name: port.name, description: port.description });
    }
    r.skipSpace();
    const cls = /^class\s+([A-Za-z_]\w*)[^:]*:/.exec(r.peek(500));
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

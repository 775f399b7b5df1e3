/**
 * A unit's `<filter>` is an LDAP filter (RFC 4515 syntax, as OSGi uses it) over the installing
 * platform's properties: `osgi.os`, `osgi.ws`, `osgi.arch`, `osgi.nl`. P2 installs a filtered
 * unit only where the filter matches, so a plug-in with `(& (osgi.os=linux) (osgi.arch=x86_64))`
 * holds nodes that Linux x86_64 users see and others do not. This module reads such a filter
 * into the platforms a person recognises; a filter it cannot read stays as its own text.
 */

export type LdapFilter =
  | { op: '&' | '|'; items: LdapFilter[] }
  | { op: '!'; item: LdapFilter }
  | { op: 'eq'; attr: string; value: string }
  | { op: 'other'; text: string };

export class FilterSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FilterSyntaxError';
  }
}

/** Bounds so a hostile filter costs little: P2's own filters are a few dozen characters. */
const MAX_FILTER_CHARS = 4096;
const MAX_DEPTH = 16;

/** Parses an LDAP filter; throws FilterSyntaxError for anything that is not one. Linear in its length. */
export function parseLdapFilter(text: string): LdapFilter {
  if (text.length > MAX_FILTER_CHARS) throw new FilterSyntaxError(`filter longer than ${MAX_FILTER_CHARS} characters`);
  let i = 0;
  const skip = () => {
    while (i < text.length && /\s/.test(text[i]!)) i++;
  };
  const expect = (c: string) => {
    skip();
    if (text[i] !== c) throw new FilterSyntaxError(`expected "${c}" at ${i}`);
    i++;
  };
  const filter = (depth: number): LdapFilter => {
    if (depth > MAX_DEPTH) throw new FilterSyntaxError('filter nested too deeply');
    expect('(');
    skip();
    const c = text[i];
    let out: LdapFilter;
    if (c === '&' || c === '|') {
      i++;
      const items: LdapFilter[] = [];
      skip();
      while (text[i] === '(') {
        items.push(filter(depth + 1));
        skip();
      }
      out = { op: c, items };
    } else if (c === '!') {
      i++;
      out = { op: '!', item: filter(depth + 1) };
    } else {
      const start = i;
      while (i < text.length && text[i] !== ')' && text[i] !== '(') {
        if (text[i] === '\\') i++;
        i++;
      }
      const body = text.slice(start, i);
      const m = /^\s*([\w.-]+)\s*=([^=<>~*]*)$/.exec(body);
      out = m ? { op: 'eq', attr: m[1]!, value: m[2]!.trim() } : { op: 'other', text: body.trim() };
    }
    expect(')');
    return out;
  };
  const result = filter(0);
  skip();
  if (i !== text.length) throw new FilterSyntaxError(`unexpected text after the filter at ${i}`);
  return result;
}

const PLATFORM_KEYS = ['osgi.os', 'osgi.arch', 'osgi.ws'] as const;
type Platform = Partial<Record<(typeof PLATFORM_KEYS)[number], string>>;

const OS_NAMES: Record<string, string> = { win32: 'Windows', linux: 'Linux', macosx: 'macOS' };

/**
 * The filter as a disjunction of platforms (each an os/arch/ws combination), or null when it is
 * not a pure platform filter (negations, other properties, too many combinations).
 */
function platformsOf(f: LdapFilter, budget = { left: 64 }): Platform[] | null {
  if (--budget.left < 0) return null;
  switch (f.op) {
    case 'eq':
      return (PLATFORM_KEYS as readonly string[]).includes(f.attr) ? [{ [f.attr]: f.value }] : null;
    case '|': {
      const all: Platform[] = [];
      for (const item of f.items) {
        const p = platformsOf(item, budget);
        if (!p) return null;
        all.push(...p);
      }
      return all.length ? all : null;
    }
    case '&': {
      let acc: Platform[] = [{}];
      for (const item of f.items) {
        const p = platformsOf(item, budget);
        if (!p) return null;
        const next: Platform[] = [];
        for (const a of acc) {
          for (const b of p) {
            const clash = PLATFORM_KEYS.some((k) => a[k] !== undefined && b[k] !== undefined && a[k] !== b[k]);
            if (!clash) next.push({ ...a, ...b });
          }
        }
        if (next.length > 32) return null;
        acc = next;
      }
      return acc;
    }
    default:
      return null;
  }
}

const describe = (p: Platform): string =>
  [p['osgi.os'] ? (OS_NAMES[p['osgi.os']] ?? p['osgi.os']) : 'any OS', p['osgi.arch'], p['osgi.ws'] ? `(${p['osgi.ws']})` : undefined]
    .filter(Boolean)
    .join(' ');

/**
 * Which platforms a unit with this filter installs on, in words, or null for "every platform"
 * (no filter, or a filter on nothing platform-related). A filter on platforms that this reader
 * cannot reduce to a list (a negation, say) is shown as written.
 */
export function describePlatformFilter(filter: string | null): string[] | null {
  if (filter === null || !/osgi\.(os|arch|ws)\b/.test(filter)) return null;
  let parsed: LdapFilter;
  try {
    parsed = parseLdapFilter(filter);
  } catch {
    return [filter.trim().slice(0, 200)];
  }
  const platforms = platformsOf(parsed);
  if (!platforms) return [filter.trim().slice(0, 200)];
  return [...new Set(platforms.map(describe))];
}

/**
 * The platforms of a node held by several plug-ins (one per platform, say): the union of theirs,
 * or null when any copy installs everywhere.
 */
export function unionPlatforms(a: string[] | null, b: string[] | null): string[] | null {
  if (a === null || b === null) return null;
  return [...new Set([...a, ...b])];
}

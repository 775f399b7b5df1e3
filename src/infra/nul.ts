import type { Multipart } from '@fastify/multipart';
import { ValidationError } from './errors.js';

/**
 * One rule for every free-text value a request carries: no NUL (U+0000). PostgreSQL `text`
 * cannot hold it (it fails the statement, which would surface as a 500), SQLite would store it
 * and cut strings short in C code, and no name, email, URL, cursor or parameter needs it. The
 * few fields that take arbitrary command output (log text, a run's error) replace it instead and
 * say so in their schema; their routes list them in `nulReplacedIn`.
 *
 * The same rule refuses unpaired UTF-16 surrogates (`"\ud800"` in JSON): they have no UTF-8
 * form, so the database, the environment of a command or a log would silently hold U+FFFD
 * instead of what was sent.
 */
export const NUL_MESSAGE = 'must not contain the NUL character (U+0000) or an unpaired surrogate (\\ud800–\\udfff)';

const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether a string holds what no stored or passed-on text may: NUL or an unpaired surrogate. */
export function unstorableText(value: string): boolean {
  return value.includes('\u0000') || UNPAIRED_SURROGATE.test(value);
}

/** A 400 naming the first field whose value (or key) holds NUL. */
export class NulCharacterError extends ValidationError {
  constructor(readonly field: string) {
    super(`${field} ${NUL_MESSAGE}`, [{ field, message: NUL_MESSAGE }]);
    this.name = 'NulCharacterError';
  }
}

/** A key as it appears in a field path: a NUL in the key itself is shown escaped. */
const shown = (key: string) => key.replaceAll('\u0000', '\\u0000').replace(/[\uD800-\uDFFF]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);

/**
 * The dotted path (`chunks.0.text`, as validation errors name fields) of the first string or
 * object key under `value` that holds NUL, or null. `skip` matches paths whose NUL is allowed,
 * with `*` for any one segment.
 */
export function nulFieldIn(value: unknown, path: string[] = [], skip: string[][] = []): string | null {
  if (typeof value === 'string') {
    if (!unstorableText(value) || skip.some((s) => matches(s, path))) return null;
    return path.length ? path.join('.') : '(body)';
  }
  if (typeof value !== 'object' || value === null) return null;
  const entries: [string, unknown][] = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  for (const [k, v] of entries) {
    const at = [...path, shown(k)];
    if (unstorableText(k)) return at.join('.');
    const found = nulFieldIn(v, at, skip);
    if (found) return found;
  }
  return null;
}

function matches(pattern: string[], path: string[]): boolean {
  return pattern.length === path.length && pattern.every((p, i) => p === '*' || p === path[i]);
}

/** Throws NulCharacterError when `value` (a string, or strings inside it) holds NUL. */
export function refuseNul(value: unknown, field: string): void {
  const found = nulFieldIn(value, [field]);
  if (found) throw new NulCharacterError(found);
}

/**
 * The parts of a multipart request, refused at the first field name, text value or file name
 * (`filename` or RFC 5987 `filename*`, both decoded) holding NUL. A refused file part's stream is
 * drained so the request ends normally.
 */
export async function* nulCheckedParts(parts: AsyncIterable<Multipart>): AsyncIterable<Multipart> {
  for await (const part of parts) {
    const field = unstorableText(part.fieldname) ? shown(part.fieldname) : null;
    if (part.type === 'file') {
      if (field || unstorableText(part.filename)) {
        part.file.resume();
        throw new NulCharacterError(field ?? `${part.fieldname}.filename`);
      }
    } else {
      if (field) throw new NulCharacterError(field);
      refuseNul(part.value, part.fieldname);
    }
    yield part;
  }
}

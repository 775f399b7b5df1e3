/**
 * Public URLs of uploaded files (spec area A "Files"):
 *   /<product-id>/<label>/…           update site contents   → <product>/update-site/<label>/…
 *   /<product-id>/<label>.zip         update site archive    → <product>/update-site/<label>.zip
 *   /assets/<product-id>/<path>       assets                 → <product>/assets/<path>
 *   /workflows/<product-id>/<path>    example workflows      → <product>/workflows/<path>
 * Each segment is percent-decoded on its own, after splitting, and then checked: an encoded
 * `/`, `\`, `..`, NUL or reserved name is refused, so encoded forms cannot traverse.
 */
import { RESERVED_NAME_PREFIX } from '../../infra/storage.js';
import { productIdProblem } from '../products/slug.js';

const isProductId = (s: string) => productIdProblem(s) === null;

/** Longest decoded path the download host looks up. */
export const MAX_DOWNLOAD_PATH_BYTES = 1024;

export interface DownloadTarget {
  productId: string;
  area: 'update-site' | 'assets' | 'workflows';
  /** Storage key of the file or folder. */
  key: string;
  /** Whether the URL ended with `/` (a folder index was asked for). */
  slash: boolean;
}

export type ParsedPath = { ok: true; target: DownloadTarget } | { ok: false; status: 400 | 404; reason: string };

function decodeSegment(raw: string): string | null {
  let s: string;
  try {
    s = decodeURIComponent(raw);
  } catch {
    return null;
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we refuse
  if (s === '' || s === '.' || s === '..' || /[/\\\u0000-\u001f\u007f]/.test(s) || Buffer.byteLength(s) > 255) return null;
  return s;
}

export function parseDownloadPath(pathname: string): ParsedPath {
  if (!pathname.startsWith('/')) return { ok: false, status: 400, reason: 'bad path' };
  const slash = pathname.length > 1 && pathname.endsWith('/');
  const raw = pathname.slice(1, slash ? -1 : undefined).split('/');
  const segments: string[] = [];
  for (const r of raw) {
    const s = decodeSegment(r);
    if (s === null) return { ok: false, status: 400, reason: 'invalid path segment' };
    if (s.startsWith(RESERVED_NAME_PREFIX)) return { ok: false, status: 404, reason: 'not found' };
    segments.push(s);
  }
  // The whole path is bounded like the SFTP tree's (a longer one cannot name a stored file):
  // 404, never the file system's ENAMETOOLONG.
  if (Buffer.byteLength(segments.join('/')) > MAX_DOWNLOAD_PATH_BYTES) return { ok: false, status: 404, reason: 'not found' };
  const [first, second, ...rest] = segments;
  if (first === 'assets' || first === 'workflows') {
    if (!second || !isProductId(second) || rest.length === 0) return { ok: false, status: 404, reason: 'not found' };
    return { ok: true, target: { productId: second, area: first, key: [second, first, ...rest].join('/'), slash } };
  }
  if (!first || !second || !isProductId(first)) return { ok: false, status: 404, reason: 'not found' };
  return {
    ok: true,
    target: { productId: first, area: 'update-site', key: [first, 'update-site', second, ...rest].join('/'), slash },
  };
}

/**
 * Public URLs of uploaded files (spec area A "Files"):
 *   /<product-id>/<label>/…           update site contents   → <product>/update-site/<label>/…
 *                                     (a released label: its current release, downloads/releases.ts)
 *   /<product-id>/<label>@<n>/…       release n of the label → <product>/releases/<label>/<n>/…
 *                                     (only once accepted: a copy is moved there when its crawl passes)
 *   /<product-id>/<label>@<n>~<secret>/…  copy n while its crawl reads it
 *                                     → <product>/releases/<label>/candidate-<n>-<secret>/…
 *   /<product-id>/<label>.zip         update site archive    → <product>/update-site/<label>.zip
 *   /assets/<product-id>/<path>       assets                 → <product>/assets/<path>
 *   /workflows/<product-id>/<path>    example workflows      → <product>/workflows/<path>
 * Each segment is percent-decoded on its own, after splitting, and then checked: an encoded
 * `/`, `\`, `..`, NUL or reserved name is refused, so encoded forms cannot traverse.
 */
import { RESERVED_NAME_PREFIX } from '../../infra/storage.js';
import { isLabel } from '../files/tree.js';
import { productIdProblem } from '../products/slug.js';
import { CANDIDATE_SECRET, releaseKeys } from '../releases/service.js';

const isProductId = (s: string) => productIdProblem(s) === null;

/** `<label>@<n>`: release n of a label (1 to 999,999,999, no leading zero: one spelling per release). */
const RELEASE_SEGMENT = /^(.+)@([1-9][0-9]{0,8})$/;
/** `<label>@<n>~<secret>`: copy n of a label while it is crawled (releases/service.ts candidateSegment). */
const CANDIDATE_SEGMENT = /^(.+)@([1-9][0-9]{0,8})~([^~]+)$/;

/** Longest decoded path the download host looks up. */
export const MAX_DOWNLOAD_PATH_BYTES = 1024;

export interface DownloadTarget {
  productId: string;
  area: 'update-site' | 'assets' | 'workflows';
  /** Storage key of the file or folder. */
  key: string;
  /** Whether the URL ended with `/` (a folder index was asked for). */
  slash: boolean;
  /**
   * Below a label's folder (`/<product>/<label>/…` or `/<product>/<label>@<n>/…`): the label,
   * the release the URL names (null: the current one), and the path inside (`''` for the folder).
   */
  inLabel?: { label: string; release: number | null; rest: string };
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
    // The example workflows' own folder has an index (`/workflows/<id>/`): product pages link it.
    const folderRoot = first === 'workflows' && rest.length === 0;
    if (!second || !isProductId(second) || (rest.length === 0 && !folderRoot)) return { ok: false, status: 404, reason: 'not found' };
    return { ok: true, target: { productId: second, area: first, key: [second, first, ...rest].join('/'), slash } };
  }
  if (!first || !second || !isProductId(first)) return { ok: false, status: 404, reason: 'not found' };
  const copy = CANDIDATE_SEGMENT.exec(second);
  if (copy) {
    const [, label, n, secret] = copy as unknown as [string, string, string, string];
    if (!isLabel(label) || !CANDIDATE_SECRET.test(secret)) return { ok: false, status: 404, reason: 'not found' };
    return {
      ok: true,
      target: {
        productId: first,
        area: 'update-site',
        key: [releaseKeys.candidate(first, label, Number(n), secret), ...rest].join('/'),
        slash,
        inLabel: { label, release: Number(n), rest: rest.join('/') },
      },
    };
  }
  const pinned = RELEASE_SEGMENT.exec(second);
  if (pinned) {
    // `@` is in no label (files/tree.ts isLabel), so `<label>@<n>` names nothing uploaded.
    const [, label, n] = pinned as unknown as [string, string, string];
    if (!isLabel(label)) return { ok: false, status: 404, reason: 'not found' };
    return {
      ok: true,
      target: {
        productId: first,
        area: 'update-site',
        key: [first, 'releases', label, n, ...rest].join('/'),
        slash,
        inLabel: { label, release: Number(n), rest: rest.join('/') },
      },
    };
  }
  const target: DownloadTarget = { productId: first, area: 'update-site', key: [first, 'update-site', second, ...rest].join('/'), slash };
  // `/<product>/<label>` alone may be the folder (redirected to `…/`); `<label>.zip` is a file beside it.
  if (isLabel(second) && (rest.length > 0 || slash || !second.endsWith('.zip'))) target.inLabel = { label: second, release: null, rest: rest.join('/') };
  return { ok: true, target };
}

/**
 * The label a target is under (`/<product>/<label>/…`, `/<product>/<label>@<n>/…` or the archive
 * `/<product>/<label>.zip`), or null (assets, workflows, anything else).
 */
export function labelOfTarget(t: DownloadTarget): string | null {
  if (t.inLabel) return t.inLabel.label;
  if (t.area !== 'update-site') return null;
  const name = t.key.slice(t.productId.length + '/update-site/'.length);
  return name.endsWith('.zip') && !name.includes('/') && isLabel(name.slice(0, -'.zip'.length)) ? name.slice(0, -'.zip'.length) : null;
}

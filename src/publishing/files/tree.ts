/**
 * The virtual file tree of one product (spec area A "Files"): `/update-site`, `/assets` and
 * `/workflows`, always present; the root itself is read-only. Paths from clients are resolved
 * here, lexically and once, into a path inside the product's tree; nothing else interprets
 * client paths, so `..`, absolute paths, NUL, backslashes and over-long names are settled here.
 */
import { RESERVED_NAME_PREFIX } from '../../infra/storage.js';
import { MAX_LABEL_LENGTH } from '../model/label-limit.js';

export const AREAS = ['update-site', 'assets', 'workflows'] as const;
export type Area = (typeof AREAS)[number];

/** Longest path inside a product's tree, in UTF-8 bytes (the `product_files.path` key). */
export const MAX_PATH_BYTES = 1024;
/** Longest single name (common filesystem limit, NAME_MAX). */
export const MAX_NAME_BYTES = 255;

const LABEL = new RegExp(`^[A-Za-z0-9._-]{1,${MAX_LABEL_LENGTH}}$`);

/** A label is one path segment of letters, digits, `.`, `_`, `-`, not `.`/`..` (the issue). */
export function isLabel(s: string): boolean {
  return LABEL.test(s) && s !== '.' && s !== '..';
}

/** Uploaders that write to a side name and rename (WinSCP `.filepart`, rclone `.partial`). */
const ARCHIVE_SIDE_NAME = /^(.+)\.zip(?:\.(?:filepart|partial|part|tmp))?$/;

export type TreePath =
  | { kind: 'root' }
  | { kind: 'area'; area: Area; path: string }
  | { kind: 'inside'; area: Area; path: string; segments: string[] };

export class TreePathError extends Error {
  constructor(
    readonly reason: 'invalid' | 'outside',
    message: string,
  ) {
    super(message);
    this.name = 'TreePathError';
  }
}

/**
 * Resolves a client path against the root (the session's only working directory) like a
 * chroot: `..` stops at the root, so `/../../etc/passwd` is `/etc/passwd` inside the tree and
 * names nothing. Throws TreePathError for names no file may have and for paths outside the
 * three folders.
 */
export function resolveTreePath(raw: string): TreePath {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we refuse
  if (/[\\\u0000-\u001f\u007f]/.test(raw)) throw new TreePathError('invalid', 'backslashes and control characters are not allowed in names');
  const segments: string[] = [];
  for (const s of raw.split('/')) {
    if (s === '' || s === '.') continue;
    if (s === '..') segments.pop();
    else {
      if (Buffer.byteLength(s) > MAX_NAME_BYTES) throw new TreePathError('invalid', `a name is longer than ${MAX_NAME_BYTES} bytes`);
      segments.push(s);
    }
  }
  if (segments.length === 0) return { kind: 'root' };
  const [area, ...rest] = segments as [string, ...string[]];
  if (!(AREAS as readonly string[]).includes(area)) throw new TreePathError('outside', 'only /update-site, /assets and /workflows exist');
  const path = segments.join('/');
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) throw new TreePathError('invalid', `the path is longer than ${MAX_PATH_BYTES} bytes`);
  if (rest.some((s) => s.startsWith(RESERVED_NAME_PREFIX))) {
    throw new TreePathError('invalid', `names starting with ${RESERVED_NAME_PREFIX} are reserved`);
  }
  if (rest.length === 0) return { kind: 'area', area: area as Area, path };
  return { kind: 'inside', area: area as Area, path, segments: rest };
}

/**
 * Why a file (or folder) may not be created at `p`, or null when it may. Below `update-site/`
 * only label folders and `<label>.zip` archives live; the root and the areas are fixed.
 */
export function creationProblem(p: TreePath, kind: 'file' | 'dir'): string | null {
  if (p.kind === 'root' || p.kind === 'area') return 'the root and its three folders are fixed';
  if (p.area !== 'update-site') return null;
  const top = p.segments[0] as string;
  if (p.segments.length > 1 || kind === 'dir') {
    return isLabel(top) ? null : `"${top}" is not a valid label (letters, digits, ".", "_", "-")`;
  }
  const m = ARCHIVE_SIDE_NAME.exec(top);
  if (!m || !isLabel(m[1] as string)) {
    return 'update-site/ holds only <label>/ folders and <label>.zip archives';
  }
  return null;
}

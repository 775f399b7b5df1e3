/**
 * HTTP semantics of serving one stored file: validators and conditional requests (RFC 9110
 * §8.8, §13), single byte ranges (RFC 9110 §14), content types.
 */

const TYPES: Record<string, string> = {
  jar: 'application/java-archive',
  xml: 'application/xml',
  xz: 'application/x-xz',
  zip: 'application/zip',
  svg: 'image/svg+xml',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  ico: 'image/x-icon',
  // KNIME's own type for exported workflows (a zip inside); browsers download it.
  knwf: 'application/vnd.knime.workflow+zip',
  knar: 'application/vnd.knime.workflow-group+zip',
  json: 'application/json',
  txt: 'text/plain; charset=utf-8',
  md: 'text/markdown; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  pdf: 'application/pdf',
  gz: 'application/gzip',
  mp4: 'video/mp4',
  webm: 'video/webm',
  // p2's index file is plain properties text.
  index: 'text/plain; charset=utf-8',
  properties: 'text/plain; charset=utf-8',
};

/** Anything unknown (HTML included: this host never renders vendor markup) is opaque bytes. */
export function contentTypeOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return (dot >= 0 && TYPES[name.slice(dot + 1).toLowerCase()]) || 'application/octet-stream';
}

/**
 * Strong validator (RFC 9110 §8.8.3) from size, modification time and the storage version. Size
 * and time alone repeat when a file is replaced by one of the same size stamped with the same
 * time (reproducible builds do that), and a client would then keep its old copy after a 304;
 * the version changes with every upload. It is hashed (FNV-1a, 32 bits) so the answer does not
 * show what the storage's versions are made of (an inode number, say).
 */
export function etagOf(size: number, mtimeMs: number, version: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < version.length; i++) h = Math.imul(h ^ version.charCodeAt(i), 0x01000193);
  return `"${size.toString(16)}-${Math.floor(mtimeMs).toString(16)}-${(h >>> 0).toString(16)}"`;
}

function etagMatches(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  // If-None-Match uses the weak comparison (RFC 9110 §13.1.2).
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}

/** True when the client's copy is current (RFC 9110 §13.2.2 order: If-None-Match wins). */
export function notModified(headers: { ifNoneMatch?: string | undefined; ifModifiedSince?: string | undefined }, etag: string, lastModifiedMs: number): boolean {
  if (headers.ifNoneMatch !== undefined) return etagMatches(headers.ifNoneMatch, etag);
  if (headers.ifModifiedSince !== undefined) {
    const since = Date.parse(headers.ifModifiedSince);
    return !Number.isNaN(since) && Math.floor(lastModifiedMs / 1000) * 1000 <= since;
  }
  return false;
}

export type RangeResult = { kind: 'full' } | { kind: 'partial'; start: number; end: number } | { kind: 'unsatisfiable' };

/**
 * One `bytes=` range of a file of `size` bytes. Several ranges are answered with the whole
 * file (allowed, RFC 9110 §14.2); so is an If-Range that is not the current ETag. A date in
 * If-Range never matches: Last-Modified is not a strong validator here (two uploads within one
 * second share it), and RFC 9110 §13.1.5 lets a range be sent on a date only when it is, so a
 * resumed download is never stitched from two versions.
 */
export function rangeOf(header: string | undefined, ifRange: string | undefined, size: number, etag: string): RangeResult {
  if (!header) return { kind: 'full' };
  if (ifRange !== undefined && ifRange !== etag) return { kind: 'full' };
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return { kind: 'full' };
  let start: number;
  let end: number;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return { kind: 'unsatisfiable' };
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (m[2] !== '' && Number(m[2]) < start) return { kind: 'full' };
  }
  if (start >= size || size === 0) return { kind: 'unsatisfiable' };
  return { kind: 'partial', start, end };
}

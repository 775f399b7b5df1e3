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

/** Weak comparison for If-None-Match (RFC 9110 §13.1.2), strong for If-Match (§13.1.1: a W/ tag never matches). */
function etagMatches(header: string, etag: string, weak: boolean): boolean {
  if (header.trim() === '*') return true;
  return header.split(',').some((t) => {
    const tag = t.trim();
    return (weak ? tag.replace(/^W\//, '') : tag) === etag;
  });
}

/**
 * True when the file has not changed since `header`'s date. Last-Modified has a one-second
 * resolution and an upload may carry any time, even one in the future: the date must be the
 * file's own Last-Modified, or not earlier than it and not in the future. A date later than
 * now cannot have come from this file's current version unless it is its own (RFC 2616
 * §14.25 called such dates invalid), so a file replaced after a future-dated one is never
 * taken for it (RFC 9110 §13.1.3, §13.1.4 compare against the current Last-Modified).
 * null when the header is not a date, which RFC 9110 says to ignore.
 */
function unchangedSince(header: string, lastModifiedMs: number, nowMs: number): boolean | null {
  const since = Date.parse(header);
  if (Number.isNaN(since)) return null;
  const lastModified = Math.floor(lastModifiedMs / 1000) * 1000;
  return lastModified === since || (lastModified <= since && since <= nowMs);
}

export interface ConditionalHeaders {
  ifMatch?: string | undefined;
  ifUnmodifiedSince?: string | undefined;
  ifNoneMatch?: string | undefined;
  ifModifiedSince?: string | undefined;
}

/**
 * The preconditions of a GET or HEAD in RFC 9110 §13.2.2's order: If-Match, else
 * If-Unmodified-Since (412 when false: the client's copy is not this file, so a resumed
 * download must not get a range of it); then If-None-Match, else If-Modified-Since (304 when
 * the client's copy is current).
 */
export function evaluatePreconditions(headers: ConditionalHeaders, etag: string, lastModifiedMs: number, nowMs: number): 'proceed' | 'not-modified' | 'failed' {
  if (headers.ifMatch !== undefined) {
    if (!etagMatches(headers.ifMatch, etag, false)) return 'failed';
  } else if (headers.ifUnmodifiedSince !== undefined) {
    if (unchangedSince(headers.ifUnmodifiedSince, lastModifiedMs, nowMs) === false) return 'failed';
  }
  if (headers.ifNoneMatch !== undefined) return etagMatches(headers.ifNoneMatch, etag, true) ? 'not-modified' : 'proceed';
  if (headers.ifModifiedSince !== undefined && unchangedSince(headers.ifModifiedSince, lastModifiedMs, nowMs)) return 'not-modified';
  return 'proceed';
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

/**
 * Whether `Accept-Encoding` takes gzip (RFC 9110 §12.5.3): `gzip` or `x-gzip` with a non-zero
 * weight, or `*` with one when gzip is not refused by name. No header: identity only.
 */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  let named: boolean | null = null;
  let any = false;
  for (const part of header.split(',')) {
    const [coding = '', ...params] = part.split(';').map((s) => s.trim());
    const q = params.map((p) => /^q=([0-9.]+)$/i.exec(p)?.[1]).find((v) => v !== undefined);
    const accepted = q === undefined || Number(q) > 0;
    const name = coding.toLowerCase();
    if (name === 'gzip' || name === 'x-gzip') named = (named ?? false) || accepted;
    else if (name === '*') any = accepted;
  }
  return named ?? any;
}

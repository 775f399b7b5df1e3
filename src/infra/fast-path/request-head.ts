/**
 * A deliberately narrow HTTP/1.1 request-head recogniser for the download host's fast path
 * (fast-path.ts). It does not parse HTTP in general: it only says "this head is one of the
 * plain cases the fast path may answer" or "not that", and "not that" always means the bytes
 * go, untouched, to node:http, which answers everything else (errors included).
 *
 * Recognised, and only exactly this (RFC 9112 §3, §5; stricter than the grammar allows):
 *   ("GET" / "HEAD") SP origin-form SP "HTTP/1.1" CRLF
 *   *( field-name ":" OWS field-value OWS CRLF )
 *   CRLF
 * - origin-form: "/" followed by unreserved, sub-delims, ":", "@", "/", "%", "?" only (no
 *   absolute-form, no "*", no spaces, no bytes >= 0x80, no leading empty lines);
 * - field-name: 1*tchar; field-value: VCHAR, SP and HTAB only (no obs-text, no obs-fold, no
 *   bare CR or LF, no whitespace before the colon);
 * - exactly one Host; at most one Connection, whose value is `keep-alive` or `close`; at most
 *   one X-Request-Id and one X-Forwarded-For (node:http joins repeated ones; left to it);
 * - none of the fields that give a request a body or change its answer or its connection:
 *   Content-Length, Transfer-Encoding, Expect, Upgrade, Proxy-Connection, Range, If-Range,
 *   If-None-Match, If-Modified-Since, If-Match, If-Unmodified-Since;
 * - at most MAX_HEAD_BYTES in all and MAX_HEADER_FIELDS fields.
 */

/** A head longer than this is left to node:http (its own limit is 16 KiB, answered with 431). */
export const MAX_HEAD_BYTES = 8 * 1024;
/** More fields than this: left to node:http. */
export const MAX_HEADER_FIELDS = 32;

export interface SimpleRequest {
  method: 'GET' | 'HEAD';
  /** The request-target as sent (ASCII only), query included. */
  target: string;
  /** `Connection: close` was sent: answer, then end the connection. */
  close: boolean;
  /** The X-Request-Id value sent (a proxy's id for the request), null when none. */
  requestId: string | null;
  /** The X-Forwarded-For value sent (the addresses proxies forwarded for), null when none. */
  forwardedFor: string | null;
  /** Offset just past the head's final CRLF CRLF. */
  end: number;
}

export type HeadResult = SimpleRequest | 'incomplete' | 'other';

const CR = 0x0d;
const LF = 0x0a;
const SP = 0x20;
const HTAB = 0x09;

const tableOf = (chars: string, ranges: [number, number][] = []) => {
  const t = new Uint8Array(256);
  for (const c of chars) t[c.charCodeAt(0)] = 1;
  for (const [a, b] of ranges) for (let i = a; i <= b; i++) t[i] = 1;
  return t;
};
const ALNUM: [number, number][] = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x61, 0x7a],
];
/** RFC 3986 unreserved / sub-delims / ":" / "@" (pchar without the percent rule), "/", "%" and "?". */
const TARGET = tableOf("-._~!$&'()*+,;=:@/%?", ALNUM);
/** RFC 9110 §5.6.2 tchar. */
const TCHAR = tableOf("!#$%&'*+-.^_`|~", ALNUM);
/** VCHAR, SP and HTAB (RFC 9110 §5.5 field-value without obs-text). */
const VALUE = tableOf(' \t', [[0x21, 0x7e]]);

/** Fields whose presence makes the request something else than a plain GET/HEAD of a file. */
const REFUSED = new Set([
  'content-length',
  'transfer-encoding',
  'expect',
  'upgrade',
  'proxy-connection',
  'range',
  'if-range',
  'if-none-match',
  'if-modified-since',
  'if-match',
  'if-unmodified-since',
]);

const VERSION = Buffer.from(' HTTP/1.1\r\n', 'latin1');
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');

/** The field names looked at below, by length: every other name is skipped without a string. */
const NAMED = new Map<number, string[]>();
for (const name of [...REFUSED, 'host', 'connection', 'x-request-id', 'x-forwarded-for']) NAMED.set(name.length, [...(NAMED.get(name.length) ?? []), name]);

/** The field name at buf[start, end) if it is one of NAMED (ASCII case-insensitive), else null. */
function knownName(buf: Buffer, start: number, end: number): string | null {
  const candidates = NAMED.get(end - start);
  if (candidates === undefined) return null;
  for (const name of candidates) {
    let k = 0;
    // Among tchar bytes, `| 0x20` maps only a letter's two cases to that lower-case letter,
    // and only "-" to "-" (the names here hold nothing else).
    while (k < name.length && ((buf[start + k] as number) | 0x20) === name.charCodeAt(k)) k++;
    if (k === name.length) return name;
  }
  return null;
}

/**
 * Looks at the head starting at `start` in `buf`: a SimpleRequest, 'incomplete' (no final
 * CRLF CRLF yet, and still within the size cap) or 'other' (anything else).
 */
export function parseSimpleHead(buf: Buffer, start: number): HeadResult {
  const limit = Math.min(buf.length, start + MAX_HEAD_BYTES);
  const headEnd = buf.indexOf(HEAD_END, start);
  if (headEnd < 0 || headEnd + 4 > limit) return headEnd < 0 && buf.length - start < MAX_HEAD_BYTES ? 'incomplete' : 'other';
  // Request line.
  let method: 'GET' | 'HEAD';
  let i: number;
  if (buf[start] === 0x47 && buf[start + 1] === 0x45 && buf[start + 2] === 0x54 && buf[start + 3] === SP) {
    method = 'GET';
    i = start + 4;
  } else if (buf[start] === 0x48 && buf[start + 1] === 0x45 && buf[start + 2] === 0x41 && buf[start + 3] === 0x44 && buf[start + 4] === SP) {
    method = 'HEAD';
    i = start + 5;
  } else return 'other';
  const targetStart = i;
  if (buf[i] !== 0x2f) return 'other';
  while (i < headEnd && TARGET[buf[i] as number] === 1) i++;
  const target = buf.toString('latin1', targetStart, i);
  if (i + VERSION.length > buf.length || buf.compare(VERSION, 0, VERSION.length, i, i + VERSION.length) !== 0) return 'other';
  i += VERSION.length;
  // Header fields, up to the empty line at headEnd + 2.
  let fields = 0;
  let hosts = 0;
  let connections = 0;
  let close = false;
  let requestId: string | null = null;
  let requestIds = 0;
  let forwardedFor: string | null = null;
  let forwardedFors = 0;
  while (i < headEnd + 2) {
    if (++fields > MAX_HEADER_FIELDS) return 'other';
    const nameStart = i;
    while (TCHAR[buf[i] as number] === 1) i++;
    if (i === nameStart || buf[i] !== 0x3a) return 'other';
    const name = knownName(buf, nameStart, i);
    i++;
    while (buf[i] === SP || buf[i] === HTAB) i++;
    const valueStart = i;
    while (VALUE[buf[i] as number] === 1) i++;
    if (buf[i] !== CR || buf[i + 1] !== LF) return 'other';
    let valueEnd = i;
    while (valueEnd > valueStart && (buf[valueEnd - 1] === SP || buf[valueEnd - 1] === HTAB)) valueEnd--;
    i += 2;
    if (name === null) continue;
    if (REFUSED.has(name)) return 'other';
    if (name === 'host') hosts++;
    else if (name === 'connection') {
      connections++;
      const value = buf.toString('latin1', valueStart, valueEnd).toLowerCase();
      if (value === 'close') close = true;
      else if (value !== 'keep-alive') return 'other';
    } else if (name === 'x-request-id') {
      requestIds++;
      requestId = buf.toString('latin1', valueStart, valueEnd);
    } else if (name === 'x-forwarded-for') {
      forwardedFors++;
      forwardedFor = buf.toString('latin1', valueStart, valueEnd);
    }
  }
  // node:http joins repeated X-Request-Id and X-Forwarded-For fields with ", "; such a head is left to it.
  if (hosts !== 1 || connections > 1 || requestIds > 1 || forwardedFors > 1) return 'other';
  return { method, target, close, requestId, forwardedFor, end: headEnd + 4 };
}

/*
 * The bound on an attempt's stored log (RUNNER_MAX_LOG_BYTES): which chunks fit, where the one
 * that crosses the limit is cut, and the line that says so. Pure text work, no SQL: the log
 * chunks' repository (logs-repository.ts) stores what this lets through.
 */

/** The line that ends an attempt's log cut at RUNNER_MAX_LOG_BYTES. */
export function logLimitMarker(maxBytes: number): string {
  return `[pier] this attempt's log reached its limit of ${formatBytes(maxBytes)} (RUNNER_MAX_LOG_BYTES): the rest of its output was dropped\n`;
}

function formatBytes(n: number): string {
  for (const [unit, size] of [['GiB', 1024 ** 3], ['MiB', 1024 ** 2], ['KiB', 1024]] as const) {
    if (n >= size && n % size === 0) return `${n / size} ${unit}`;
  }
  return `${n} bytes`;
}

/**
 * The longest start of `text` that is at most `maxBytes` in UTF-8, never splitting a character
 * (a surrogate pair counts as one four-byte character).
 */
export function utf8Prefix(text: string, maxBytes: number): string {
  let bytes = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    const size = pair ? 4 : c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
    if (bytes + size > maxBytes) break;
    bytes += size;
    i += pair ? 2 : 1;
  }
  return text.slice(0, i);
}

/**
 * The chunks (by sequence) that fit in an attempt's log holding `before` bytes of `maxBytes`:
 * the one that crosses the limit is cut there and ends with the marker, which takes the count
 * past `maxBytes`: from then on the log is `full` and nothing more is stored. Out-of-order chunks count too, so the bound holds
 * whatever order an executor sends them in.
 */
export function withinLogLimit(
  chunks: { seq: number; text: string }[],
  before: number,
  maxBytes: number,
): { stored: { seq: number; text: string }[]; bytes: number; full: boolean } {
  let bytes = before;
  // Past the limit only once the marker was stored (it takes the count beyond `maxBytes`).
  let full = bytes > maxBytes;
  const stored: { seq: number; text: string }[] = [];
  for (const c of [...chunks].sort((a, b) => a.seq - b.seq)) {
    if (full) break;
    const size = Buffer.byteLength(c.text);
    if (bytes + size <= maxBytes) {
      stored.push(c);
      bytes += size;
      continue;
    }
    const head = utf8Prefix(c.text, maxBytes - bytes);
    const marker = logLimitMarker(maxBytes);
    const text = `${head}${head === '' || head.endsWith('\n') ? '' : '\n'}${marker}`;
    stored.push({ seq: c.seq, text });
    bytes += Buffer.byteLength(text);
    full = true;
  }
  return { stored, bytes, full };
}

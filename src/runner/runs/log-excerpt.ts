/*
 * The end of a log within a budget, read backwards chunk by chunk: an assistant asking why a run
 * failed needs its last lines or its error lines, and a log of a million lines must not reach
 * it whole (nor be read whole to find them).
 */

/** Lines that name a failure, as workflow engines, JVMs and shells write them. */
export const ERROR_LINE = /\b(errors?|fatal|severe|failed|failure|traceback|panic|killed|denied)\b|(error|exception)s?\b/i;

/** Marks a line cut to fit the byte budget (its end is kept: that is where the message ends). */
export const CLIPPED = '…';

export interface ExcerptLimits {
  /** At most this many lines. */
  lines: number;
  /** At most this many bytes of UTF-8 in the lines kept (newlines between them not counted). */
  bytes: number;
  /** Keep only lines this accepts (all when absent). */
  keep?: (line: string) => boolean;
}

const CLIPPED_BYTES = Buffer.byteLength(CLIPPED);
/** How much of a cut line's start the filter keeps reading as earlier pieces arrive. */
const CUT_START_CHARS = 64;

/** The last `bytes` bytes of a line's UTF-8 (from a character boundary), marked as clipped. */
export function clipStart(line: string, bytes: number): string {
  const room = bytes - CLIPPED_BYTES;
  if (room <= 0) return '';
  const buf = Buffer.from(line);
  let start = Math.max(0, buf.length - room);
  // UTF-8 continuation bytes are 10xxxxxx: start at the next character's first byte.
  while (start < buf.length && (buf[start]! & 0xc0) === 0x80) start++;
  return CLIPPED + buf.subarray(start).toString();
}

/**
 * Collects the last lines of a text given from its end: `prepend` each earlier piece, then
 * `finish` at the start of the text (or of a section, with a heading line for it). Lines are
 * split on `\n`; a line may span pieces. Stops taking lines once `full`.
 */
export class TailCollector {
  /** Kept lines, newest first. */
  private readonly kept: string[] = [];
  private size = 0;
  /** The oldest line seen so far, possibly continued by earlier pieces (bounded, see prepend). */
  private pending = '';
  private pendingClipped = false;
  /** The pending line, as far as it was cut away, already passed the filter. */
  private pendingKept = false;
  /** The start of the cut pending line as seen so far (enough for the filter's words across pieces). */
  private cutStart = '';
  /** Whether anything has been seen since the last finish (a trailing newline ends no line). */
  private started = false;
  /** Lines kept from the current section (since the last finish). */
  private sectionLines = 0;
  /** Lines (or parts of one) passed over because the budget was spent or the filter refused them. */
  skipped = false;
  full = false;

  constructor(private readonly limits: ExcerptLimits) {
    if (limits.lines <= 0 || limits.bytes <= 0) this.full = true;
  }

  prepend(text: string): void {
    // An empty piece adds nothing (and must not be taken for the end of the text).
    if (text === '') return;
    if (this.full) {
      this.skipped = true;
      return;
    }
    if (this.pendingClipped) {
      // The pending line was cut to its end: its start, in this piece or earlier, is not shown,
      // but the filter reads it (an error named at a long line's start keeps the line).
      const nl = text.lastIndexOf('\n');
      const start = text.slice(nl + 1) + this.cutStart;
      this.pendingKept ||= this.passes(start);
      this.cutStart = start.slice(0, CUT_START_CHARS);
      if (nl < 0) return;
      this.offer(this.pending, true, this.pendingKept);
      this.pending = '';
      this.pendingClipped = false;
      this.pendingKept = false;
      if (this.full) {
        this.skipped = true;
        return;
      }
      text = text.slice(0, nl);
      this.pending = '';
      this.started = true;
      this.take(text.split('\n'), false);
      return;
    }
    const fresh = !this.started;
    this.started = true;
    // A piece inside one long line only lengthens the pending line: no split (joining is cheap,
    // splitting the whole line again for every piece would be quadratic in its length).
    if (!text.includes('\n')) {
      this.hold(text + this.pending);
      return;
    }
    this.take((text + this.pending).split('\n'), fresh && text.endsWith('\n'));
  }

  /**
   * Offers all parts but the first, newest first; the first may continue in an earlier piece and
   * stays pending. A line longer than the budget is held only as far as it can be shown, so one
   * endless line costs no memory.
   */
  private take(parts: string[], endsWithNewline: boolean): void {
    const head = parts.shift() ?? '';
    // The text's very end: a final newline closes the last line, it does not open an empty one.
    if (endsWithNewline && parts.length > 0) parts.pop();
    let i = parts.length - 1;
    for (; i >= 0 && !this.full; i--) this.offer(parts[i]!, false);
    if (this.full) {
      // Lines before the last one taken are not shown: the head is (the end of) one more.
      this.skipped = true;
      this.pending = '';
      return;
    }
    this.hold(head);
  }

  /**
   * Keeps `head` as the pending line, only as far as it can be shown: a UTF-16 unit is at least
   * one byte of UTF-8, so the last `bytes` units hold the last `bytes` bytes.
   */
  private hold(head: string): void {
    const bound = this.limits.bytes + 16;
    if (head.length > bound) {
      this.pendingKept ||= this.passes(head);
      this.cutStart = head.slice(0, CUT_START_CHARS);
      this.pending = head.slice(head.length - bound);
      this.pendingClipped = true;
    } else {
      this.pending = head;
    }
  }

  /** The start of the text (or of one section: `heading` is kept above its lines when they are). */
  finish(heading?: string): void {
    if (!this.full && this.started) this.offer(this.pending, this.pendingClipped, this.pendingKept);
    this.pending = '';
    this.pendingClipped = false;
    this.pendingKept = false;
    this.started = false;
    if (heading !== undefined && this.sectionLines > 0) {
      if (this.full) this.skipped = true;
      else this.offer(heading, false, true);
    }
    this.sectionLines = 0;
  }

  private passes(line: string): boolean {
    return !this.limits.keep || this.limits.keep(line);
  }

  private offer(line: string, clippedAlready: boolean, always = false): void {
    if (!always && !this.passes(line)) {
      this.skipped = true;
      return;
    }
    const room = this.limits.bytes - this.size;
    let shown = clippedAlready ? CLIPPED + line : line;
    let n = Buffer.byteLength(shown);
    if (n > room) {
      // The newest line is shown clipped rather than not at all; older ones end the excerpt.
      if (this.kept.length > 0) {
        this.full = true;
        this.skipped = true;
        return;
      }
      shown = clipStart(line, room);
      n = Buffer.byteLength(shown);
      this.skipped = true;
      // A clipped line is the oldest shown: nothing above it, and nothing at all when not even
      // the marker and one character fit.
      this.full = true;
      if (shown === '') return;
    }
    this.kept.push(shown);
    this.sectionLines++;
    this.size += n;
    if (this.kept.length >= this.limits.lines || this.size >= this.limits.bytes) this.full = true;
  }

  /** The lines kept, oldest first. */
  lines(): string[] {
    return [...this.kept].reverse();
  }

  get bytes(): number {
    return this.size;
  }
}

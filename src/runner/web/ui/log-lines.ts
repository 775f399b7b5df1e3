/**
 * A run's log as lines. Chunks are cut by size, not at line ends, so a line can span chunks: the
 * last line stays open until a newline (or the next attempt) closes it. Appends are cheap, and
 * the filtered view (attempt, search, errors only) is extended, not rebuilt, as lines arrive.
 */
import type { LogChunk } from './types.js';

export const ERROR_LINE = /error|exception|fatal|severe/i;

export class LogLines {
  readonly text: string[] = [];
  readonly attempt: number[] = [];
  /** When the runner received the chunk each line began in (the executor ships lines as they come). */
  readonly time: string[] = [];
  /** The last line has not ended yet (more of it may come). */
  open = false;
  /** The last chunk ended in CR: an LF at the start of the next one ends no other line. */
  #cr = false;
  /** Bumped on every change, for memoised views. */
  version = 0;

  append(chunks: LogChunk[]): void {
    for (const c of chunks) {
      const n = this.text.length;
      const text = this.#cr && n > 0 && this.attempt[n - 1] === c.attempt && c.text.startsWith('\n') ? c.text.slice(1) : c.text;
      this.#cr = text.endsWith('\r');
      const pieces = text.split(/\r\n|\n|\r/);
      const last = pieces.length - 1;
      let i = 0;
      if (this.open && n > 0 && this.attempt[n - 1] === c.attempt) {
        this.text[n - 1] += pieces[0]!;
        i = 1;
      }
      for (; i < last; i++) this.#push(pieces[i]!, c.attempt, c.createdAt);
      if (i === last) {
        // The piece after the last line end: a line begun, or nothing.
        this.open = pieces[last] !== '';
        if (this.open) this.#push(pieces[last]!, c.attempt, c.createdAt);
      }
    }
    this.version++;
  }

  #push(line: string, attempt: number, time: string): void {
    this.text.push(line);
    this.attempt.push(attempt);
    this.time.push(time);
  }

  attempts(): number[] {
    const seen = new Set(this.attempt);
    return [...seen].sort((a, b) => a - b);
  }
}

export interface LineFilter {
  attempt: number | null;
  query: string;
  errorsOnly: boolean;
}

/** The indices of the lines a filter keeps, brought up to date incrementally. */
export class FilteredView {
  indices: number[] = [];
  #checked = 0;
  #key = '';

  /** Indices into `lines` of the lines `f` keeps, or null when it keeps every line. */
  update(lines: LogLines, f: LineFilter): number[] | null {
    if (f.attempt === null && !f.query && !f.errorsOnly) return null;
    const key = `${f.attempt}\u0000${f.errorsOnly}\u0000${f.query}`;
    if (key !== this.#key) {
      this.#key = key;
      this.indices = [];
      this.#checked = 0;
    }
    // The last line checked may have grown since: check it again.
    const from = Math.max(0, this.#checked - 1);
    while (this.indices.length > 0 && this.indices[this.indices.length - 1]! >= from) this.indices.pop();
    const q = f.query.toLowerCase();
    for (let i = from; i < lines.text.length; i++) {
      const t = lines.text[i]!;
      if (f.attempt !== null && lines.attempt[i] !== f.attempt) continue;
      if (f.errorsOnly && !ERROR_LINE.test(t)) continue;
      if (q && !t.toLowerCase().includes(q)) continue;
      this.indices.push(i);
    }
    this.#checked = lines.text.length;
    return this.indices;
  }
}

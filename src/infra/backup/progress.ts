/**
 * Progress of a long copy on stderr: one line rewritten in place on a terminal, plain lines a
 * few seconds apart otherwise (a log file or CI output gets no carriage returns). stdout stays
 * free for the result.
 */
export interface ProgressSink {
  write(text: string): unknown;
  isTTY?: boolean;
}

/** A byte count for people: 512 B, 1.5 KiB, 12.0 MiB, 3.2 GiB. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${units[i]}`;
}

export class Progress {
  private files = 0;
  private bytes = 0;
  private lastAt = 0;
  private readonly tty: boolean;
  /** How often a line is written: 10 a second on a terminal, every 2 s otherwise. */
  private readonly everyMs: number;

  constructor(
    private readonly what: string,
    private readonly totalFiles: number,
    private readonly totalBytes: number,
    private readonly sink: ProgressSink = process.stderr,
    private readonly now: () => number = Date.now,
  ) {
    this.tty = !!sink.isTTY;
    this.everyMs = this.tty ? 100 : 2000;
    this.lastAt = now();
  }

  /** Called once per file done (copied or checked); `bytes` of it. */
  advance(bytes: number): void {
    this.files++;
    this.bytes += bytes;
    const at = this.now();
    if (at - this.lastAt >= this.everyMs) {
      this.lastAt = at;
      this.print(false);
    }
  }

  /** The final line (always written, so a log shows the totals). */
  done(): void {
    this.print(true);
  }

  private line(): string {
    return `pier: ${this.what}: ${this.files}/${this.totalFiles} files, ${formatBytes(this.bytes)}/${formatBytes(this.totalBytes)}`;
  }

  private print(final: boolean): void {
    if (this.tty) this.sink.write(`\r\x1b[2K${this.line()}${final ? '\n' : ''}`);
    else this.sink.write(`${this.line()}\n`);
  }
}

/** A one-off line on stderr (what is being done now). */
export function say(text: string, sink: ProgressSink = process.stderr): void {
  sink.write(`pier: ${text}\n`);
}

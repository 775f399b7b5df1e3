/**
 * Upload progress: a bar on a terminal (cli-progress), plain lines elsewhere (CI logs keep
 * every line, so a redrawn bar would flood them): one line at most every few seconds.
 */
import cliProgress from 'cli-progress';

export interface Progress {
  /** One more file done. */
  file(): void;
  /** Bytes sent (acknowledged) so far for files in flight. */
  bytes(n: number): void;
  done(): void;
}

const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;

export function uploadProgress(total: { files: number; bytes: number }, out: { isTTY: boolean; write(line: string): void }, everyMs = 5000): Progress {
  let files = 0;
  let bytes = 0;
  if (out.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: 'upload |{bar}| {percentage}% | {files}/{totalFiles} files | {sent} of {totalSize} | {eta_formatted}',
        hideCursor: true,
        stream: process.stderr,
        etaBuffer: 50,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(Math.max(1, total.bytes), 0, { files: 0, totalFiles: total.files, sent: mb(0), totalSize: mb(total.bytes) });
    const update = () => bar.update(bytes, { files, sent: mb(bytes) });
    return {
      file() {
        files++;
        update();
      },
      bytes(n) {
        bytes += n;
        update();
      },
      done() {
        bar.update(Math.max(1, total.bytes), { files, sent: mb(bytes) });
        bar.stop();
      },
    };
  }
  let last = Date.now();
  const line = () => `upload: ${files}/${total.files} files, ${mb(bytes)} of ${mb(total.bytes)}`;
  return {
    file() {
      files++;
      if (Date.now() - last >= everyMs) {
        last = Date.now();
        out.write(line());
      }
    },
    bytes(n) {
      bytes += n;
    },
    done() {
      out.write(line());
    },
  };
}

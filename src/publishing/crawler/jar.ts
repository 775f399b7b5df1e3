/**
 * Lazy reading of jars (zip) with yauzl: the central directory is listed, and only the entries
 * the crawler needs are inflated. Zip bombs are refused by caps on each entry's uncompressed
 * size, its compression ratio and the total inflated per jar — checked on the declared sizes
 * and again on the bytes actually produced (yauzl validates them against the header).
 */
import yauzl from 'yauzl';

export interface JarLimits {
  maxEntryBytes: number;
  maxTotalBytes: number;
  /** Uncompressed / compressed; above it an entry larger than 1 MiB counts as a bomb. */
  maxRatio: number;
}

export const DEFAULT_JAR_LIMITS: JarLimits = { maxEntryBytes: 16 * 1024 * 1024, maxTotalBytes: 64 * 1024 * 1024, maxRatio: 200 };

export class JarProblem extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JarProblem';
  }
}

export interface Jar {
  names(): string[];
  has(name: string): boolean;
  /** The entry's bytes, or null when absent; throws JarProblem past a cap. */
  read(name: string): Promise<Buffer | null>;
  close(): void;
}

export function openJar(bytes: Buffer, limits: JarLimits = DEFAULT_JAR_LIMITS): Promise<Jar> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(bytes, { lazyEntries: true, validateEntrySizes: true, strictFileNames: false }, (err, zip) => {
      if (err || !zip) return reject(new JarProblem(`not a readable zip: ${err?.message ?? 'unknown error'}`));
      const entries = new Map<string, yauzl.Entry>();
      let inflated = 0;
      zip.on('error', (e: Error) => reject(new JarProblem(`not a readable zip: ${e.message}`)));
      zip.on('entry', (entry: yauzl.Entry) => {
        if (!entry.fileName.endsWith('/')) entries.set(entry.fileName, entry);
        zip.readEntry();
      });
      zip.on('end', () =>
        resolve({
          names: () => [...entries.keys()],
          has: (name) => entries.has(name),
          read(name) {
            const entry = entries.get(name);
            if (!entry) return Promise.resolve(null);
            const size = entry.uncompressedSize;
            if (size > limits.maxEntryBytes) {
              return Promise.reject(new JarProblem(`${name}: ${size} bytes uncompressed is over the limit of ${limits.maxEntryBytes}`));
            }
            if (size > 1024 * 1024 && size / Math.max(1, entry.compressedSize) > limits.maxRatio) {
              return Promise.reject(new JarProblem(`${name}: compression ratio ${Math.round(size / Math.max(1, entry.compressedSize))}:1 looks like a zip bomb`));
            }
            if (inflated + size > limits.maxTotalBytes) {
              return Promise.reject(new JarProblem(`more than ${limits.maxTotalBytes} bytes inflated from one jar`));
            }
            inflated += size;
            return readEntry(zip, entry, limits.maxEntryBytes);
          },
          close: () => zip.close(),
        }),
      );
      zip.readEntry();
    });
  });
}

function readEntry(zip: yauzl.ZipFile, entry: yauzl.Entry, cap: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (err, stream) => {
      if (err || !stream) return reject(new JarProblem(`${entry.fileName}: ${err?.message ?? 'cannot read'}`));
      const chunks: Buffer[] = [];
      let total = 0;
      stream.on('data', (c: Buffer) => {
        total += c.length;
        if (total > cap) {
          stream.destroy(new JarProblem(`${entry.fileName}: more than ${cap} bytes`));
          return;
        }
        chunks.push(c);
      });
      stream.on('error', (e) => reject(e instanceof JarProblem ? e : new JarProblem(`${entry.fileName}: ${e.message}`)));
      stream.on('end', () => resolve(Buffer.concat(chunks, total)));
    });
  });
}

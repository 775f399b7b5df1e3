import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';

/** Largest total unpacked size of one workflow archive (a zip bomb stops here). */
const MAX_UNPACKED_BYTES = 4 * 1024 ** 3;

/**
 * Unpacks a workflow archive (.knwf, a zip) into `dir`. Entries that would land outside `dir`
 * (`../`, absolute paths: "zip slip") are refused, as are archives that unpack beyond 4 GiB.
 */
export async function unzipInto(archive: string, dir: string): Promise<void> {
  const root = path.resolve(dir);
  fs.mkdirSync(root, { recursive: true });
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(archive, { lazyEntries: true, strictFileNames: true }, (err, z) => (err || !z ? reject(err ?? new Error('unreadable zip')) : resolve(z))),
  );
  let total = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', resolve);
      // Every failure (a file where a directory must go: EEXIST/ENOTDIR, a full disk) rejects:
      // an exception thrown in this listener would end the whole executor process.
      zip.on('entry', (entry: yauzl.Entry) => {
        void extract(entry).then(() => zip.readEntry(), reject);
      });
      const extract = async (entry: yauzl.Entry): Promise<void> => {
        const target = path.resolve(root, entry.fileName);
        if (target !== root && !target.startsWith(root + path.sep)) {
          throw new Error(`archive entry ${entry.fileName} points outside the work directory`);
        }
        if (entry.fileName.endsWith('/')) {
          await fs.promises.mkdir(target, { recursive: true });
          return;
        }
        total += entry.uncompressedSize;
        if (total > MAX_UNPACKED_BYTES) throw new Error('the archive unpacks to more than 4 GiB');
        await fs.promises.mkdir(path.dirname(target), { recursive: true });
        const stream = await new Promise<NodeJS.ReadableStream>((resolve, fail) =>
          zip.openReadStream(entry, (err, s) => (err || !s ? fail(err ?? new Error('unreadable entry')) : resolve(s))),
        );
        await pipeline(stream, fs.createWriteStream(target));
      };
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
}

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
      zip.on('entry', (entry: yauzl.Entry) => {
        const target = path.resolve(root, entry.fileName);
        if (target !== root && !target.startsWith(root + path.sep)) {
          reject(new Error(`archive entry ${entry.fileName} points outside the work directory`));
          return;
        }
        if (entry.fileName.endsWith('/')) {
          fs.mkdirSync(target, { recursive: true });
          zip.readEntry();
          return;
        }
        total += entry.uncompressedSize;
        if (total > MAX_UNPACKED_BYTES) {
          reject(new Error('the archive unpacks to more than 4 GiB'));
          return;
        }
        fs.mkdirSync(path.dirname(target), { recursive: true });
        zip.openReadStream(entry, (err, stream) => {
          if (err || !stream) {
            reject(err ?? new Error('unreadable entry'));
            return;
          }
          pipeline(stream, fs.createWriteStream(target)).then(() => zip.readEntry(), reject);
        });
      });
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
}

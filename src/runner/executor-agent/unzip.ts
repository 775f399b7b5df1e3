import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';

/** Largest total unpacked size of one workflow archive (a zip bomb stops here). */
const MAX_UNPACKED_BYTES = 4 * 1024 ** 3;

/**
 * Unpacks a workflow archive (.knwf, a zip) into `dir`. Entries that would land outside `dir`
 * (`../`, absolute paths: "zip slip") are refused, as are archives that unpack beyond 4 GiB.
 *
 * Nothing already there is written through: every directory is made one component at a time and
 * must then be a real directory (not a symbolic link), and every file is created new
 * (O_CREAT | O_EXCL, which also refuses a link in its place). The executor unpacks into a fresh
 * folder no command can reach yet (see run-folder.ts); these checks keep even a link put there
 * from making it write anywhere else.
 */
export async function unzipInto(archive: string, dir: string): Promise<void> {
  const root = path.resolve(dir);
  await fs.promises.mkdir(root, { recursive: true });
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(archive, { lazyEntries: true, strictFileNames: true }, (err, z) => (err || !z ? reject(err ?? new Error('unreadable zip')) : resolve(z))),
  );
  let total = 0;
  /** Directories made or checked already (relative paths). */
  const made = new Set<string>(['']);
  const directory = async (entry: string, relative: string): Promise<void> => {
    if (made.has(relative)) return;
    await directory(entry, path.dirname(relative) === '.' ? '' : path.dirname(relative));
    const at = path.join(root, relative);
    await fs.promises.mkdir(at).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'EEXIST') throw e;
    });
    const stat = await fs.promises.lstat(at);
    if (!stat.isDirectory()) {
      throw new Error(`archive entry ${entry}: ${relative} is not a directory (${stat.isSymbolicLink() ? 'a symbolic link' : 'a file'}): refused`);
    }
    made.add(relative);
  };
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', resolve);
      // Every failure (a file where a directory must go, a full disk) rejects: an exception
      // thrown in this listener would end the whole executor process.
      zip.on('entry', (entry: yauzl.Entry) => {
        void extract(entry).then(() => zip.readEntry(), reject);
      });
      const extract = async (entry: yauzl.Entry): Promise<void> => {
        const target = path.resolve(root, entry.fileName);
        if (target !== root && !target.startsWith(root + path.sep)) {
          throw new Error(`archive entry ${entry.fileName} points outside the work directory`);
        }
        const relative = path.relative(root, target);
        if (entry.fileName.endsWith('/')) {
          await directory(entry.fileName, relative);
          return;
        }
        total += entry.uncompressedSize;
        if (total > MAX_UNPACKED_BYTES) throw new Error('the archive unpacks to more than 4 GiB');
        const parent = path.dirname(relative);
        await directory(entry.fileName, parent === '.' ? '' : parent);
        const stream = await new Promise<NodeJS.ReadableStream>((resolve, fail) =>
          zip.openReadStream(entry, (err, s) => (err || !s ? fail(err ?? new Error('unreadable entry')) : resolve(s))),
        );
        const flags = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW;
        const file = await fs.promises.open(target, flags, 0o666).catch((e: NodeJS.ErrnoException) => {
          (stream as NodeJS.ReadableStream & { destroy(): void }).destroy();
          throw e.code === 'EEXIST' ? new Error(`archive entry ${entry.fileName} is there already (a repeated entry, or a link in its place): refused`) : e;
        });
        // The write stream closes the file, also when the copy fails.
        await pipeline(stream, file.createWriteStream());
      };
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
}

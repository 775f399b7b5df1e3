import fs from 'node:fs';
import type { StoredEntry } from './storage.js';
import type { TemporaryFiles } from './storage-local-temps.js';

/*
 * What the parts of one local storage (storage-local.ts) share: where its keys lead, its count
 * of changes, its temporary files, and the file-system calls every part makes the same way.
 */

export interface LocalRoot {
  /** The path of a key below the root, once `checkKey` let it through. */
  resolve(key: string): string;
  /** Counts a change of what the storage holds (Storage.changes()). */
  changed(): void;
  temps: TemporaryFiles;
}

// Metadata calls (lstat, rename, unlink, utimes) are synchronous: each takes microseconds on
// a local disk, while a thread-pool round trip per call added up to most of the per-file cost
// of SFTP uploads of many small files (bench/sftp.ts); and the files service runs them inside
// a database transaction holding the product's lock, which they keep short. Reads and writes
// of file contents stay async.
export async function lstat(p: string): Promise<fs.Stats | null> {
  try {
    const st = fs.lstatSync(p);
    return st.isFile() || st.isDirectory() ? st : null;
  } catch (e) {
    if (['ENOENT', 'ENOTDIR', 'ENAMETOOLONG'].includes(String((e as NodeJS.ErrnoException).code))) return null;
    throw e;
  }
}

/** Uploads rename a new file into place: a new inode, and a new ctime for anything else. */
export const versionOf = (st: fs.Stats) => `${st.ino}:${st.ctimeMs}`;

export function entry(name: string, st: fs.Stats): StoredEntry {
  const dir = st.isDirectory();
  return { name, type: dir ? 'dir' : 'file', size: dir ? 0 : st.size, mtimeMs: Math.floor(st.mtimeMs), version: versionOf(st) };
}

export const writeAt = (fd: number, buffer: Buffer, offset: number, length: number, position: number) =>
  new Promise<number>((resolve, reject) =>
    fs.write(fd, buffer, offset, length, position, (err, n) => (err ? reject(err) : resolve(n))),
  );
export const readAt = (fd: number, buffer: Buffer, offset: number, length: number, position: number) =>
  new Promise<number>((resolve, reject) =>
    fs.read(fd, buffer, offset, length, position, (err, n) => (err ? reject(err) : resolve(n))),
  );

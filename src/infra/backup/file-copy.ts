import { createHash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { BackupError } from './errors.js';

/** Bytes read and written per step of a copy. */
const CHUNK = 1024 * 1024;

/** A storage location as a backup sees it. */
export interface StorageSource {
  /** Its name in the manifest (`publishing`, `runner`). */
  name: string;
  /** Absolute folder. */
  root: string;
  /** Relative POSIX folders below `root` that hold its files ('' = all of it). */
  include: string[];
  /**
   * Entries that are bookkeeping of work in flight (temporary files of uploads, leases), never
   * stored files: left out of a backup, with everything below them.
   */
  transient(relPath: string, isDir: boolean): boolean;
}

export interface FoundFile {
  path: string;
  size: number;
}

/** A symbolic link naming an entry of its own folder: a label's release pointer (`releases/<label>/current`). */
export interface FoundLink {
  path: string;
  target: string;
}

/**
 * Whether a link target is a plain name in the link's own folder: the only links Pier makes
 * (storage setPointer), and the only ones a restore recreates, so no link can reach outside.
 */
export function isPointerTarget(t: unknown): t is string {
  return typeof t === 'string' && t.length > 0 && t.length <= 255 && t !== '.' && t !== '..' && !/[/\\\0]/.test(t);
}

/**
 * Every folder and regular file of a storage location, and its pointers: symbolic links to a
 * name in their own folder, which only the storage makes (a label's current release, moved by a
 * rename); without them a restored deployment would serve no label's current release. Other
 * links and special files are not stored files (uploads never create them). `exclude` are
 * absolute folders of other storage locations that lie inside this one, copied under their own
 * name instead.
 */
export async function walkStorage(source: StorageSource, exclude: Set<string>): Promise<{ dirs: string[]; files: FoundFile[]; links: FoundLink[] }> {
  const dirs: string[] = [];
  const files: FoundFile[] = [];
  const links: FoundLink[] = [];
  const visit = async (rel: string): Promise<void> => {
    const abs = rel === '' ? source.root : path.join(source.root, rel);
    let entries: fs.Dirent[];
    try {
      entries = await fsp.readdir(abs, { withFileTypes: true });
    } catch (e) {
      // A folder removed while we walk (a product's folder renamed, a run deleted) holds nothing now.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return;
      throw e;
    }
    for (const d of entries) {
      const childRel = rel === '' ? d.name : `${rel}/${d.name}`;
      if (d.isDirectory()) {
        if (exclude.has(path.join(source.root, childRel)) || source.transient(childRel, true)) continue;
        dirs.push(childRel);
        await visit(childRel);
      } else if (d.isFile()) {
        if (source.transient(childRel, false)) continue;
        const st = await fsp.lstat(path.join(source.root, childRel)).catch(() => null);
        if (st?.isFile()) files.push({ path: childRel, size: st.size });
      } else if (d.isSymbolicLink()) {
        if (source.transient(childRel, false)) continue;
        let target: string;
        try {
          target = await fsp.readlink(path.join(source.root, childRel));
        } catch {
          continue; // moved or removed since the folder was read
        }
        if (isPointerTarget(target)) links.push({ path: childRel, target });
      }
    }
  };
  for (const top of source.include) {
    if (top !== '') {
      const st = await fsp.lstat(path.join(source.root, top)).catch(() => null);
      if (!st?.isDirectory()) continue;
      dirs.push(top);
    }
    await visit(top);
  }
  return { dirs, files, links };
}

/**
 * Sets a file's times to whole milliseconds as Pier reads them (`Math.floor(mtimeMs)`, e.g. the
 * publishing records' `modified_at`). Half a millisecond is added because seconds as a double
 * lose the last digit of ms/1000 about half the time (1700000000.123 is stored as …0.1229999),
 * and the restored file would then read one millisecond early and disagree with its record.
 */
async function setTimesMs(out: fsp.FileHandle, atimeMs: number, mtimeMs: number): Promise<void> {
  await out.utimes((Math.floor(atimeMs) + 0.5) / 1000, (Math.floor(mtimeMs) + 0.5) / 1000);
}

export interface CopiedFile {
  size: number;
  sha256: string;
  mtimeMs: number;
  mode: number;
}

/** Reads an open file from start to end, handing each chunk to `each`; answers the bytes read. */
async function readAll(handle: fsp.FileHandle, each: (chunk: Buffer) => Promise<void>): Promise<number> {
  const buffer = Buffer.allocUnsafe(CHUNK);
  let position = 0;
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, CHUNK, position);
    if (bytesRead === 0) return position;
    await each(buffer.subarray(0, bytesRead));
    position += bytesRead;
  }
}

async function writeFully(out: fsp.FileHandle, chunk: Buffer): Promise<void> {
  let done = 0;
  while (done < chunk.length) done += (await out.write(chunk, done, chunk.length - done)).bytesWritten;
}

/** Backup copies of stored files that have several names, by `<device>:<inode>` of the stored file. */
export type CopiedInodes = Map<string, Promise<{ to: string; copied: CopiedFile } | null>>;

/**
 * Copies one stored file into the backup, hashing what it copies. The file is opened once and
 * read through that descriptor: stored files are never changed in place (uploads write a
 * temporary file and rename it over the old one), so whatever version was opened is copied
 * whole, even if a newer one replaces it meanwhile. null when the file is gone (deleted since
 * the walk) or is no longer a regular file.
 *
 * With `inodes`, a stored file with several names (a label's releases hard-link the uploaded
 * files they share: releases/service.ts) is copied once: its other names become hard links to
 * that one copy in the backup, so a backup takes the room the storage takes, not once per
 * release. A name is linked only when its bytes hash to the copy's (an inode number freed and
 * reused during the backup names other bytes).
 */
export async function copyStoredFile(from: string, to: string, inodes: CopiedInodes | null = null): Promise<CopiedFile | null> {
  let input: fsp.FileHandle;
  try {
    input = await fsp.open(from, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR') return null;
    throw e;
  }
  try {
    const st = await input.stat({ bigint: true });
    if (!st.isFile()) return null;
    const id = `${st.dev}:${st.ino}`;
    const shared = inodes !== null && st.nlink > 1n;
    // Looked up and claimed with no wait in between: two names copied at once cannot both be first.
    const pending = shared ? inodes.get(id) : undefined;
    const earlier = pending ? await pending : undefined;
    if (earlier) {
      const hash = createHash('sha256');
      const size = await readAll(input, async (chunk) => {
        hash.update(chunk);
      });
      if (size === earlier.copied.size && hash.digest('hex') === earlier.copied.sha256) {
        await fsp.link(earlier.to, to);
        return earlier.copied;
      }
    }
    if (!shared || earlier) return await copyOpen(input, st, to);
    // The first of its names: the others wait for this copy.
    const copying = copyOpen(input, st, to).then((copied) => ({ to, copied }));
    inodes.set(id, copying.catch(() => null));
    return (await copying).copied;
  } finally {
    await input.close();
  }
}

async function copyOpen(input: fsp.FileHandle, st: fs.BigIntStats, to: string): Promise<CopiedFile> {
  const hash = createHash('sha256');
  const out = await fsp.open(to, 'wx', 0o600);
  let size: number;
  const mode = Number(st.mode) & 0o777;
  const mtimeMs = Number(st.mtimeMs);
  try {
    size = await readAll(input, async (chunk) => {
      hash.update(chunk);
      await writeFully(out, chunk);
    });
    await out.chmod(mode);
    await setTimesMs(out, Number(st.atimeMs), mtimeMs);
    await out.sync();
  } finally {
    await out.close();
  }
  return { size, sha256: hash.digest('hex'), mtimeMs: Math.floor(mtimeMs), mode };
}

/** sha256 and size of a file, read once. */
export async function hashFile(file: string): Promise<{ size: number; sha256: string }> {
  const input = await fsp.open(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  try {
    const hash = createHash('sha256');
    const size = await readAll(input, async (chunk) => {
      hash.update(chunk);
    });
    return { size, sha256: hash.digest('hex') };
  } finally {
    await input.close();
  }
}

/**
 * Copies a file out of a backup to `to` (which must not exist), checking size and sha256 on
 * the way; on a mismatch the partial copy is deleted and BackupError names the file.
 */
export async function copyChecked(
  from: string,
  to: string,
  expected: { size: number; sha256: string },
  meta: { mode: number; mtimeMs?: number },
): Promise<void> {
  const input = await fsp.open(from, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW).catch((e: NodeJS.ErrnoException) => {
    throw new BackupError(e.code === 'ENOENT' ? `${from} is missing from the backup` : `cannot read ${from}: ${e.message}`);
  });
  let ok = false;
  try {
    // A backup folder is input from wherever it came from: a link to a device (/dev/zero) or a
    // folder link on the way to the name would otherwise be read without end.
    if (!(await input.stat()).isFile()) throw new BackupError(`${from} is not a regular file`);
    const hash = createHash('sha256');
    const out = await fsp.open(to, 'wx', 0o600);
    try {
      let read = 0;
      const size = await readAll(input, async (chunk) => {
        read += chunk.length;
        if (read > expected.size) throw new BackupError(`${from} is larger than the manifest says (${expected.size} bytes)`);
        hash.update(chunk);
        await writeFully(out, chunk);
      });
      const sha256 = hash.digest('hex');
      if (size !== expected.size || sha256 !== expected.sha256) {
        throw new BackupError(`${from} does not match the manifest (size ${size}, sha256 ${sha256}; expected size ${expected.size}, sha256 ${expected.sha256})`);
      }
      // Permission bits only: no set-user-id, set-group-id or sticky bit from a manifest.
      await out.chmod(meta.mode & 0o777);
      if (meta.mtimeMs !== undefined) await setTimesMs(out, meta.mtimeMs, meta.mtimeMs);
      await out.sync();
      ok = true;
    } finally {
      await out.close();
      if (!ok) await fsp.rm(to, { force: true });
    }
  } finally {
    await input.close();
  }
}

/** Whether `dir` holds any file, link or special file below it (empty folders do not count). */
export function holdsFiles(dir: string): string | null {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  for (const d of entries) {
    const p = path.join(dir, d.name);
    if (!d.isDirectory()) return p;
    const inner = holdsFiles(p);
    if (inner) return inner;
  }
  return null;
}

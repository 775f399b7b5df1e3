import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  checkKey,
  KeptCopyTooLargeError,
  type PendingWrite,
  RESERVED_NAME_PREFIX,
  type Storage,
  type StoredEntry,
  type StoredList,
  type StoredReader,
} from './storage.js';
import { fileLinksBelow, linkTreeInto, removeTreeBounded } from './storage-tree.js';

const TEMP_PREFIX = `${RESERVED_NAME_PREFIX}tmp-`;
/** Leases of the instances writing to this storage, one file each (see `sweepTemporary`). */
const LEASE_DIR = `${RESERVED_NAME_PREFIX}instances`;
/** `.pier-tmp-<instance>_<random>`: the owner of a temporary file is in its name. */
const TEMP_NAME = /^\.pier-tmp-([0-9a-z]{16})_/;
/**
 * Whether an entry of a storage location (a path relative to its root) is bookkeeping of work in
 * flight rather than a stored file: a temporary file of an upload, or the instances' leases.
 * Backups leave these out (a restored deployment has no uploads in flight).
 */
export function isTransientEntry(relPath: string): boolean {
  return relPath === LEASE_DIR || path.posix.basename(relPath).startsWith(TEMP_PREFIX);
}

/** Temporary files named before names carried their owner: only age tells they are leftovers. */
const UNOWNED_TEMP_MAX_AGE_MS = 60 * 60_000;
/** How long an instance's lease runs without a renewal (each sweep and each new upload renew it). */
const DEFAULT_LEASE_MS = 15 * 60_000;

/** Who writes temporary files: one per process unless a test stands in for another instance. */
export interface StorageInstance {
  id: string;
  pid: number;
  host: string;
}

const THIS_PROCESS: StorageInstance = { id: randomBytes(8).toString('hex'), pid: process.pid, host: os.hostname() };

/** Temporary files of open uploads, per instance id: what a sweep of this process must keep. */
const liveTemps = new Map<string, Set<string>>();

export interface LocalStorageOptions {
  /** Clock of the leases (tests inject one). */
  now?: () => number;
  leaseMs?: number;
  instance?: StorageInstance;
}

interface Lease {
  pid: number;
  host: string;
  expiresAt: number;
}

/** Whether a process of this machine still runs (EPERM: it runs under another user). */
function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const writeAt = (fd: number, buffer: Buffer, offset: number, length: number, position: number) =>
  new Promise<number>((resolve, reject) =>
    fs.write(fd, buffer, offset, length, position, (err, n) => (err ? reject(err) : resolve(n))),
  );
const readAt = (fd: number, buffer: Buffer, offset: number, length: number, position: number) =>
  new Promise<number>((resolve, reject) =>
    fs.read(fd, buffer, offset, length, position, (err, n) => (err ? reject(err) : resolve(n))),
  );

/**
 * statfs(2) magic numbers of file systems on a local disk or in memory (linux/magic.h): ext2-4,
 * XFS, Btrfs, F2FS, tmpfs, overlayfs, ZFS. On these a read of cached pages never waits on a
 * network, so a reader may offer `readNow`; on NFS, SMB, FUSE and the rest it does not.
 */
const LOCAL_FILESYSTEMS = new Set([0xef53, 0x58465342, 0x9123683e, 0xf2f52010, 0x01021994, 0x794c7630, 0x2fc12fc1]);

/** Entries statNames looks up at once: the thread pool works on them while the event loop serves. */
const STAT_BATCH = 64;

/** A name of an entry inside one folder: no separator, not `.` or `..`, not one of the storage's own. */
const plainName = (n: string) => n !== '' && n !== '.' && n !== '..' && !n.includes('/') && !n.includes('\u0000') && !n.startsWith(RESERVED_NAME_PREFIX);

/** Storage.changes() per storage root, shared by every localStorage of this process on it. */
const changeCounts = new Map<string, { n: number }>();

/** Uploads rename a new file into place: a new inode, and a new ctime for anything else. */
const versionOf = (st: fs.Stats) => `${st.ino}:${st.ctimeMs}`;

function entry(name: string, st: fs.Stats): StoredEntry {
  const dir = st.isDirectory();
  return { name, type: dir ? 'dir' : 'file', size: dir ? 0 : st.size, mtimeMs: Math.floor(st.mtimeMs), version: versionOf(st) };
}

/**
 * Storage in a local directory (PIER_STORAGE_DIR). Keys map to paths below the root only after
 * `checkKey`, so no key can name anything outside it; symbolic links are neither created nor
 * followed for the file itself (O_NOFOLLOW), and anything that is not a regular file or folder
 * is treated as absent.
 */
export function localStorage(root: string, options: LocalStorageOptions = {}): Storage {
  const { now = Date.now, leaseMs = DEFAULT_LEASE_MS, instance = THIS_PROCESS } = options;
  fs.mkdirSync(root, { recursive: true });
  const live = liveTemps.get(instance.id) ?? new Set<string>();
  liveTemps.set(instance.id, live);
  const leaseDir = path.join(root, LEASE_DIR);
  const leaseFile = (id: string) => path.join(leaseDir, id);
  let renewedAt = Number.NEGATIVE_INFINITY;
  /**
   * Tells instances sharing this storage that this one is alive, until `expiresAt`: written
   * before its first temporary file and renewed by every sweep, so another instance deletes
   * these files only once the lease ran out (or, on this machine, once the process is gone).
   */
  const renewLease = (force = false) => {
    const at = now();
    if (!force && at - renewedAt < leaseMs / 3) return;
    fs.mkdirSync(leaseDir, { recursive: true });
    const lease: Lease = { pid: instance.pid, host: instance.host, expiresAt: at + leaseMs };
    const temp = `${leaseFile(instance.id)}.${randomUUID()}`;
    fs.writeFileSync(temp, JSON.stringify(lease));
    fs.renameSync(temp, leaseFile(instance.id));
    renewedAt = at;
  };
  /** Whether the instance that named a temporary file may still be writing it. */
  const ownerAlive = (id: string, cache: Map<string, boolean>): boolean => {
    if (id === instance.id) return false; // this instance's live files are known by name
    const known = cache.get(id);
    if (known !== undefined) return known;
    let alive = false;
    try {
      const lease = JSON.parse(fs.readFileSync(leaseFile(id), 'utf8')) as Lease;
      const sameMachine = lease.host === instance.host;
      // On this machine a process that is gone (or whose pid is ours now: the previous run
      // of a restarted container) writes nothing more, whatever its lease says.
      alive = lease.expiresAt > now() && !(sameMachine && (lease.pid === instance.pid || !processRuns(lease.pid)));
    } catch {
      alive = false; // no lease (it is written before any temporary file) or a torn one: gone
    }
    cache.set(id, alive);
    return alive;
  };
  const base = `${path.resolve(root)}${path.sep}`;
  const onLocalDisk = LOCAL_FILESYSTEMS.has(fs.statfsSync(root).type);
  const counter = changeCounts.get(base) ?? { n: 0 };
  changeCounts.set(base, counter);
  const changed = () => {
    counter.n++;
  };
  // checkKey leaves only plain names joined by `/`, so appending is what path.join would give
  // (and it is on the download host's per-request path).
  const resolve = (key: string) => {
    checkKey(key);
    return base + key;
  };

  // Metadata calls (lstat, rename, unlink, utimes) are synchronous: each takes microseconds on
  // a local disk, while a thread-pool round trip per call added up to most of the per-file cost
  // of SFTP uploads of many small files (bench/sftp.ts); and the files service runs them inside
  // a database transaction holding the product's lock, which they keep short. Reads and writes
  // of file contents stay async.
  async function lstat(p: string): Promise<fs.Stats | null> {
    try {
      const st = fs.lstatSync(p);
      return st.isFile() || st.isDirectory() ? st : null;
    } catch (e) {
      if (['ENOENT', 'ENOTDIR', 'ENAMETOOLONG'].includes(String((e as NodeJS.ErrnoException).code))) return null;
      throw e;
    }
  }

  /** Deletes temporary files below `dir` for which `stale` says so. */
  async function sweep(dir: string, stale: (file: string, name: string) => boolean): Promise<number> {
    let removed = 0;
    let names: fs.Dirent[];
    try {
      names = await fsp.readdir(dir, { withFileTypes: true });
    } catch {
      return 0;
    }
    for (const d of names) {
      const p = path.join(dir, d.name);
      if (d.isDirectory() && d.name.startsWith(TEMP_PREFIX)) {
        // A release copy being built (linkTree) or a tree being removed (removeTree) by a
        // process that died: its hard links would keep replaced files' bytes on disk for good.
        if (stale(p, d.name)) {
          await fsp.rm(p, { recursive: true, force: true });
          removed++;
        }
      } else if (d.isDirectory()) {
        if (d.name !== LEASE_DIR) removed += await sweep(p, stale);
      } else if (d.name.startsWith(TEMP_PREFIX) && stale(p, d.name)) {
        await fsp.rm(p, { force: true });
        removed++;
      }
    }
    return removed;
  }

  return {
    async stat(key) {
      const st = await lstat(resolve(key));
      return st ? entry(path.posix.basename(key), st) : null;
    },

    async list(key) {
      const dir = resolve(key);
      let dirents: fs.Dirent[];
      try {
        dirents = await fsp.readdir(dir, { withFileTypes: true });
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ENAMETOOLONG') return null;
        throw e;
      }
      const out: StoredEntry[] = [];
      for (const d of dirents) {
        if (d.name.startsWith(RESERVED_NAME_PREFIX) || !(d.isFile() || d.isDirectory())) continue;
        const st = await lstat(path.join(dir, d.name));
        if (st) out.push(entry(d.name, st));
      }
      return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },

    async walk(key) {
      const top = resolve(key);
      const out: (StoredEntry & { path: string })[] = [];
      const visit = async (dir: string, rel: string): Promise<boolean> => {
        let dirents: fs.Dirent[];
        try {
          dirents = await fsp.readdir(dir, { withFileTypes: true });
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          if (code === 'ENOENT' || code === 'ENOTDIR') return false;
          throw e;
        }
        for (const d of dirents) {
          if (d.name.startsWith(RESERVED_NAME_PREFIX) || !(d.isFile() || d.isDirectory())) continue;
          const st = await lstat(path.join(dir, d.name));
          if (!st) continue;
          const p = rel === '' ? d.name : `${rel}/${d.name}`;
          out.push({ ...entry(d.name, st), path: p });
          if (st.isDirectory()) await visit(path.join(dir, d.name), p);
        }
        return true;
      };
      return (await visit(top, '')) ? out : null;
    },

    async listNames(key) {
      let dirents: fs.Dirent[];
      try {
        dirents = await fsp.readdir(resolve(key), { withFileTypes: true });
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ENAMETOOLONG') return null;
        throw e;
      }
      const names: string[] = [];
      for (const d of dirents) if (!d.name.startsWith(RESERVED_NAME_PREFIX) && (d.isFile() || d.isDirectory())) names.push(d.name);
      // The default order is by UTF-16 code units, as `<` compares, without a call per comparison.
      return names.sort();
    },

    async statNames(key, names) {
      const dir = resolve(key);
      const out: (StoredEntry | null)[] = new Array(names.length).fill(null);
      for (let i = 0; i < names.length; i += STAT_BATCH) {
        const batch = names.slice(i, i + STAT_BATCH);
        // A name that is not a plain entry name of this folder is never looked up.
        const stats = await Promise.all(batch.map((n) => (plainName(n) ? fsp.lstat(path.join(dir, n)).catch(() => null) : null)));
        stats.forEach((st, j) => {
          if (st && (st.isFile() || st.isDirectory())) out[i + j] = entry(batch[j] as string, st);
        });
      }
      return out;
    },

    async openList(key) {
      const dir = resolve(key);
      let handle: fs.Dir;
      try {
        // A small read-ahead: the folder is walked as the caller asks, never held whole.
        handle = await fsp.opendir(dir, { bufferSize: 64 });
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ENAMETOOLONG') return null;
        throw e;
      }
      let closed = false;
      const list: StoredList = {
        async next(max) {
          const out: StoredEntry[] = [];
          // Entries removed between reading the name and its lstat are skipped; an empty
          // answer means the end, so read on until something is left or the folder is done.
          while (out.length === 0 && !closed) {
            const names: string[] = [];
            let end = false;
            while (names.length < max) {
              const d = await handle.read();
              if (!d) {
                end = true;
                break;
              }
              if (!d.name.startsWith(RESERVED_NAME_PREFIX) && (d.isFile() || d.isDirectory())) names.push(d.name);
            }
            // Asynchronous lstat, one batch at a time: a huge folder never blocks the event loop.
            const stats = await Promise.all(names.map((n) => fsp.lstat(path.join(dir, n)).catch(() => null)));
            names.forEach((n, i) => {
              const st = stats[i];
              if (st && (st.isFile() || st.isDirectory())) out.push(entry(n, st));
            });
            if (end) break;
          }
          return out;
        },
        async close() {
          if (closed) return;
          closed = true;
          await handle.close().catch(() => {});
        },
      };
      return list;
    },

    async openRead(key) {
      // A raw descriptor opened, checked and closed synchronously (metadata work of
      // microseconds; FileHandle's thread-pool round trips were most of an SFTP OPEN and CLOSE
      // of a small file). Contents are read asynchronously.
      let fd: number;
      try {
        fd = fs.openSync(resolve(key), fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'ENAMETOOLONG') return null;
        throw e;
      }
      let st: fs.Stats;
      try {
        st = fs.fstatSync(fd);
      } catch (e) {
        fs.closeSync(fd);
        throw e;
      }
      if (!st.isFile()) {
        fs.closeSync(fd);
        return null;
      }
      // Closed exactly once, and only when no read is in flight (a client may close while its
      // reads still run): a closed number is reused by the next open, and a late read would
      // then return another file's bytes.
      let busy = 0;
      let closing = false;
      let closed = false;
      const closeFd = () => {
        closing = true;
        if (busy > 0 || closed) return;
        closed = true;
        fs.closeSync(fd);
      };
      const reader: StoredReader = {
        size: st.size,
        mtimeMs: Math.floor(st.mtimeMs),
        changedMs: Math.floor(st.ctimeMs),
        version: versionOf(st),
        ...(onLocalDisk && {
          readNow(buffer: Buffer, offset: number, length: number, position: number) {
            if (closing) throw new Error(`read of ${key} after close`);
            return fs.readSync(fd, buffer, offset, length, position);
          },
        }),
        async read(buffer, offset, length, position) {
          if (closing) throw new Error(`read of ${key} after close`);
          busy++;
          try {
            return await readAt(fd, buffer, offset, length, position);
          } finally {
            busy--;
            if (closing && busy === 0) closeFd();
          }
        },
        async close() {
          closeFd();
        },
      };
      return reader;
    },

    async readSmall(key, maxBytes) {
      // Synchronous on purpose: open + fstat + one read of a page-cached file take a few tens of
      // microseconds, while four thread-pool round trips cost several times that per request
      // (bench/downloads.ts). Larger files are streamed through openRead.
      let fd: number;
      try {
        fd = fs.openSync(resolve(key), fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'EISDIR' || code === 'ENAMETOOLONG') return null;
        throw e;
      }
      try {
        const st = fs.fstatSync(fd);
        if (!st.isFile()) return null;
        const base = { size: st.size, mtimeMs: Math.floor(st.mtimeMs), changedMs: Math.floor(st.ctimeMs), version: versionOf(st) };
        if (st.size > maxBytes) return { ...base, data: null };
        // Its own memory, not a slice of Node's shared 8 KiB pool: callers may keep small files
        // (the download host's cache), and a kept slice would pin a whole pool slab.
        const data = Buffer.allocUnsafeSlow(st.size);
        let got = 0;
        while (got < st.size) {
          const n = fs.readSync(fd, data, got, st.size - got, got);
          if (n === 0) break;
          got += n;
        }
        return { ...base, data: got === st.size ? data : data.subarray(0, got) };
      } finally {
        fs.closeSync(fd);
      }
    },

    async beginWrite(key, options = {}) {
      const target = resolve(key);
      // randomUUID draws from a cached entropy pool: randomBytes(8) was a synchronous OpenSSL call
      // per uploaded file, visible in SFTP profiles of many-small-file uploads.
      renewLease();
      const temp = path.join(path.dirname(target), `${TEMP_PREFIX}${instance.id}_${randomUUID()}`);
      let size = 0;
      // Known as live from before the copy creates it until it is renamed or deleted: a sweep
      // in between must not take it.
      live.add(temp);
      const discard = async () => {
        await fsp.rm(temp, { force: true });
        live.delete(temp);
      };
      let fd: number;
      try {
        if (options.keepExisting) {
          // Checked before copying (a kept copy takes as much room as the file) and after (the
          // file may have been replaced in between).
          const source = await lstat(target);
          const over = (n: number) => options.maxKeptBytes !== undefined && n > options.maxKeptBytes;
          if (source?.isFile()) {
            if (over(source.size)) throw new KeptCopyTooLargeError(key, source.size);
            try {
              await fsp.copyFile(target, temp, fs.constants.COPYFILE_EXCL | fs.constants.COPYFILE_FICLONE);
              size = fs.statSync(temp).size;
            } catch (e) {
              if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
            }
            if (over(size)) throw new KeptCopyTooLargeError(key, size);
          }
        }
        // A raw descriptor, opened and closed synchronously: creating or closing a freshly
        // written file is metadata work of microseconds, while a FileHandle costs two thread-pool
        // round trips per uploaded file, which the SFTP client waits for (OPEN and CLOSE replies;
        // bench/sftp.ts, many small files). Contents are still written asynchronously.
        // Read-write: SFTP clients may read back what they wrote through the same handle.
        fd = fs.openSync(temp, size > 0 ? 'r+' : 'wx+', 0o644);
      } catch (e) {
        await discard();
        throw e;
      }
      let state: 'open' | 'committed' | 'aborted' = 'open';
      // The descriptor is closed exactly once and only when no read or write on it is in flight
      // (an abort may come while pipelined writes still run): a closed number can be reused by
      // the next open, and a late write would then land in another file.
      let busy = 0;
      let closing = false;
      let closed = false;
      const closeFd = () => {
        closing = true;
        if (busy > 0 || closed) return;
        closed = true;
        fs.closeSync(fd);
      };
      const onFd = async <T>(op: () => Promise<T>): Promise<T> => {
        busy++;
        try {
          return await op();
        } finally {
          busy--;
          if (closing && busy === 0) closeFd();
        }
      };
      const pending: PendingWrite = {
        key,
        get size() {
          return size;
        },
        async write(buffer, offset, length, position) {
          if (state !== 'open') throw new Error(`write of ${key} already ${state}`);
          // Positional writes: SFTP clients pipeline WRITE requests that may complete in any order.
          let done = 0;
          while (done < length) {
            const bytesWritten = await onFd(() => writeAt(fd, buffer, offset + done, length - done, position + done));
            done += bytesWritten;
          }
          if (position + length > size) size = position + length;
        },
        async read(buffer, offset, length, position) {
          if (state !== 'open') throw new Error(`read of ${key} already ${state}`);
          return onFd(() => readAt(fd, buffer, offset, length, position));
        },
        async commit(times, record) {
          if (state !== 'open') throw new Error(`write of ${key} already ${state}`);
          state = 'committed';
          let finished: StoredEntry;
          let placed = false;
          const place = () => {
            if (placed) return;
            fs.renameSync(temp, target);
            placed = true;
            changed();
          };
          try {
            if (times) fs.futimesSync(fd, times.atimeMs / 1000, times.mtimeMs / 1000);
            finished = entry(path.posix.basename(key), fs.fstatSync(fd));
            closeFd();
            if (record) await record(finished, place);
            place();
          } catch (e) {
            closeFd();
            if (!placed) await fsp.rm(temp, { force: true });
            throw e;
          } finally {
            live.delete(temp);
          }
          return finished;
        },
        async abort() {
          if (state !== 'open') return;
          state = 'aborted';
          closeFd();
          await discard();
        },
      };
      return pending;
    },

    async remove(key) {
      const p = resolve(key);
      const st = await lstat(p);
      if (!st) return false;
      if (st.isDirectory()) throw Object.assign(new Error(`${key} is a folder`), { code: 'EISDIR' });
      fs.unlinkSync(p);
      changed();
      return true;
    },

    async makeDir(key, options = {}) {
      await fsp.mkdir(resolve(key), { recursive: !!options.recursive });
    },

    async removeDir(key) {
      const p = resolve(key);
      const names = await fsp.readdir(p);
      if (names.some((n) => !n.startsWith(TEMP_PREFIX))) throw Object.assign(new Error(`${key} is not empty`), { code: 'ENOTEMPTY' });
      for (const n of names) await fsp.rm(path.join(p, n), { force: true });
      await fsp.rmdir(p);
      changed();
    },

    async rename(from, to) {
      const source = resolve(from);
      const st = await lstat(source);
      if (!st) throw Object.assign(new Error(`${from} does not exist`), { code: 'ENOENT' });
      const target = resolve(to);
      fs.renameSync(source, target);
      changed();
      // Uploads still open below a moved folder can no longer be committed (their temporary
      // files moved along, their rename into place fails): their bytes go now, instead of
      // staying on disk uncounted until the next start's sweep. Writes still in
      // flight land in the unlinked file, freed when it is closed.
      if (st.isDirectory()) await sweep(target, () => true).catch(() => 0);
    },

    async setTimes(key, atimeMs, mtimeMs) {
      const p = resolve(key);
      const st = fs.lstatSync(p);
      if (st.isFile() && st.nlink > 1) {
        // The file is shared with a label's release (linkTree's hard links): times set on the
        // inode would change the released file too, whose Last-Modified and ETag must stay as
        // released. The upload folder gets its own copy (a reflink where the disk has them),
        // renamed into place as an upload would be.
        renewLease();
        const temp = path.join(path.dirname(p), `${TEMP_PREFIX}${instance.id}_${randomUUID()}`);
        live.add(temp);
        try {
          await fsp.copyFile(p, temp, fs.constants.COPYFILE_EXCL | fs.constants.COPYFILE_FICLONE);
          fs.chmodSync(temp, st.mode & 0o777);
          fs.utimesSync(temp, atimeMs / 1000, mtimeMs / 1000);
          fs.renameSync(temp, p);
        } catch (e) {
          fs.rmSync(temp, { force: true });
          throw e;
        } finally {
          live.delete(temp);
        }
      } else {
        fs.lutimesSync(p, atimeMs / 1000, mtimeMs / 1000);
        // Setting an entry's times in place changes nothing of its folder, yet a folder listing
        // shows them: the folder's version (its ctime) moves too, so whatever is cached by that
        // version (the download host's index pages) is built again.
        const dir = path.dirname(p);
        const d = fs.lstatSync(dir);
        fs.utimesSync(dir, d.atimeMs / 1000, d.mtimeMs / 1000);
      }
      changed();
    },

    async linkTree(from, to) {
      const source = resolve(from);
      const target = resolve(to);
      if (!(await lstat(source))?.isDirectory()) throw Object.assign(new Error(`${from} is not a folder`), { code: 'ENOTDIR' });
      await fsp.mkdir(path.dirname(target), { recursive: true });
      // Built under a temporary name and renamed into place: `to` exists whole or not at all.
      // Known as live (and this instance's lease renewed) while it is built: a sweep takes only
      // what a process that died left. The per-file work runs in a worker thread (storage-tree.ts):
      // a label of 100,000 files must not hold the event loop.
      renewLease();
      const building = path.join(path.dirname(target), `${TEMP_PREFIX}${instance.id}_${randomUUID()}`);
      live.add(building);
      let counts: { files: number; bytes: number };
      try {
        counts = await linkTreeInto(source, building, RESERVED_NAME_PREFIX);
        await fsp.rename(building, target);
      } catch (e) {
        await removeTreeBounded(building).catch(() => {});
        throw e;
      } finally {
        live.delete(building);
      }
      changed();
      return counts;
    },

    async removeTree(key) {
      const p = resolve(key);
      if (!(await lstat(p))) return;
      // Renamed aside first: readers see the whole folder or none of it, never a part.
      renewLease();
      const aside = path.join(path.dirname(p), `${TEMP_PREFIX}${instance.id}_${randomUUID()}`);
      live.add(aside);
      try {
        fs.renameSync(p, aside);
        changed();
        await removeTreeBounded(aside);
      } finally {
        live.delete(aside);
      }
    },

    async fileLinks(keys) {
      return fileLinksBelow(keys.map(resolve), RESERVED_NAME_PREFIX);
    },

    async setPointer(key, target) {
      const p = resolve(key);
      if (target === null) {
        fs.rmSync(p, { force: true });
      } else {
        checkKey(target);
        if (target.includes('/')) throw Object.assign(new Error(`pointer target ${target} is not a name`), { code: 'EINVAL' });
        fs.mkdirSync(path.dirname(p), { recursive: true });
        // A new link renamed over the old one: rename(2) replaces it atomically.
        renewLease();
        const temp = path.join(path.dirname(p), `${TEMP_PREFIX}${instance.id}_${randomUUID()}`);
        live.add(temp);
        try {
          fs.symlinkSync(target, temp);
          fs.renameSync(temp, p);
        } finally {
          live.delete(temp);
        }
      }
      changed();
    },

    pointer(key) {
      // Most labels have no pointer: an lstat that does not throw first (an exception per
      // download-host request cost a third of its throughput). No cache here: a replaced link
      // may reuse the old one's inode within one timestamp tick (the download host keeps reads
      // for a millisecond itself, downloads/releases.ts).
      const p = resolve(key);
      let st: fs.Stats | undefined;
      try {
        st = fs.lstatSync(p, { throwIfNoEntry: false });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
        throw e;
      }
      if (!st?.isSymbolicLink()) return null;
      try {
        return fs.readlinkSync(p);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null; // replaced between the two calls: gone
        throw e;
      }
    },

    pointerSetMs(key) {
      const st = fs.lstatSync(resolve(key), { throwIfNoEntry: false });
      return st?.isSymbolicLink() ? Math.floor(st.mtimeMs) : null;
    },

    changes: () => counter.n,

    async sweepTemporary(key) {
      renewLease(true);
      const owners = new Map<string, boolean>();
      const removed = await sweep(key === '' ? path.resolve(root) : resolve(key), (file, name) => {
        const owner = TEMP_NAME.exec(name)?.[1];
        if (owner === undefined) {
          const st = fs.lstatSync(file, { throwIfNoEntry: false });
          return !!st && st.mtimeMs < now() - UNOWNED_TEMP_MAX_AGE_MS;
        }
        return owner === instance.id ? !live.has(file) : !ownerAlive(owner, owners);
      });
      // Leases of instances that are gone, once their files are (a whole sweep only).
      if (key === '') {
        for (const [id, alive] of owners) if (!alive) fs.rmSync(leaseFile(id), { force: true });
      }
      return removed;
    },
  };
}

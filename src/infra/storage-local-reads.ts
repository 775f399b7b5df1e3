import fs from 'node:fs';
import type { Storage, StoredReader } from './storage.js';
import { type LocalRoot, readAt, versionOf } from './storage-local-fs.js';

/*
 * Reading a local storage's files: a reader for streaming (SFTP, large downloads) and a whole
 * small file at once (the download host). Symbolic links are not followed (O_NOFOLLOW).
 */

/**
 * statfs(2) magic numbers of file systems on a local disk or in memory (linux/magic.h): ext2-4,
 * XFS, Btrfs, F2FS, tmpfs, overlayfs, ZFS. On these a read of cached pages never waits on a
 * network, so a reader may offer `readNow`; on NFS, SMB, FUSE and the rest it does not.
 */
const LOCAL_FILESYSTEMS = new Set([0xef53, 0x58465342, 0x9123683e, 0xf2f52010, 0x01021994, 0x794c7630, 0x2fc12fc1]);

export function localReads(root: string, { resolve }: LocalRoot): Pick<Storage, 'openRead' | 'readSmall'> {
  const onLocalDisk = LOCAL_FILESYSTEMS.has(fs.statfsSync(root).type);
  return {

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
  };
}

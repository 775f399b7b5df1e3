import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { KeptCopyTooLargeError, type PendingWrite, type Storage, type StoredEntry } from './storage.js';
import { entry, type LocalRoot, lstat, readAt, writeAt } from './storage-local-fs.js';

/*
 * Writing a file of a local storage atomically: the bytes go to a temporary file beside it,
 * renamed into place on commit, so a reader sees the old file or the new one, never a part.
 */

export function localWrites({ resolve, changed, temps }: LocalRoot): Pick<Storage, 'beginWrite'> {
  return {
    async beginWrite(key, options = {}) {
      const target = resolve(key);
      // Known as live from before the copy creates it until it is renamed or deleted: a sweep
      // in between must not take it.
      const temp = temps.take(path.dirname(target));
      let size = 0;
      const discard = async () => {
        await fsp.rm(temp, { force: true });
        temps.done(temp);
      };
      /** The temporary file's descriptor once created; `opened` settles when it is. */
      let fd = -1;
      let opened: Promise<void> | null = null;
      /** A copy of the current file was made (even of an empty one): it is opened, not created. */
      let copied = false;
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
              copied = true;
              size = fs.statSync(temp).size;
            } catch (e) {
              if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
            }
            if (over(size)) throw new KeptCopyTooLargeError(key, size);
          }
        }
        if (copied) {
          // A raw descriptor, opened and closed synchronously: a FileHandle costs two thread-pool
          // round trips per uploaded file, which the SFTP client waits for (OPEN and CLOSE
          // replies; bench/sftp.ts, many small files). Contents are still written asynchronously.
          // Read-write: SFTP clients may read back what they wrote through the same handle.
          fd = fs.openSync(temp, 'r+', 0o644);
        } else {
          // A new file is created on the thread pool and not waited for here: the caller (an SFTP
          // OPEN) answers at once and the creation overlaps the client's first writes, which wait
          // for it. Creating a file can take a millisecond (on an ext4 without a journal the
          // kernel steps over every inode freed in the last minutes), which the event loop no
          // longer spends. A missing folder is still refused here, as the creation would be.
          const folder = fs.statSync(path.dirname(temp), { throwIfNoEntry: false });
          if (!folder?.isDirectory()) {
            const code = folder ? 'ENOTDIR' : 'ENOENT';
            throw Object.assign(new Error(`${code}: open '${temp}'`), { code, path: temp });
          }
          opened = new Promise<number>((resolve, reject) => fs.open(temp, 'wx+', 0o644, (err, n) => (err ? reject(err) : resolve(n)))).then((n) => {
            fd = n;
          });
          // Seen by whoever waits next (a write, the commit, the abort); never unhandled.
          opened.catch(() => {});
        }
      } catch (e) {
        await discard();
        throw e;
      }
      /** The descriptor, once the creation finished; throws its error if it failed. */
      const descriptor = async (): Promise<number> => {
        if (opened) await opened;
        return fd;
      };
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
        if (fd >= 0) fs.closeSync(fd);
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
            const bytesWritten = await onFd(async () => writeAt(await descriptor(), buffer, offset + done, length - done, position + done));
            done += bytesWritten;
          }
          if (position + length > size) size = position + length;
        },
        async read(buffer, offset, length, position) {
          if (state !== 'open') throw new Error(`read of ${key} already ${state}`);
          return onFd(async () => readAt(await descriptor(), buffer, offset, length, position));
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
            await descriptor();
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
            temps.done(temp);
          }
          return finished;
        },
        async abort() {
          if (state !== 'open') return;
          state = 'aborted';
          // A creation still under way would leave the file behind the removal.
          await opened?.catch(() => {});
          closeFd();
          await discard();
        },
      };
      return pending;
    },
  };
}

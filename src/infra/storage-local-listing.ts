import type fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { RESERVED_NAME_PREFIX, type Storage, type StoredEntry, type StoredList } from './storage.js';
import { entry, type LocalRoot, lstat } from './storage-local-fs.js';

/*
 * Reading a local storage's folders: one folder's entries whole, by name, or page by page, and
 * the walk of a whole tree. Names of the storage's own (RESERVED_NAME_PREFIX) and anything that
 * is not a regular file or folder are never listed.
 */

/** Entries statNames looks up at once: the thread pool works on them while the event loop serves. */
const STAT_BATCH = 64;

/** A name of an entry inside one folder: no separator, not `.` or `..`, not one of the storage's own. */
const plainName = (n: string) => n !== '' && n !== '.' && n !== '..' && !n.includes('/') && !n.includes('\u0000') && !n.startsWith(RESERVED_NAME_PREFIX);

export function localListing({ resolve }: LocalRoot): Pick<Storage, 'list' | 'walk' | 'listNames' | 'statNames' | 'openList'> {
  return {
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
  };
}


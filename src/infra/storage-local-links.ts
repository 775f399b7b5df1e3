import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { checkKey, RESERVED_NAME_PREFIX, type Storage } from './storage.js';
import { type LocalRoot, lstat } from './storage-local-fs.js';
import { fileLinksBelow, linkTreeInto, removeTreeBounded } from './storage-tree.js';

/*
 * Links in a local storage: a label's release copy as hard links to the upload folder's files
 * (and what such copies hold), removing a tree, times set on a file a release shares, and the
 * pointers (symbolic links) that name a label's current release. Each is built under a
 * temporary name and renamed into place, so readers see the old state or the new, whole.
 */

export function localLinks({ resolve, changed, temps }: LocalRoot): Pick<
  Storage,
  'setTimes' | 'linkTree' | 'removeTree' | 'fileLinks' | 'setPointer' | 'pointer' | 'pointerSetMs'
> {
  return {
    async setTimes(key, atimeMs, mtimeMs) {
      const p = resolve(key);
      const st = fs.lstatSync(p);
      if (st.isFile() && st.nlink > 1) {
        // The file is shared with a label's release (linkTree's hard links): times set on the
        // inode would change the released file too, whose Last-Modified and ETag must stay as
        // released. The upload folder gets its own copy (a reflink where the disk has them),
        // renamed into place as an upload would be.
        const temp = temps.take(path.dirname(p));
        try {
          await fsp.copyFile(p, temp, fs.constants.COPYFILE_EXCL | fs.constants.COPYFILE_FICLONE);
          fs.chmodSync(temp, st.mode & 0o777);
          fs.utimesSync(temp, atimeMs / 1000, mtimeMs / 1000);
          fs.renameSync(temp, p);
        } catch (e) {
          fs.rmSync(temp, { force: true });
          throw e;
        } finally {
          temps.done(temp);
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
      const building = temps.take(path.dirname(target));
      let counts: { files: number; bytes: number };
      try {
        counts = await linkTreeInto(source, building, RESERVED_NAME_PREFIX);
        await fsp.rename(building, target);
      } catch (e) {
        await removeTreeBounded(building).catch(() => {});
        throw e;
      } finally {
        temps.done(building);
      }
      changed();
      return counts;
    },

    async removeTree(key) {
      const p = resolve(key);
      if (!(await lstat(p))) return;
      // Renamed aside first: readers see the whole folder or none of it, never a part.
      const aside = temps.take(path.dirname(p));
      try {
        fs.renameSync(p, aside);
        changed();
        await removeTreeBounded(aside);
      } finally {
        temps.done(aside);
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
        const temp = temps.take(path.dirname(p));
        try {
          fs.symlinkSync(target, temp);
          fs.renameSync(temp, p);
        } finally {
          temps.done(temp);
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
  };
}

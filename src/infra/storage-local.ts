import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { checkKey, type Storage } from './storage.js';
import { entry, type LocalRoot, lstat } from './storage-local-fs.js';
import { localLinks } from './storage-local-links.js';
import { localListing } from './storage-local-listing.js';
import { localReads } from './storage-local-reads.js';
import { isTemporaryName, type LocalStorageOptions, temporaryFiles } from './storage-local-temps.js';
import { localWrites } from './storage-local-writes.js';

/** Storage.changes() per storage root, shared by every localStorage of this process on it. */
const changeCounts = new Map<string, { n: number }>();

/**
 * Storage in a local directory (PIER_STORAGE_DIR). Keys map to paths below the root only after
 * `checkKey`, so no key can name anything outside it; symbolic links are neither created nor
 * followed for the file itself (O_NOFOLLOW), and anything that is not a regular file or folder
 * is treated as absent.
 *
 * The single-entry operations are here; the rest is one module per concern, each given the same
 * root: listings and tree walks (storage-local-listing.ts), reads (storage-local-reads.ts),
 * atomic writes (storage-local-writes.ts), hard links, copies and pointers
 * (storage-local-links.ts), and the temporary files all of these leave while they work, with
 * the leases that say whose they are (storage-local-temps.ts).
 */
export function localStorage(root: string, options: LocalStorageOptions = {}): Storage {
  fs.mkdirSync(root, { recursive: true });
  const temps = temporaryFiles(root, options);
  const base = `${path.resolve(root)}${path.sep}`;
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
  const at: LocalRoot = { resolve, changed, temps };

  return {
    ...localListing(at),
    ...localReads(root, at),
    ...localWrites(at),
    ...localLinks(at),

    async stat(key) {
      const st = await lstat(resolve(key));
      return st ? entry(path.posix.basename(key), st) : null;
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
      if (names.some((n) => !isTemporaryName(n))) throw Object.assign(new Error(`${key} is not empty`), { code: 'ENOTEMPTY' });
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
      if (st.isDirectory()) await temps.sweepAll(target).catch(() => 0);
    },

    changes: () => counter.n,

    async sweepTemporary(key) {
      return temps.sweepStale(key === '' ? path.resolve(root) : resolve(key), key === '');
    },
  };
}

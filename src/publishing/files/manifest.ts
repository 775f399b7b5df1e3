/**
 * What SFTP shows of a label's folder, each file with its size and SHA-256: `pier publish` compares
 * its built site against it and moves only what differs
 * (docs/vendors.md#publishing-with-pier-publish). Reads the storage itself (what SFTP serves), not
 * the upload records, so a file put in place by any client is listed as it is.
 */
import { createHash } from 'node:crypto';
import type { Storage } from '../../infra/storage.js';

export interface ManifestFile {
  /** Relative to the folder listed (`update-site/<label>/`). */
  path: string;
  size: number;
  sha256: string;
}

export interface LabelManifest {
  label: string;
  files: ManifestFile[];
  /** Every folder below the label's folder, empty ones too (a publish removes those it no longer has). */
  folders: string[];
  /** `update-site/<label>.zip`, when there is one. */
  archive: { size: number; sha256: string } | null;
}

/** Hashes kept: one entry is ~200 bytes, so the cache stays under ~20 MB. */
const MAX_CACHED = 100_000;
/** Files hashed at once per request: the disk, not the CPU, is the limit. */
const HASH_CONCURRENCY = 4;
const CHUNK = 1024 * 1024;

const byString = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export function fileManifests(storage: Storage, options: { maxCached?: number } = {}) {
  const maxCached = options.maxCached ?? MAX_CACHED;
  /**
   * SHA-256 by storage key and storage version (StoredEntry.version changes with every new
   * content put in place, even at the same size and time), so a re-publish check reads no
   * bytes of unchanged files. A stale entry can never answer: its version no longer matches.
   */
  const cache = new Map<string, { version: string; sha256: string }>();
  let hashedBytes = 0;

  function remember(key: string, version: string, sha256: string): void {
    cache.delete(key);
    cache.set(key, { version, sha256 });
    // Map order is insertion order: the first key is the least recently hashed or used.
    while (cache.size > maxCached) cache.delete(cache.keys().next().value as string);
  }

  /** Size and SHA-256 of one stored file, or null when it is gone. Hashes the bytes it reads. */
  async function describe(key: string, listedVersion: string | undefined): Promise<{ size: number; sha256: string } | null> {
    const cached = cache.get(key);
    if (cached && listedVersion !== undefined && cached.version === listedVersion) {
      const stat = await storage.stat(key);
      // The listing may be a moment old: the version read now decides.
      if (stat?.version === cached.version) {
        remember(key, cached.version, cached.sha256);
        return { size: stat.size, sha256: cached.sha256 };
      }
    }
    const reader = await storage.openRead(key);
    if (!reader) return null;
    try {
      const hash = createHash('sha256');
      const buffer = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(1, reader.size)));
      let position = 0;
      for (;;) {
        const n = await reader.read(buffer, 0, buffer.length, position);
        if (n === 0) break;
        hash.update(buffer.subarray(0, n));
        position += n;
      }
      hashedBytes += position;
      const sha256 = hash.digest('hex');
      // The reader holds the file it opened: its version names exactly the bytes hashed.
      remember(key, reader.version, sha256);
      return { size: position, sha256 };
    } finally {
      await reader.close();
    }
  }

  return {
    /** Bytes read to hash so far (tests check that a second look at unchanged files reads none). */
    hashedBytes: () => hashedBytes,

    async label(productId: string, label: string): Promise<LabelManifest> {
      const base = `${productId}/update-site/${label}`;
      const entries = (await storage.walk(base)) ?? [];
      const files: ManifestFile[] = [];
      const folders: string[] = [];
      const todo = entries.filter((e) => {
        if (e.type === 'dir') folders.push(e.path);
        return e.type === 'file';
      });
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(HASH_CONCURRENCY, todo.length) }, async () => {
          while (next < todo.length) {
            const e = todo[next++]!;
            const d = await describe(`${base}/${e.path}`, e.version);
            if (d) files.push({ path: e.path, ...d });
          }
        }),
      );
      const zip = await storage.stat(`${base}.zip`);
      const archive = zip?.type === 'file' ? await describe(`${base}.zip`, zip.version) : null;
      return { label, files: files.sort((a, b) => byString(a.path, b.path)), folders: folders.sort(byString), archive };
    },
  };
}

export type FileManifests = ReturnType<typeof fileManifests>;

import type { FileLimits } from '../../infra/config.js';
import { KeptCopyTooLargeError, type PendingWrite, type Storage, type StoredEntry } from '../../infra/storage.js';
import { type LabelSummary, productFilesReader } from './reader.js';
import type { FilesRepository, StorageRow, UploadContext } from './repository.js';
import { AREAS } from './tree.js';

/** A write refused by a limit; the SFTP server reports `message` to the client as is. */
export class QuotaExceededError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'QuotaExceededError';
  }
}

export interface FilesServiceDeps {
  storage: Storage;
  repo: FilesRepository;
  /** Configured defaults; staff overrides per product live in the database. */
  limits: FileLimits;
  now?: () => Date;
}

/**
 * An upload in progress: a storage write checked against the product's limits on every write,
 * and once more when it is committed (other uploads of the product may have finished since it
 * began); a refused commit throws QuotaExceededError and leaves the previous file in place.
 */
export interface Upload extends Omit<PendingWrite, 'key' | 'commit'> {
  commit(times?: { atimeMs: number; mtimeMs: number }): Promise<StoredEntry>;
}

/** What a reconcile changed in a product's records, and the folders it counted. */
export interface ReconcileResult {
  added: number;
  updated: number;
  removed: number;
  folders: number;
}

export interface FilesSummary {
  files: number;
  bytes: number;
  /** What the current releases of its labels hold beyond the upload folders, counted in the quota (releases/usage.ts). */
  releases: { files: number; bytes: number };
  lastUploadAt: string | null;
  limits: FileLimits & { custom: Partial<FileLimits> };
  labels: LabelSummary[];
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * What of a refused quota current releases take (releases/usage.ts): files replaced or removed in
 * the upload folder after they were released, which downloaders still get.
 */
const releaseNote = (context: Pick<UploadContext, 'release_files' | 'release_bytes'>, unit: 'bytes' | 'files') => {
  const n = unit === 'bytes' ? context.release_bytes : context.release_files;
  return n > 0 ? `; ${n} ${unit} of it are files that only the current releases of its labels still hold` : '';
};

/** Copies of current files (uploads opened without TRUNC) made at once by one process. */
const MAX_COPIES_AT_ONCE = 4;

const keptCopyRefusal = (path: string, size: number, available: number) =>
  new QuotaExceededError(
    `storage quota exceeded: rewriting ${path} keeps a copy of its ${size} bytes, and the quota leaves ${available} bytes for it and the other copies open now`,
  );

/** At most `limit` tasks at once; the rest wait their turn. */
class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly limit: number) {}
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}

/**
 * Changes to a product's files: storage holds the bytes, the repository records finished
 * uploads (quotas, labels, change stamp). Paths are inside the product's tree (`assets/a.png`).
 */
export function filesService({ storage, repo, limits: defaults, now = () => new Date() }: FilesServiceDeps) {
  const key = (productId: string, path: string) => `${productId}/${path}`;
  const reader = productFilesReader(repo);

  async function limitsFor(productId: string) {
    return limitsOf(await repo.state(productId));
  }

  function limitsOf(state: Pick<StorageRow, 'quota_bytes' | 'quota_files' | 'max_file_bytes'> | undefined) {
    const custom: Partial<FileLimits> = {};
    if (state?.quota_bytes != null) custom.quotaBytes = Number(state.quota_bytes);
    if (state?.quota_files != null) custom.quotaFiles = Number(state.quota_files);
    if (state?.max_file_bytes != null) custom.maxFileBytes = Number(state.max_file_bytes);
    return { ...defaults, ...custom, custom };
  }

  /** Which limit a refused commit ran into, read after the fact (refusals are rare). */
  async function commitRefusal(productId: string, path: string, size: number): Promise<QuotaExceededError> {
    const context = await repo.uploadContext(productId, path);
    const limits = limitsOf(context);
    if (context.existing_size === null && context.files + 1 > limits.quotaFiles) {
      return new QuotaExceededError(`file-count quota exceeded: this product may store ${limits.quotaFiles} files${releaseNote(context, 'files')}`);
    }
    const used = context.bytes - (context.existing_size ?? 0);
    return new QuotaExceededError(
      `storage quota exceeded: this product may store ${limits.quotaBytes} bytes (${used} used by other files, this one has ${size})${releaseNote(context, 'bytes')}`,
    );
  }

  /**
   * Room the open uploads of each product hold on disk now: kept copies (see `beginKeptCopy`)
   * and the bytes written so far. Uploads count against the quota only once committed, so
   * without this many uploads opened at once could each fill the whole room the quota leaves.
   */
  const openBytes = new Map<string, number>();
  const copying = new Semaphore(MAX_COPIES_AT_ONCE);

  /** One upload's share of `openBytes`; `hold` changes it, `release` gives it back. */
  function roomClaim(productId: string) {
    let held = 0;
    const set = (bytes: number) => {
      const total = (openBytes.get(productId) ?? 0) - held + bytes;
      held = bytes;
      if (total > 0) openBytes.set(productId, total);
      else openBytes.delete(productId);
    };
    return {
      get held() {
        return held;
      },
      /** What the product's other open uploads hold. */
      others: () => (openBytes.get(productId) ?? 0) - held,
      hold: set,
      release: () => set(0),
    };
  }

  /**
   * Starts an upload from a copy of the current file (an SFTP open without TRUNC). A copy
   * takes as much room as the file before a byte is written, so it must fit the room the
   * quota leaves besides the other open uploads; the room is claimed before copying.
   */
  async function beginKeptCopy(productId: string, path: string, available: number, claim: ReturnType<typeof roomClaim>) {
    const room = available - claim.others();
    const stored = await storage.stat(key(productId, path));
    const size = stored?.type === 'file' ? stored.size : 0;
    if (size > room) throw keptCopyRefusal(path, size, available);
    claim.hold(size);
    try {
      // Copies run a few at a time: each reads and writes a whole file.
      const pending = await copying.run(() => storage.beginWrite(key(productId, path), { keepExisting: true, maxKeptBytes: room }));
      // The file may have been replaced between the stat and the copy: claim what was copied.
      claim.hold(pending.size);
      return pending;
    } catch (e) {
      claim.release();
      if (e instanceof KeptCopyTooLargeError) throw keptCopyRefusal(path, e.size, available);
      throw e;
    }
  }

  /**
   * Makes the records of a product's files and its folder count match what storage holds,
   * under the product's lock: a process killed between putting a file in place and
   * committing its record (or between the two steps of a remove) leaves them apart. Files
   * found are recorded whatever the quotas say (they are served); records of files that are
   * gone are dropped. Each change moves the product's counter, so pages and the crawler follow.
   */
  async function reconcile(productId: string): Promise<ReconcileResult> {
    return repo.inProductLock(productId, async (rows) => {
      const found = new Map<string, StoredEntry>();
      let folders = 0;
      for (const area of AREAS) {
        for (const e of (await storage.walk(key(productId, area))) ?? []) {
          if (e.type === 'dir') folders++;
          else found.set(`${area}/${e.path}`, e);
        }
      }
      const result: ReconcileResult = { added: 0, updated: 0, removed: 0, folders };
      const at = now().toISOString();
      for (const row of await rows.listAll()) {
        const e = found.get(row.path);
        found.delete(row.path);
        if (!e) {
          await rows.removeFile(row.path);
          result.removed++;
        } else if (Number(row.size) !== e.size || row.modified_at !== iso(e.mtimeMs)) {
          await rows.recordFound({ path: row.path, size: e.size, modified_at: iso(e.mtimeMs), uploaded_at: at });
          result.updated++;
        }
      }
      for (const [path, e] of found) {
        await rows.recordFound({ path, size: e.size, modified_at: iso(e.mtimeMs), uploaded_at: at });
        result.added++;
      }
      await rows.setFolderCount(folders);
      return result;
    });
  }

  return {
    storage,
    key,
    limitsFor,

    /** Creates the three folders every product has (idempotent). */
    async ensureTree(productId: string): Promise<void> {
      for (const area of AREAS) await storage.makeDir(key(productId, area), { recursive: true });
    },

    /**
     * Starts an upload to `path`. Refuses a new file past the file-count quota at once; each
     * write past the size limit or the storage quota throws QuotaExceededError (the caller
     * aborts, which removes the partial temporary file). `keepExisting` may be decided by a
     * callback that runs while the limits are read (one round trip less per file).
     */
    async beginUpload(
      productId: string,
      path: string,
      options: { keepExisting?: boolean | (() => Promise<boolean>) } = {},
    ): Promise<Upload> {
      const keep = options.keepExisting;
      // A new file is created while the limits are read (an SFTP OPEN answers after the slower
      // of the two, not their sum); a refusal deletes it again. A copy of the current file is
      // made only once the limits allow it (see `beginKeptCopy`).
      const [checks, fresh] = await Promise.allSettled([
        repo.uploadContext(productId, path),
        (async () => {
          const keepExisting = typeof keep === 'function' ? await keep() : !!keep;
          return keepExisting ? null : storage.beginWrite(key(productId, path));
        })(),
      ]);
      if (checks.status === 'rejected' || fresh.status === 'rejected') {
        if (fresh.status === 'fulfilled') await fresh.value?.abort();
        throw checks.status === 'rejected' ? checks.reason : (fresh as PromiseRejectedResult).reason;
      }
      const context = checks.value;
      const limits = limitsOf(context);
      const existingSize = context.existing_size;
      if (existingSize === null && context.files + 1 > limits.quotaFiles) {
        await fresh.value?.abort();
        throw new QuotaExceededError(`file-count quota exceeded: this product may store ${limits.quotaFiles} files${releaseNote(context, 'files')}`);
      }
      const available = limits.quotaBytes - (context.bytes - (existingSize ?? 0));
      const claim = roomClaim(productId);
      const pending = fresh.value ?? (await beginKeptCopy(productId, path, available, claim));
      const release = claim.release;
      return {
        get size() {
          return pending.size;
        },
        async write(buffer, offset, length, position) {
          const end = position + length;
          if (end > limits.maxFileBytes) {
            throw new QuotaExceededError(`file too large: the limit is ${limits.maxFileBytes} bytes per file`);
          }
          if (end > available) {
            throw new QuotaExceededError(`storage quota exceeded: this product may store ${limits.quotaBytes} bytes${releaseNote(context, 'bytes')}`);
          }
          if (end > claim.held) {
            // Claimed before the bytes land: writes of parallel uploads cannot all pass one check.
            const others = claim.others();
            if (end + others > available) {
              throw new QuotaExceededError(`storage quota exceeded: this product may store ${limits.quotaBytes} bytes, and its uploads open now hold ${others} bytes of it`);
            }
            claim.hold(end);
          }
          await pending.write(buffer, offset, length, position);
        },
        read: (buffer, offset, length, position) => pending.read(buffer, offset, length, position),
        async commit(times) {
          try {
            return await commit(times);
          } finally {
            release();
          }
        },
        async abort() {
          release();
          await pending.abort();
        },
      };

      async function commit(times?: { atimeMs: number; mtimeMs: number }): Promise<StoredEntry> {
          // Record, rename, COMMIT as one unit under the product's lock: a remove or rename of
          // the path or its folder comes wholly before or wholly after (one landing between the
          // quota check and the rename would leave a stored file uncounted), and a failed rename
          // (its folder was removed meanwhile) rolls the record back.
          // The refusal's reason is read after the transaction ends: on SQLite the transaction
          // holds the only connection, so a read inside it would wait for itself.
          return pending.commit(times, async (entry, place) => {
            const recorded = await repo.inProductLock(productId, async (rows) => {
              const row = { path, size: entry.size, modified_at: iso(entry.mtimeMs), uploaded_at: now().toISOString() };
              if (!(await rows.recordUploadWithin(row, defaults))) return false;
              place();
              return true;
            });
            if (!recorded) throw await commitRefusal(productId, path, entry.size);
          });
      }
    },

    // Each change below is one unit with its record (see `commit`): the row changes first,
    // the storage step last, so a failed storage step rolls the row change back.
    async remove(productId: string, path: string): Promise<boolean> {
      return repo.inProductLock(productId, async (rows) => {
        await rows.removeFile(path);
        return storage.remove(key(productId, path));
      });
    },

    async removeDir(productId: string, path: string): Promise<void> {
      await repo.inProductLock(productId, async (rows) => {
        await rows.removeFolder();
        await storage.removeDir(key(productId, path));
      });
    },

    /**
     * Creates a folder if the product has room for one more: folders hold no bytes but cost
     * the disk an inode and listings their entries, so they are counted like files are.
     */
    async makeDir(productId: string, path: string): Promise<void> {
      await repo.inProductLock(productId, async (rows) => {
        if (!(await rows.addFolderWithin(defaults.quotaFolders))) {
          throw new QuotaExceededError(`folder quota exceeded: this product may have ${defaults.quotaFolders} folders`);
        }
        await storage.makeDir(key(productId, path));
      });
    },

    reconcile,

    /** `reconcile` for every registered product (at start); one product's failure does not stop the rest. */
    async reconcileAll(onError: (productId: string, e: unknown) => void): Promise<(ReconcileResult & { productId: string })[]> {
      const changed: (ReconcileResult & { productId: string })[] = [];
      for (const productId of await repo.productIds()) {
        try {
          const r = await reconcile(productId);
          if (r.added + r.updated + r.removed > 0) changed.push({ productId, ...r });
        } catch (e) {
          onError(productId, e);
        }
      }
      return changed;
    },

    /** Renames a file or folder (replacing a file at `to`, as uploads overwrite). */
    async rename(productId: string, from: string, to: string): Promise<void> {
      await repo.inProductLock(productId, async (rows) => {
        await rows.move(from, to, now().toISOString());
        await storage.rename(key(productId, from), key(productId, to));
      });
    },

    async setTimes(productId: string, path: string, atimeMs: number, mtimeMs: number): Promise<void> {
      await repo.inProductLock(productId, async (rows) => {
        await rows.setModifiedAt(path, iso(mtimeMs));
        await storage.setTimes(key(productId, path), atimeMs, mtimeMs);
      });
    },

    async summary(productId: string): Promise<FilesSummary> {
      const [usage, state, labels, limits] = await Promise.all([
        repo.usage(productId),
        repo.state(productId),
        reader.listLabels(productId),
        limitsFor(productId),
      ]);
      const releases = { files: Number(state?.release_files ?? 0), bytes: Number(state?.release_bytes ?? 0) };
      return { ...usage, releases, lastUploadAt: state?.last_upload_at ?? null, limits, labels };
    },

    /** Staff override of one product's limits; null restores the configured default. */
    async setLimits(productId: string, limits: { [K in keyof FileLimits]?: number | null }): Promise<void> {
      const current = await limitsFor(productId);
      const pick = (k: keyof FileLimits) => (limits[k] === undefined ? (current.custom[k] ?? null) : limits[k]);
      await repo.setLimits(productId, {
        quota_bytes: pick('quotaBytes'),
        quota_files: pick('quotaFiles'),
        max_file_bytes: pick('maxFileBytes'),
      });
    },
  };
}

export type FilesService = ReturnType<typeof filesService>;

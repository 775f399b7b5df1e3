import type { FileLimits } from '../../infra/config.js';
import type { PendingWrite, Storage, StoredEntry } from '../../infra/storage.js';
import { type LabelSummary, productFilesReader } from './reader.js';
import type { FilesRepository, StorageRow } from './repository.js';
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

export interface FilesSummary {
  files: number;
  bytes: number;
  lastUploadAt: string | null;
  limits: FileLimits & { custom: Partial<FileLimits> };
  labels: LabelSummary[];
}

const iso = (ms: number) => new Date(ms).toISOString();

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
      return new QuotaExceededError(`file-count quota exceeded: this product may store ${limits.quotaFiles} files`);
    }
    const used = context.bytes - (context.existing_size ?? 0);
    return new QuotaExceededError(
      `storage quota exceeded: this product may store ${limits.quotaBytes} bytes (${used} used by other files, this one has ${size})`,
    );
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
      // The temporary file is created while the limits are read (an SFTP OPEN answers after
      // the slower of the two, not their sum); a refusal deletes it again.
      const [checks, started] = await Promise.allSettled([
        repo.uploadContext(productId, path),
        (async () => {
          const keepExisting = typeof keep === 'function' ? await keep() : !!keep;
          return storage.beginWrite(key(productId, path), { keepExisting });
        })(),
      ]);
      if (checks.status === 'rejected' || started.status === 'rejected') {
        if (started.status === 'fulfilled') await started.value.abort();
        throw checks.status === 'rejected' ? checks.reason : (started as PromiseRejectedResult).reason;
      }
      const context = checks.value;
      const limits = limitsOf(context);
      const existingSize = context.existing_size;
      const pending: PendingWrite = started.value;
      if (existingSize === null && context.files + 1 > limits.quotaFiles) {
        await pending.abort();
        throw new QuotaExceededError(`file-count quota exceeded: this product may store ${limits.quotaFiles} files`);
      }
      const available = limits.quotaBytes - (context.bytes - (existingSize ?? 0));
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
            throw new QuotaExceededError(`storage quota exceeded: this product may store ${limits.quotaBytes} bytes`);
          }
          await pending.write(buffer, offset, length, position);
        },
        read: (buffer, offset, length, position) => pending.read(buffer, offset, length, position),
        async commit(times) {
          // Record, rename, COMMIT as one unit under the product's lock: a remove or rename of
          // the path or its folder comes wholly before or wholly after (issue #10), and a
          // failed rename (its folder was removed meanwhile) rolls the record back.
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
        },
        abort: () => pending.abort(),
      };
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
      await storage.removeDir(key(productId, path));
    },

    async makeDir(productId: string, path: string): Promise<void> {
      await storage.makeDir(key(productId, path));
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
      return { ...usage, lastUploadAt: state?.last_upload_at ?? null, limits, labels };
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

/**
 * The one small interface in front of stored files (DESIGN.md "Files"): the SFTP server, the
 * download host and the crawler go through it, so a different backend (object storage) can
 * replace the local directory later. Keys are relative POSIX paths (`<product>/assets/a.png`).
 */

export interface StoredEntry {
  name: string;
  type: 'file' | 'dir';
  size: number;
  mtimeMs: number;
  /**
   * Changes whenever the stored bytes may have changed, even to the same size and time (every
   * upload is a new file): lets a caller keep a file's contents and check them with `stat`.
   */
  version?: string;
}

/** Storage.fileLinks: stored files by their bytes (typed arrays: a copy may have 100,000 files). */
export interface StoredLinks {
  /** Per key, the index of each file's bytes; null when the key is not a folder. */
  files: (Uint32Array | null)[];
  size: Float64Array;
  links: Uint32Array;
}

/** An open folder listing (Storage.openList). */
export interface StoredList {
  /** Up to `max` further entries; an empty array only at the end. */
  next(max: number): Promise<StoredEntry[]>;
  close(): Promise<void>;
}

/** An open stored file for reading; `close` must be called. */
export interface StoredReader {
  readonly size: number;
  readonly mtimeMs: number;
  /**
   * When this content was put in place at its key or its times were last set (a local file's
   * ctime). Unlike `mtimeMs`, which an upload may set to any time, it moves forward only.
   */
  readonly changedMs: number;
  /** As StoredEntry's: changes with every new content put in place. */
  readonly version: string;
  /** Reads up to `length` bytes at `position` into `buffer`; returns the bytes read (0 at the end). */
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<number>;
  /**
   * `read` done synchronously, where the storage can do it without waiting on a network (a
   * file on a local disk): for callers that expect the bytes to be in memory already and check
   * how long it took.
   */
  readNow?(buffer: Buffer, offset: number, length: number, position: number): number;
  close(): Promise<void>;
}

/**
 * A file being written under a temporary name in its final folder; readers keep seeing the
 * previous version (or nothing) until `commit` renames it into place.
 */
export interface PendingWrite {
  readonly key: string;
  /** Highest byte written + 1 (or the copied size when the previous contents were kept). */
  readonly size: number;
  write(buffer: Buffer, offset: number, length: number, position: number): Promise<void>;
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<number>;
  /**
   * Renames the temporary file over the key; returns the stored entry. `record`, when given,
   * runs with the finished file's entry and calls `place` to do the rename itself, so a caller
   * can make the rename and its record of the file one unit (inside its database transaction,
   * under the product's lock). If `record` throws, the temporary file is deleted (the previous
   * file stays in place unless `place` already ran) and the error is rethrown; if it returns
   * without calling `place`, the rename happens then.
   */
  commit(
    times?: { atimeMs: number; mtimeMs: number },
    record?: (entry: StoredEntry, place: () => void) => Promise<void>,
  ): Promise<StoredEntry>;
  /** Deletes the temporary file. Safe to call twice or after commit. */
  abort(): Promise<void>;
}

export interface Storage {
  stat(key: string): Promise<StoredEntry | null>;
  /** Entries of a folder, temporary files hidden, sorted by name; null when it is not a folder. */
  list(key: string): Promise<StoredEntry[] | null>;
  /**
   * Only the names of a folder's entries (files and folders, temporary files hidden), sorted
   * by name; null when it is not a folder. Nothing is stat'ed: for big folders shown a part at a time.
   */
  listNames(key: string): Promise<string[] | null>;
  /**
   * The entries `names` of folder `key` (as listNames gives them), in that order; null for a name
   * that is gone or not a file or folder. Asynchronous and a batch at a time, never a long run of
   * synchronous calls: for pages of a big folder served to anyone (the download host's index).
   */
  statNames(key: string, names: readonly string[]): Promise<(StoredEntry | null)[]>;
  /**
   * A folder's entries read a batch at a time, in the order the backend keeps them (temporary
   * files hidden); null when it is not a folder. Memory stays bounded by the batch however big
   * the folder: SFTP READDIR answers from it. `close` must be called.
   */
  openList(key: string): Promise<StoredList | null>;
  openRead(key: string): Promise<StoredReader | null>;
  /**
   * Every file and folder below `key` (paths relative to it, temporary files hidden), in no
   * particular order; null when it is not a folder. For reconciling records with the disk.
   */
  walk(key: string): Promise<(StoredEntry & { path: string })[] | null>;
  /**
   * A whole small file in one call (`data` null when it is larger than `maxBytes`: open it with
   * `openRead` to stream it). The download host's hot path: most update-site files are small.
   */
  readSmall(key: string, maxBytes: number): Promise<{ size: number; mtimeMs: number; changedMs: number; version: string; data: Buffer | null } | null>;
  /**
   * `keepExisting` copies the current contents first (SFTP open without TRUNC); a current file
   * larger than `maxKeptBytes` is not copied (KeptCopyTooLargeError), so the copy fits the room
   * its caller has left.
   */
  beginWrite(key: string, options?: { keepExisting?: boolean; maxKeptBytes?: number }): Promise<PendingWrite>;
  // Metadata changes below are synchronous in the local backend (microseconds each), so a
  // caller may run them inside a database transaction without holding it across I/O waits.
  /** Removes a file; false when there was none. */
  remove(key: string): Promise<boolean>;
  makeDir(key: string, options?: { recursive?: boolean }): Promise<void>;
  /** Removes an empty folder (ignoring leftover temporary files). */
  removeDir(key: string): Promise<void>;
  /**
   * Renames a file or folder, replacing an existing file at `to`. Uploads open below a renamed
   * folder can no longer be committed; their temporary files are deleted.
   */
  rename(from: string, to: string): Promise<void>;
  setTimes(key: string, atimeMs: number, mtimeMs: number): Promise<void>;
  /**
   * Makes `to` (which must not exist) a copy of the folder `from` whose files share the stored
   * bytes (hard links: one link per file, no bytes copied; temporary files left out). Uploads
   * never change a stored file's bytes in place (a new file is renamed over the old one), so the
   * copy keeps what `from` held at this moment: a label's release.
   */
  linkTree(from: string, to: string): Promise<{ files: number; bytes: number }>;
  /** Removes a folder and everything below it; nothing when there is none. */
  removeTree(key: string): Promise<void>;
  /**
   * The files below each of `keys` (temporary files left out) as their stored bytes: names that
   * share bytes (linkTree's hard links) share an index into `size` and `links`, which says how
   * many names the bytes have in the whole storage. `files[i]` is null when `keys[i]` is not a
   * folder. What release copies hold that nothing else does is counted from this (releases/usage.ts).
   */
  fileLinks(keys: string[]): Promise<StoredLinks>;
  /**
   * Points `key` at `target`, a name in the same folder, replacing what it pointed at in one
   * step (readers see the old target or the new one, never nothing); null removes the pointer.
   */
  setPointer(key: string, target: string | null): Promise<void>;
  /** What `key` points at, or null. Synchronous: the download host asks on every request. */
  pointer(key: string): string | null;
  /** When the pointer at `key` was last set, ms; null when there is none. */
  pointerSetMs(key: string): number | null;
  /**
   * Deletes temporary files under `key` ('' = everything) that no live upload owns: those of
   * this instance whose upload is over, and those of instances that are gone (killed, or
   * crashed on another machine sharing this storage). Servers call it at start and then
   * periodically; it also tells other instances that this one is alive.
   */
  sweepTemporary(key: string): Promise<number>;
  /**
   * A count of the changes (commit, remove, rename, times) this process has made to the
   * stored files at this location, through any Storage object: it moves after each change is
   * in place. A reader may trust a check begun while the count stayed the same to still hold
   * for changes made by this process; changes from other processes do not move it.
   */
  changes(): number;
}

/** Names starting with this are the storage's own (temporary files); users may never create them. */
export const RESERVED_NAME_PREFIX = '.pier-';

export class StorageKeyError extends Error {
  constructor(key: string, reason: string) {
    super(`invalid storage key ${JSON.stringify(key)}: ${reason}`);
    this.name = 'StorageKeyError';
  }
}

/** The current file is larger than the room left for a copy of it (`beginWrite` `maxKeptBytes`). */
export class KeptCopyTooLargeError extends Error {
  constructor(
    key: string,
    readonly size: number,
  ) {
    super(`${key} (${size} bytes) is larger than the room left for a copy of it`);
    this.name = 'KeptCopyTooLargeError';
  }
}

/** A storage error that callers map to "no such file", "not empty", "exists"… */
export type StorageErrorCode = 'ENOENT' | 'EEXIST' | 'ENOTEMPTY' | 'ENOTDIR' | 'EISDIR';

export function storageErrorCode(e: unknown): StorageErrorCode | null {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'EEXIST' || code === 'ENOTEMPTY' || code === 'ENOTDIR' || code === 'EISDIR'
    ? code
    : null;
}

/**
 * Checks one key: relative, `/`-separated, no empty, `.` or `..` segment, no backslash, NUL or
 * control character, no reserved name. Every backend calls this before touching anything.
 */
export function checkKey(key: string): string[] {
  if (key.length === 0) throw new StorageKeyError(key, 'empty');
  const segments = key.split('/');
  for (const s of segments) {
    if (s === '' || s === '.' || s === '..') throw new StorageKeyError(key, 'empty, "." or ".." segment');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we refuse
    if (/[\\\u0000-\u001f\u007f]/.test(s)) throw new StorageKeyError(key, 'backslash or control character');
    if (s.startsWith(RESERVED_NAME_PREFIX)) throw new StorageKeyError(key, `names starting with ${RESERVED_NAME_PREFIX} are reserved`);
    if (Buffer.byteLength(s) > 255) throw new StorageKeyError(key, 'segment longer than 255 bytes');
  }
  return segments;
}

import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PayloadTooLargeError, ValidationError } from '../../infra/errors.js';

/** Temporary name of an archive being uploaded, beside its final name (`.<random>.tmp`). */
export const temporaryArchiveName = (name: string) => `.${name}.tmp`;
/** Whether a file name in a workflow's folder is an upload in flight (see temporaryArchiveName). */
export const isTemporaryArchiveName = (name: string) => name.startsWith('.') && name.endsWith('.tmp');

/** A .knwf workflow archive is a zip: it starts with a local file header. */
const ZIP_MAGIC = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
/** The smallest possible zip with one entry is larger than this (header + end record). */
const MIN_ZIP_BYTES = 22 + 30;

/** Resolves once a write stream has released its file (it was destroyed or finished). */
export function closed(stream: fs.WriteStream): Promise<void> {
  return stream.closed ? Promise.resolve() : new Promise((resolve) => stream.once('close', () => resolve()));
}

export interface StoredFile {
  storageKey: string;
  size: number;
  sha256: string;
}

/**
 * Where workflow archives live. Every instance of one runner must use the same storage (a shared
 * volume now, object storage later): an archive uploaded through one instance is downloaded and
 * run through any other.
 */
export interface WorkflowStorage {
  /** Streams an upload in, checking the zip signature and size; see LocalWorkflowStorage.save. */
  save(workflowId: string, source: Readable, truncated: () => boolean, maxBytes: number): Promise<StoredFile>;
  open(key: string): Readable;
  /** A path on this machine to read the stored archive in place (zip readers need random access). */
  localPath(key: string): string;
  exists(key: string): Promise<boolean>;
  remove(key: string): Promise<void>;
  removeWorkflow(workflowId: string): Promise<void>;
}

/**
 * Workflow archives on disk under `<RUNNER_STORAGE_DIR>/workflows/<workflowId>/` (default
 * RUNNER_STORAGE_DIR: `<PIER_DATA_DIR>/runner`). Files are written to a temporary name in the
 * same directory and renamed, so readers never see half a file.
 */
export class LocalWorkflowStorage implements WorkflowStorage {
  readonly root: string;

  constructor(storageDir: string) {
    this.root = path.join(path.resolve(storageDir), 'workflows');
  }

  localPath(key: string): string {
    return this.pathOf(key);
  }

  private pathOf(key: string): string {
    const full = path.resolve(this.root, key);
    if (!full.startsWith(this.root + path.sep)) throw new Error('storage key escapes the storage root');
    return full;
  }

  /**
   * Streams an upload to `<workflowId>/<random>.knwf`, checking the zip signature and size.
   * `truncated()` reports whether the multipart parser cut the file at its size limit.
   */
  async save(workflowId: string, source: Readable, truncated: () => boolean, maxBytes: number): Promise<StoredFile> {
    // A fresh name per upload: concurrent uploads of new versions never overwrite each other.
    const name = randomBytes(12).toString('hex');
    const key = `${workflowId}/${name}.knwf`;
    const target = this.pathOf(key);
    // Asynchronous: a synchronous mkdir per upload held the serving thread (bench runner-hostile, archives).
    await fs.promises.mkdir(path.dirname(target), { recursive: true });
    const tmp = path.join(path.dirname(target), temporaryArchiveName(name));
    const hash = createHash('sha256');
    let size = 0;
    let head = Buffer.alloc(0);
    const inspect = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (head.length < ZIP_MAGIC.length) head = Buffer.concat([head, chunk.subarray(0, ZIP_MAGIC.length - head.length)]);
        hash.update(chunk);
        done(null, chunk);
      },
    });
    const out = fs.createWriteStream(tmp, { flags: 'wx', mode: 0o640 });
    const tooLarge = () => new PayloadTooLargeError(`the workflow archive is larger than ${maxBytes} bytes`, [{ field: 'file', message: `is larger than ${maxBytes} bytes` }]);
    // The parser stops passing bytes on at the limit ('limit') but goes on reading the part to
    // its end: the 413 is answered now, not when (if ever) the client stops sending.
    const atLimit = () => inspect.destroy(tooLarge());
    source.once('limit', atLimit);
    try {
      await pipeline(source, inspect, out);
      if (truncated() || size > maxBytes) throw tooLarge();
      if (size < MIN_ZIP_BYTES || !head.equals(ZIP_MAGIC)) {
        throw new ValidationError('the file is not a workflow archive (.knwf, a zip file)', [
          { field: 'file', message: 'is not a zip archive' },
        ], 'invalid_archive');
      }
      await fs.promises.rename(tmp, target);
      return { storageKey: key, size, sha256: hash.digest('hex') };
    } catch (e) {
      source.off('limit', atLimit);
      // A source that failed at once fails the pipeline before the file is even opened: wait for
      // the write stream to close, or the file would appear after it was removed.
      await closed(out);
      await fs.promises.rm(tmp, { force: true });
      throw e;
    }
  }

  open(key: string): fs.ReadStream {
    return fs.createReadStream(this.pathOf(key));
  }

  async remove(key: string): Promise<void> {
    await fs.promises.rm(this.pathOf(key), { force: true });
  }

  async exists(key: string): Promise<boolean> {
    return fs.promises.access(this.pathOf(key)).then(
      () => true,
      () => false,
    );
  }

  async removeWorkflow(workflowId: string): Promise<void> {
    await fs.promises.rm(this.pathOf(workflowId), { recursive: true, force: true });
  }
}

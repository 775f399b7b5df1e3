import { createHash, type Hash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger, RunnerClient } from './client.js';

/** A downloaded workflow archive and the sha256 of its bytes as they came from the runner. */
interface CachedArchive {
  file: string;
  sha256: string;
}

/**
 * The workflow archive of each version, downloaded once per executor process into
 * `<work-dir>/archives/`, with the sha256 of the bytes as downloaded (checked against the
 * runner's `x-content-sha256`). The file itself is no proof: a command running as the executor's
 * user may have rewritten it, or put a symbolic link in its place or the directory's.
 */
export class ArchiveCache {
  #archives = new Map<string, Promise<CachedArchive>>();

  constructor(
    private readonly client: RunnerClient,
    private readonly dir: string,
    private readonly log: Logger,
  ) {}

  #archive(download: string, key: string): Promise<CachedArchive> {
    let p = this.#archives.get(key);
    if (!p) {
      const fresh = this.#download(download, key);
      fresh.catch(() => {
        if (this.#archives.get(key) === fresh) this.#archives.delete(key);
      });
      this.#archives.set(key, fresh);
      p = fresh;
    }
    return p;
  }

  async #download(download: string, key: string): Promise<CachedArchive> {
    const dir = this.dir;
    // A link (or anything else) put where the directory was is removed, not followed.
    const stat = await fs.promises.lstat(dir).catch(() => null);
    if (stat && !stat.isDirectory()) await fs.promises.rm(dir, { force: true });
    // Only the executor reads the archives of every project (0700).
    await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
    const file = path.join(dir, `${key}.knwf`);
    const res = await this.client.request('GET', download);
    const tmp = `${file}.${process.pid}.${randomUUID()}.tmp`;
    const hash = createHash('sha256');
    // Streamed to disk (archives may be large) into a new file: `wx` follows no link.
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), hashing(hash), fs.createWriteStream(tmp, { flags: 'wx' }));
    const sha256 = hash.digest('hex');
    const expected = res.headers.get('x-content-sha256');
    if (expected && expected.toLowerCase() !== sha256) {
      await fs.promises.rm(tmp, { force: true });
      throw new Error(`the workflow archive ${key} downloaded does not match the runner's checksum`);
    }
    // A rename replaces a link at `file` instead of writing through it.
    await fs.promises.rename(tmp, file);
    return { file, sha256 };
  }

  /**
   * Copies the cached archive of a version to `dest` (in the run's fresh directory), hashing the
   * very bytes copied: what the run unpacks and gets as {archive} is the copy, so only a copy
   * with the sha256 as downloaded is used. A cached archive changed on disk since is downloaded
   * again (with a line in the executor's log).
   */
  async copy(download: string, key: string, runId: string, dest: string): Promise<void> {
    for (let tries = 1; ; tries++) {
      const cached = this.#archive(download, key);
      const { file, sha256 } = await cached;
      const copied = await copyHashing(file, dest);
      if (copied === sha256) return;
      await fs.promises.rm(dest, { force: true });
      if (tries >= 3) throw new Error(`the workflow archive ${key} keeps changing on disk (${file})`);
      this.log('archive_changed', { runId, archive: file, detail: 'the cached workflow archive was changed or replaced: downloading it again' });
      // Runs finding the same change at once download it once.
      if (this.#archives.get(key) === cached) this.#archives.delete(key);
    }
  }
}

/** A stream step that passes the bytes on and adds them to `hash`. */
function hashing(hash: Hash): (source: AsyncIterable<Buffer>) => AsyncGenerator<Buffer> {
  return async function* (source) {
    for await (const chunk of source) {
      hash.update(chunk);
      yield chunk;
    }
  };
}

/**
 * Copies `file` to the new file `dest` and answers the sha256 of the bytes copied, or null when
 * `file` is missing, a symbolic link (not followed) or not a regular file.
 */
async function copyHashing(file: string, dest: string): Promise<string | null> {
  // O_NONBLOCK: a FIFO put in its place does not hang the open.
  const handle = await fs.promises.open(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK).catch(() => null);
  if (!handle) return null;
  try {
    if (!(await handle.stat()).isFile()) return null;
    const hash = createHash('sha256');
    await pipeline(handle.createReadStream({ autoClose: false }), hashing(hash), fs.createWriteStream(dest, { flags: 'wx' }));
    return hash.digest('hex');
  } finally {
    await handle.close();
  }
}

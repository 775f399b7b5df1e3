/**
 * Whole-folder work of the local storage (a label's release copy, its removal, the count of what
 * release copies hold) done with asynchronous file-system calls, a few at a time. A label may hold
 * as many files as the file quota allows (100,000 by default): one synchronous call per file would
 * hold the event loop that serves every product for seconds, and an unbounded burst of
 * asynchronous calls would queue every other request's file reads behind it in libuv's thread pool
 * (4 threads). So each operation keeps at most IN_FLIGHT calls outstanding, and folders are read a
 * batch of entries at a time (opendir), never whole.
 */
import type fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';

/** File-system calls of one tree operation outstanding at a time. */
const IN_FLIGHT = 8;
/** Entries read from a folder per call (opendir's buffer). */
const DIR_BATCH = 256;
/** Entries of one folder whose calls are started before waiting for them (bounds memory, not concurrency). */
const BATCH_WAIT = 512;

/** At most `limit` of the tasks given to it run at once; the others wait in order. */
function limiter(limit: number) {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async function run<T>(task: () => Promise<T>): Promise<T> {
    if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    else active++;
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}

type Run = ReturnType<typeof limiter>;

const GONE = new Set(['ENOENT', 'ENOTDIR']);
const gone = (e: unknown) => GONE.has(String((e as NodeJS.ErrnoException).code));

/** The entries of a folder, a batch at a time; none when the folder is gone. */
async function* entries(dir: string): AsyncGenerator<fs.Dirent> {
  let handle: fs.Dir;
  try {
    handle = await fsp.opendir(dir, { bufferSize: DIR_BATCH });
  } catch (e) {
    if (gone(e)) return;
    throw e;
  }
  // The async iterator closes the handle when the loop ends or throws.
  for await (const d of handle) yield d;
}

/** Waits for every task, then throws the first failure (none is left running behind a throw). */
async function settle(tasks: Promise<unknown>[]): Promise<void> {
  const results = await Promise.allSettled(tasks.splice(0));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

async function lstatOrNull(p: string): Promise<fs.Stats | null> {
  try {
    return await fsp.lstat(p);
  } catch (e) {
    if (gone(e)) return null;
    throw e;
  }
}

/**
 * Fills the new folder `into` with hard links to every regular file below `from` (folders made
 * again; `skip` names and anything that is not a regular file or folder left out; a file removed
 * meanwhile is simply not there). Answers the files linked and their bytes.
 */
export async function linkTreeInto(from: string, into: string, skip: (name: string) => boolean): Promise<{ files: number; bytes: number }> {
  const run = limiter(IN_FLIGHT);
  let files = 0;
  let bytes = 0;
  const copy = async (dir: string, to: string): Promise<void> => {
    await fsp.mkdir(to);
    const folders: [string, string][] = [];
    const tasks: Promise<void>[] = [];
    for await (const d of entries(dir)) {
      if (skip(d.name) || !(d.isFile() || d.isDirectory())) continue;
      const p = path.join(dir, d.name);
      const q = path.join(to, d.name);
      tasks.push(
        run(async () => {
          // The entry's type again from lstat: it may have been replaced since the listing.
          const st = await lstatOrNull(p);
          if (!st) return;
          if (st.isDirectory()) {
            folders.push([p, q]);
            return;
          }
          if (!st.isFile()) return;
          try {
            await fsp.link(p, q);
          } catch (e) {
            if (gone(e)) return; // removed meanwhile
            throw e;
          }
          files++;
          bytes += st.size;
        }),
      );
      if (tasks.length >= BATCH_WAIT) await settle(tasks);
    }
    await settle(tasks);
    for (const [p, q] of folders) await copy(p, q);
  };
  await copy(from, into);
  return { files, bytes };
}

/** Removes a folder and everything below it, IN_FLIGHT calls at a time; nothing when it is gone. */
export async function removeTreeBounded(dir: string): Promise<void> {
  const run = limiter(IN_FLIGHT);
  await removeBelow(dir, run);
  await fsp.rmdir(dir).catch((e: unknown) => {
    if (!gone(e)) throw e;
  });
}

async function removeBelow(dir: string, run: Run): Promise<void> {
  const folders: string[] = [];
  const tasks: Promise<void>[] = [];
  for await (const d of entries(dir)) {
    const p = path.join(dir, d.name);
    if (d.isDirectory()) {
      folders.push(p);
      continue;
    }
    tasks.push(
      run(async () => {
        await fsp.unlink(p).catch((e: unknown) => {
          if (!gone(e)) throw e;
        });
      }),
    );
    if (tasks.length >= BATCH_WAIT) await settle(tasks);
  }
  await settle(tasks);
  for (const f of folders) {
    await removeBelow(f, run);
    await fsp.rmdir(f).catch((e: unknown) => {
      if (!gone(e)) throw e;
    });
  }
}

/** A stored file as its bytes on the disk: which inode, how large, how many names it has. */
export interface LinkedFile {
  /** `<device>:<inode>`: two names with the same id share their bytes. */
  id: string;
  size: number;
  /** Names the bytes have on this file system (hard links), these included. */
  links: number;
}

/** Every regular file below `dir` (`skip` names left out), as LinkedFile; null when `dir` is not a folder. */
export async function fileLinksBelow(dir: string, skip: (name: string) => boolean): Promise<LinkedFile[] | null> {
  const top = await lstatOrNull(dir);
  if (!top?.isDirectory()) return null;
  const run = limiter(IN_FLIGHT);
  const out: LinkedFile[] = [];
  const visit = async (at: string): Promise<void> => {
    const folders: string[] = [];
    const tasks: Promise<void>[] = [];
    for await (const d of entries(at)) {
      if (skip(d.name)) continue;
      const p = path.join(at, d.name);
      if (d.isDirectory()) folders.push(p);
      else if (d.isFile()) {
        tasks.push(
          run(async () => {
            // bigint: inode numbers of some file systems do not fit a double.
            const st = await fsp.lstat(p, { bigint: true }).catch((e: unknown) => {
              if (gone(e)) return null;
              throw e;
            });
            if (st?.isFile()) out.push({ id: `${st.dev}:${st.ino}`, size: Number(st.size), links: Number(st.nlink) });
          }),
        );
        if (tasks.length >= BATCH_WAIT) await settle(tasks);
      }
    }
    await settle(tasks);
    for (const f of folders) await visit(f);
  };
  await visit(dir);
  return out;
}

/**
 * The thread whole-folder work of the local storage runs in (storage-tree.ts): a release copy
 * (a hard link per file), its removal, and the count of what copies hold. It uses plain
 * synchronous file-system calls, which hold only this thread: the serving thread does none of
 * the per-file work and only waits for the reply.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parentPort } from 'node:worker_threads';

export type TreeJob =
  | { op: 'link'; from: string; into: string; skipPrefix: string }
  | { op: 'remove'; dir: string }
  | { op: 'fileLinks'; dirs: string[]; skipPrefix: string };

/** A file's stored bytes, shared by its names: which of them, how large, how many names. */
export interface FileLinksReply {
  /** Per folder asked for, the index (into `size` and `links`) of each file's bytes; null when it is not a folder. */
  files: (Uint32Array | null)[];
  size: Float64Array;
  links: Uint32Array;
}

export type TreeReply = { ok: true; result: unknown } | { ok: false; code?: string; message: string };

const GONE = new Set(['ENOENT', 'ENOTDIR']);
const gone = (e: unknown) => GONE.has(String((e as NodeJS.ErrnoException).code));

function entries(dir: string): fs.Dirent[] {
  try {
    return fs.readdirSync(dir, { withFileTypes: true });
  } catch (e) {
    if (gone(e)) return [];
    throw e;
  }
}

function lstat(p: string): fs.Stats | null {
  try {
    return fs.lstatSync(p);
  } catch (e) {
    if (gone(e)) return null;
    throw e;
  }
}

/** Links every regular file below `from` into the new folder `into`, folders made again; removed-meanwhile files skipped. */
function linkTree(from: string, into: string, skipPrefix: string): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  const copy = (dir: string, to: string) => {
    fs.mkdirSync(to);
    for (const d of entries(dir)) {
      if (d.name.startsWith(skipPrefix) || !(d.isFile() || d.isDirectory())) continue;
      const p = path.join(dir, d.name);
      // The type again from lstat: the entry may have been replaced since the listing.
      const st = lstat(p);
      if (!st) continue;
      if (st.isDirectory()) copy(p, path.join(to, d.name));
      else if (st.isFile()) {
        try {
          fs.linkSync(p, path.join(to, d.name));
        } catch (e) {
          if (gone(e)) continue;
          throw e;
        }
        files++;
        bytes += st.size;
      }
    }
  };
  copy(from, into);
  return { files, bytes };
}

function fileLinks(dirs: string[], skipPrefix: string): { reply: FileLinksReply; transfer: ArrayBuffer[] } {
  const index = new Map<string, number>();
  const size: number[] = [];
  const links: number[] = [];
  const files = dirs.map((top) => {
    if (!lstat(top)?.isDirectory()) return null;
    const found: number[] = [];
    const visit = (dir: string) => {
      for (const d of entries(dir)) {
        if (d.name.startsWith(skipPrefix)) continue;
        const p = path.join(dir, d.name);
        if (d.isDirectory()) visit(p);
        else if (d.isFile()) {
          // bigint: inode numbers of some file systems do not fit a double.
          let st: fs.BigIntStats | undefined;
          try {
            st = fs.lstatSync(p, { bigint: true });
          } catch (e) {
            if (gone(e)) continue;
            throw e;
          }
          if (!st.isFile()) continue;
          const id = `${st.dev}:${st.ino}`;
          let i = index.get(id);
          if (i === undefined) {
            i = size.length;
            index.set(id, i);
            size.push(Number(st.size));
            links.push(Number(st.nlink));
          } else links[i] = Math.min(links[i]!, Number(st.nlink)); // a name removed meanwhile lowers it
          found.push(i);
        }
      }
    };
    visit(top);
    return Uint32Array.from(found);
  });
  const reply: FileLinksReply = { files, size: Float64Array.from(size), links: Uint32Array.from(links) };
  // Handed over, not copied: the arrays may hold hundreds of thousands of entries.
  const transfer: ArrayBuffer[] = [reply.size.buffer as ArrayBuffer, reply.links.buffer as ArrayBuffer];
  for (const f of files) if (f) transfer.push(f.buffer as ArrayBuffer);
  return { reply, transfer };
}

const port = parentPort;
if (port) {
  port.on('message', (job: TreeJob) => {
    try {
      if (job.op === 'link') port.postMessage({ ok: true, result: linkTree(job.from, job.into, job.skipPrefix) } satisfies TreeReply);
      else if (job.op === 'remove') {
        fs.rmSync(job.dir, { recursive: true, force: true });
        port.postMessage({ ok: true, result: null } satisfies TreeReply);
      } else {
        const { reply, transfer } = fileLinks(job.dirs, job.skipPrefix);
        port.postMessage({ ok: true, result: reply } satisfies TreeReply, transfer);
      }
    } catch (e) {
      port.postMessage({ ok: false, code: (e as NodeJS.ErrnoException).code, message: e instanceof Error ? e.message : String(e) } satisfies TreeReply);
    }
  });
  port.postMessage('ready');
}

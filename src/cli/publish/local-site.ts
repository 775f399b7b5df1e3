/**
 * The built site on disk: every file and folder below it (what the label's folder must equal
 * after the publish), each file's size and SHA-256, and the names the server would refuse.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { MAX_NAME_BYTES, MAX_PATH_BYTES } from '../../publishing/files/tree.js';
import { RESERVED_NAME_PREFIX } from '../../infra/storage.js';

export interface LocalFile {
  /** Relative, `/`-separated. */
  path: string;
  /** Absolute path on disk. */
  abs: string;
  size: number;
  sha256?: string;
}

export interface LocalTree {
  root: string;
  files: LocalFile[];
  /** Every folder below the root, relative. */
  folders: string[];
  /** Names no file in a label's folder may have (the SFTP server refuses them). */
  problems: string[];
}

/** Walks `root`, following symbolic links to files and folders as `sftp put -r` does; cycles stop. */
export async function readLocalTree(root: string, prefixBytes = 0): Promise<LocalTree> {
  const tree: LocalTree = { root, files: [], folders: [], problems: [] };
  const seen = new Set<string>();
  const visit = async (dir: string, rel: string): Promise<void> => {
    const real = await fsp.realpath(dir);
    if (seen.has(real)) {
      tree.problems.push(`${rel || '.'}: a link back to a folder above it (a cycle)`);
      return;
    }
    seen.add(real);
    const names = (await fsp.readdir(dir)).sort();
    for (const name of names) {
      const p = rel === '' ? name : `${rel}/${name}`;
      const abs = path.join(dir, name);
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what the server refuses
      if (/[\\\u0000-\u001f\u007f]/.test(name)) tree.problems.push(`${JSON.stringify(p)}: backslashes and control characters are not allowed in names`);
      else if (name.startsWith(RESERVED_NAME_PREFIX)) tree.problems.push(`${p}: names starting with ${RESERVED_NAME_PREFIX} are reserved`);
      else if (Buffer.byteLength(name) > MAX_NAME_BYTES) tree.problems.push(`${p}: a name is longer than ${MAX_NAME_BYTES} bytes`);
      else if (prefixBytes + Buffer.byteLength(p) > MAX_PATH_BYTES) tree.problems.push(`${p}: the path is longer than the server takes (${MAX_PATH_BYTES} bytes with update-site/<label>/)`);
      let st: fs.Stats;
      try {
        st = await fsp.stat(abs);
      } catch {
        tree.problems.push(`${p}: a broken link`);
        continue;
      }
      if (st.isDirectory()) {
        tree.folders.push(p);
        await visit(abs, p);
      } else if (st.isFile()) tree.files.push({ path: p, abs, size: st.size });
      else tree.problems.push(`${p}: not a file or a folder`);
    }
  };
  await visit(root, '');
  return tree;
}

export async function sha256File(abs: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of fs.createReadStream(abs, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Fills in `sha256` of every file, a few at a time. */
export async function hashAll(files: LocalFile[], concurrency = 4): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, files.length) }, async () => {
      while (next < files.length) {
        const f = files[next++]!;
        f.sha256 ??= await sha256File(f.abs);
      }
    }),
  );
}

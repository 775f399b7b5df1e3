// Whether dist/server holds a build of the sources as they are now. Read by bin/pier.js at
// every start, so it stays small and quick: one walk of src/ with a stat per file (a few ms).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export const SERVER_DIR = path.join('dist', 'server');
export const CURRENT_FILE = 'current.json';

/**
 * What a build is made from: every file under src/, the build's own scripts, package.json and
 * the installed dependencies (npm rewrites node_modules/.package-lock.json on every install;
 * they are bundled too). Path, size and modification time of each: an edit, a new, removed or
 * renamed file, or a checkout all change it.
 */
const INPUT_DIRS = ['src'];
const INPUT_FILES = ['package.json', 'scripts/build-server.mjs', 'scripts/build-state.mjs', 'node_modules/.package-lock.json'];

export function sourceFingerprint(root) {
  const hash = createHash('sha256');
  const add = (rel) => {
    const st = fs.statSync(path.join(root, rel), { throwIfNoEntry: false });
    if (st) hash.update(`${rel}\0${st.size}\0${st.mtimeMs}\n`);
  };
  const walk = (rel) => {
    const entries = fs.readdirSync(path.join(root, rel), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const e of entries) {
      const child = path.join(rel, e.name);
      if (e.isDirectory()) walk(child);
      else add(child);
    }
  };
  for (const dir of INPUT_DIRS) walk(dir);
  for (const file of INPUT_FILES) add(file);
  return hash.digest('hex');
}

/**
 * The current build's entry when it was made from the sources as they are now; otherwise why
 * not ('missing': never built, 'stale': a source changed since).
 */
export function currentBuild(root) {
  let current;
  try {
    current = JSON.parse(fs.readFileSync(path.join(root, SERVER_DIR, CURRENT_FILE), 'utf8'));
  } catch {
    return { entry: null, reason: 'missing' };
  }
  const entry = path.join(root, SERVER_DIR, String(current.build), 'pier.js');
  if (!fs.existsSync(entry)) return { entry: null, reason: 'missing' };
  if (current.fingerprint !== sourceFingerprint(root)) return { entry: null, reason: 'stale' };
  return { entry, reason: null };
}

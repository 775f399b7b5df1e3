import fs from 'node:fs';
import path from 'node:path';
import pkg from '../../../package.json' with { type: 'json' };
import { BackupDamagedError } from './errors.js';
import { isPointerTarget } from './file-copy.js';

/**
 * `manifest.json` of a backup: what it holds and the checksum of every part. It is written
 * last (to a temporary name, then renamed), so a folder with a manifest is a finished backup.
 */
export const MANIFEST_FILE = 'manifest.json';
export const MANIFEST_FORMAT = 'pier-backup';
/** Raised when the layout or the meaning of a field changes; a restore refuses versions it does not know. */
export const MANIFEST_VERSION = 1;
/** Folder of the database dumps inside a backup. */
export const DATABASES_DIR = 'databases';
/** Folder of the stored files inside a backup: `files/<storage name>/<path>`. */
export const FILES_DIR = 'files';

export type Dialect = 'sqlite' | 'postgres';

export interface ManifestDatabase {
  /** The products whose tables this dump holds (both when they share one database). */
  products: string[];
  dialect: Dialect;
  /** Path inside the backup, e.g. `databases/publishing.sqlite`. */
  file: string;
  size: number;
  sha256: string;
  /** Tables the dump holds: a restore refuses a target that has any of them already. */
  tables: string[];
  /** Where it came from, password masked. */
  source: string;
}

export interface ManifestFile {
  /** Which storage location (`publishing`, `runner`) the file belongs to. */
  storage: string;
  /** Relative POSIX path below that location. */
  path: string;
  size: number;
  sha256: string;
  /** Kept, because records compare it (publishing's `modified_at`) and clients see it (Last-Modified). */
  mtimeMs: number;
  /** Permission bits (host keys are 0600). */
  mode: number;
}

/**
 * A pointer of a storage location: a symbolic link at `path` naming `target`, an entry of the
 * same folder (a label's current release, `<product>/releases/<label>/current` → `<n>`).
 */
export interface ManifestLink {
  storage: string;
  path: string;
  target: string;
}

export interface ManifestDir {
  storage: string;
  path: string;
  mode: number;
}

export interface Manifest {
  format: typeof MANIFEST_FORMAT;
  formatVersion: number;
  pierVersion: string;
  /** When the database snapshots began: the state the records describe. */
  snapshotAt: string;
  /** When the last file was copied: files may be as new as this (see the consistency notes in take.ts). */
  finishedAt: string;
  databases: ManifestDatabase[];
  /** Storage locations and where their files are inside the backup. */
  storages: { name: string; dir: string }[];
  dirs: ManifestDir[];
  files: ManifestFile[];
  /** Absent in backups taken before label releases: they hold no pointers. */
  links?: ManifestLink[];
}

export const PIER_VERSION: string = pkg.version;

/**
 * Whether a relative path from a manifest is safe to join to a folder: `/`-separated, no empty,
 * `.` or `..` segment, not absolute, no NUL or backslash. A manifest is input like any other: a
 * crafted one must not make a restore write outside its target.
 */
export function safeRelativePath(p: unknown): p is string {
  if (typeof p !== 'string' || p.length === 0 || p.length > 4096) return false;
  if (p.includes('\0') || p.includes('\\')) return false;
  return p.split('/').every((s) => s !== '' && s !== '.' && s !== '..');
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
const isSha256 = (s: unknown): s is string => typeof s === 'string' && /^[0-9a-f]{64}$/.test(s);
const isName = (s: unknown): s is string => typeof s === 'string' && /^[a-z][a-z0-9-]{0,31}$/.test(s);

/** Reads and checks a backup's manifest; BackupDamagedError lists what is wrong with it. */
export function readManifest(backupDir: string): Manifest {
  const file = path.join(backupDir, MANIFEST_FILE);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      throw new BackupDamagedError([`${MANIFEST_FILE} is missing: ${backupDir} is not a Pier backup, or its backup did not finish`]);
    }
    throw new BackupDamagedError([`${MANIFEST_FILE} cannot be read: ${(e as Error).message}`]);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new BackupDamagedError([`${MANIFEST_FILE} is not valid JSON: ${(e as Error).message}`]);
  }
  const problems = manifestProblems(raw);
  if (problems.length) throw new BackupDamagedError(problems.map((p) => `${MANIFEST_FILE}: ${p}`));
  return raw as Manifest;
}

/** What makes `raw` not a manifest this version can restore; empty when it is one. */
export function manifestProblems(raw: unknown): string[] {
  if (typeof raw !== 'object' || raw === null) return ['not a JSON object'];
  const m = raw as Record<string, unknown>;
  if (m.format !== MANIFEST_FORMAT) return [`"format" is not "${MANIFEST_FORMAT}"`];
  if (m.formatVersion !== MANIFEST_VERSION) {
    return [`format version ${String(m.formatVersion)} is not supported (this Pier ${PIER_VERSION} reads version ${MANIFEST_VERSION})`];
  }
  const problems: string[] = [];
  for (const key of ['pierVersion', 'snapshotAt', 'finishedAt'] as const) {
    if (typeof m[key] !== 'string') problems.push(`"${key}" is missing`);
  }
  const list = (key: string): Record<string, unknown>[] => {
    const v = m[key];
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'object' && x !== null)) {
      problems.push(`"${key}" is not a list of objects`);
      return [];
    }
    return v as Record<string, unknown>[];
  };
  const storages = list('storages');
  const names = new Set<string>();
  for (const s of storages) {
    if (!isName(s.name) || !safeRelativePath(s.dir)) problems.push(`storage ${JSON.stringify(s)} has a bad name or folder`);
    else names.add(s.name);
  }
  const products = new Set<string>();
  for (const d of list('databases')) {
    const label = `database ${JSON.stringify(d.file)}`;
    if (!safeRelativePath(d.file)) problems.push(`${label}: bad file path`);
    if (d.dialect !== 'sqlite' && d.dialect !== 'postgres') problems.push(`${label}: unknown dialect ${JSON.stringify(d.dialect)}`);
    if (!isCount(d.size) || !isSha256(d.sha256)) problems.push(`${label}: bad size or sha256`);
    if (!Array.isArray(d.products) || d.products.length === 0 || !d.products.every(isName)) problems.push(`${label}: bad product list`);
    else {
      for (const p of d.products as string[]) {
        if (products.has(p)) problems.push(`${label}: product ${p} is in two dumps`);
        products.add(p);
      }
    }
    if (!Array.isArray(d.tables) || !d.tables.every((t) => typeof t === 'string')) problems.push(`${label}: bad table list`);
  }
  for (const d of list('dirs')) {
    if (!names.has(d.storage as string) || !safeRelativePath(d.path) || !isCount(d.mode)) problems.push(`bad folder entry ${JSON.stringify(d)}`);
  }
  const seen = new Set<string>();
  for (const f of list('files')) {
    if (!names.has(f.storage as string) || !safeRelativePath(f.path)) {
      problems.push(`bad file entry ${JSON.stringify(f)}`);
      continue;
    }
    const label = `${f.storage}/${f.path}`;
    if (!isCount(f.size) || !isSha256(f.sha256) || !isCount(f.mode) || typeof f.mtimeMs !== 'number') problems.push(`file ${label}: bad size, sha256, mode or time`);
    if (seen.has(label)) problems.push(`file ${label} is listed twice`);
    seen.add(label);
  }
  if (m.links !== undefined) {
    for (const l of list('links')) {
      // A link naming anything but an entry of its own folder could point a restored storage outside itself.
      if (!names.has(l.storage as string) || !safeRelativePath(l.path) || !isPointerTarget(l.target)) {
        problems.push(`bad link entry ${JSON.stringify(l)}`);
        continue;
      }
      const label = `${l.storage}/${l.path}`;
      if (seen.has(label)) problems.push(`link ${label} is listed twice`);
      seen.add(label);
    }
  }
  return problems;
}

/** Where a manifest file lives inside the backup. */
export function backupPathOf(manifest: Pick<Manifest, 'storages'>, file: { storage: string; path: string }): string {
  const dir = manifest.storages.find((s) => s.name === file.storage)?.dir;
  if (dir === undefined) throw new Error(`no storage ${file.storage} in the manifest`);
  return `${dir}/${file.path}`;
}

/** Writes the manifest under a temporary name, flushes it, then renames it into place. */
export function writeManifest(backupDir: string, manifest: Manifest): void {
  const target = path.join(backupDir, MANIFEST_FILE);
  const temp = `${target}.partial`;
  const fd = fs.openSync(temp, 'wx', 0o644);
  try {
    fs.writeSync(fd, `${JSON.stringify(manifest, null, 1)}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temp, target);
}

import fs from 'node:fs';
import path from 'node:path';
import { isPostgresUrl } from '../database/index.js';
import { databaseIdentity, maskDatabaseUrl } from './database-url.js';
import { BackupError } from './errors.js';
import { type CopiedInodes, copyStoredFile, hashFile, type StorageSource, walkStorage } from './file-copy.js';
import {
  DATABASES_DIR,
  FILES_DIR,
  type Manifest,
  MANIFEST_FORMAT,
  MANIFEST_VERSION,
  type ManifestDatabase,
  type ManifestDir,
  type ManifestFile,
  type ManifestLink,
  PIER_VERSION,
  writeManifest,
} from './manifest.js';
import { dumpPostgres, postgresTables, requireTool } from './postgres-dump.js';
import { Progress, type ProgressSink, say } from './progress.js';
import { snapshotSqlite } from './sqlite-snapshot.js';

/** One database to dump and the products whose tables it holds. */
export interface DatabaseSource {
  products: string[];
  url: string;
}

/** What a backup holds: the databases, then the stored files. */
export interface BackupPlan {
  databases: DatabaseSource[];
  storages: StorageSource[];
}

export interface TakeOptions {
  sink?: ProgressSink;
  now?: () => Date;
  /**
   * Runs after the database snapshots and before the files are copied (tests: changes that land
   * in between, as uploads, deletes and runs of a live deployment do).
   */
  afterSnapshot?: () => Promise<void>;
  /** Runs in each pass of the file copy between listing the files and copying them (tests: a rename meanwhile). */
  afterWalk?: (pass: number) => Promise<void>;
}

/** Products that name the same database (both may share one) share one dump. */
export function groupDatabases(byProduct: { product: string; url: string }[]): DatabaseSource[] {
  const groups = new Map<string, DatabaseSource>();
  for (const { product, url } of byProduct) {
    const id = databaseIdentity(url);
    const group = groups.get(id);
    if (group) group.products.push(product);
    else groups.set(id, { products: [product], url });
  }
  return [...groups.values()];
}

/** Absolute folders of the other storage locations inside `source`: each is copied once, under its own name. */
function nestedRoots(source: StorageSource, all: StorageSource[]): Set<string> {
  const root = path.resolve(source.root);
  const nested = new Set<string>();
  for (const other of all) {
    if (other === source) continue;
    for (const top of other.include) {
      const abs = path.resolve(other.root, top);
      if (abs.startsWith(root + path.sep)) nested.add(abs);
    }
  }
  return nested;
}

/** A folder a backup may be written to: new or empty, and outside the folders it copies (it would copy itself). */
/** `p` with every link on the way resolved, as far as it exists (the rest appended as given). */
function realPath(p: string): string {
  const missing: string[] = [];
  let at = path.resolve(p);
  for (;;) {
    try {
      return path.join(fs.realpathSync(at), ...missing.reverse());
    } catch {
      const parent = path.dirname(at);
      if (parent === at) return path.resolve(p);
      missing.push(path.basename(at));
      at = parent;
    }
  }
}

function checkTarget(target: string, storages: StorageSource[]): boolean {
  // Compared through links: a link into a storage folder would put the dumps (secrets) there,
  // to be served and copied into the backup itself.
  const dir = realPath(target);
  for (const s of storages) {
    const root = realPath(s.root);
    if (dir === root || dir.startsWith(root + path.sep) || root.startsWith(dir + path.sep)) {
      throw new BackupError(`${dir} overlaps the ${s.name} storage folder ${root}: write the backup somewhere else`);
    }
  }
  if (!fs.existsSync(dir)) return false;
  if (fs.readdirSync(dir).length > 0) throw new BackupError(`${dir} is not empty: a backup is written to a new or empty folder`);
  return true;
}

/**
 * Takes a backup of a running deployment into `dir`.
 *
 * Consistency: the databases are snapshotted first (SQLite's online backup, pg_dump: each one
 * consistent state), then the stored files are copied. Uploads, deletes and runs that land in
 * between leave the copied files and the snapshot's records of them apart: a file uploaded
 * after the snapshot has no record in it, a file deleted after it has a record and no file, a
 * replaced file is newer than its record. The backup keeps both as they were taken (a
 * PostgreSQL dump cannot be edited afterwards) and `pier restore` makes them agree before the
 * restored deployment serves anything: records follow the files that were copied (see
 * cli/backup-deployment.ts). Files that are bookkeeping of work in flight (temporary upload
 * files, leases) are left out here.
 */
export async function takeBackup(plan: BackupPlan, dir: string, options: TakeOptions = {}): Promise<Manifest> {
  const sink = options.sink ?? process.stderr;
  const now = options.now ?? (() => new Date());
  const target = path.resolve(dir);
  const existed = checkTarget(target, plan.storages);
  if (plan.databases.some((d) => isPostgresUrl(d.url))) await requireTool('pg_dump');
  // A backup holds secrets (the runner's JWT secret in its database, the SFTP host keys): a new
  // backup folder is readable by its owner only.
  fs.mkdirSync(target, { recursive: true, mode: 0o700 });
  if (existed) fs.chmodSync(target, 0o700);
  try {
    const snapshotAt = now().toISOString();
    fs.mkdirSync(path.join(target, DATABASES_DIR));
    const databases: ManifestDatabase[] = [];
    for (const source of plan.databases) databases.push(...(await snapshotDatabase(source, target, sink)));
    await options.afterSnapshot?.();
    const { dirs, files, links } = await copyStorages(plan.storages, target, { sink, afterWalk: options.afterWalk });
    const manifest: Manifest = {
      format: MANIFEST_FORMAT,
      formatVersion: MANIFEST_VERSION,
      pierVersion: PIER_VERSION,
      snapshotAt,
      finishedAt: now().toISOString(),
      databases,
      storages: plan.storages.map((s) => ({ name: s.name, dir: `${FILES_DIR}/${s.name}` })),
      dirs,
      files,
      links,
    };
    writeManifest(target, manifest);
    return manifest;
  } catch (e) {
    // Nothing half-written stays behind to be mistaken for a backup (it has no manifest anyway).
    if (existed) for (const name of fs.readdirSync(target)) fs.rmSync(path.join(target, name), { recursive: true, force: true });
    else fs.rmSync(target, { recursive: true, force: true });
    throw e;
  }
}

async function snapshotDatabase(source: DatabaseSource, target: string, sink: ProgressSink): Promise<ManifestDatabase[]> {
  const base = source.products.join('+');
  const postgres = isPostgresUrl(source.url);
  const file = `${DATABASES_DIR}/${base}.${postgres ? 'pgdump' : 'sqlite'}`;
  const abs = path.join(target, file);
  const shown = maskDatabaseUrl(source.url);
  let tables: string[];
  if (postgres) {
    say(`dumping the ${source.products.join(' and ')} database ${shown} with pg_dump`, sink);
    tables = await postgresTables(source.url);
    await dumpPostgres(source.url, abs);
  } else {
    if (!fs.existsSync(source.url)) {
      // Never started: there is nothing of it to back up, and a restore leaves it to start fresh.
      say(`no ${source.products.join(' and ')} database at ${shown} yet: nothing to back up there`, sink);
      return [];
    }
    say(`copying the ${source.products.join(' and ')} database ${shown} (SQLite online backup)`, sink);
    ({ tables } = await snapshotSqlite(source.url, abs));
  }
  fs.chmodSync(abs, 0o600);
  const { size, sha256 } = await hashFile(abs);
  return [{ products: source.products, dialect: postgres ? 'postgres' : 'sqlite', file, size, sha256, tables, source: shown }];
}

/** At most this many files are copied at once (each one waits on its fsync). */
const PARALLEL_COPIES = 4;

interface Pass {
  pass: number;
  what: string;
  sink: ProgressSink;
  afterWalk?: (pass: number) => Promise<void>;
}

interface Copied {
  dirs: ManifestDir[];
  files: ManifestFile[];
  /** Pointers by `storage\0path`: the later pass's reading wins (a release made meanwhile). */
  links: Map<string, ManifestLink>;
  /** `storage\0path` of every folder and file in the backup. */
  seen: Set<string>;
  /** Stored files with several names (releases share their label's files), copied once for all. */
  inodes: CopiedInodes;
}

/**
 * Copies what the storage locations hold now and the backup does not have yet; answers the
 * number of files copied. The list is taken once per pass, so a file moved to a new name during
 * the pass (an update site uploaded to a temporary folder, then renamed to its label) is found
 * under neither name.
 */
async function copyPass(storages: StorageSource[], target: string, options: Pass, into: Copied): Promise<number> {
  const key = (storage: string, p: string) => `${storage}\0${p}`;
  const walked = [];
  for (const s of storages) {
    const found = await walkStorage(s, nestedRoots(s, storages));
    walked.push({ source: s, dirs: found.dirs.filter((d) => !into.seen.has(key(s.name, d))), files: found.files.filter((f) => !into.seen.has(key(s.name, f.path))) });
    for (const l of found.links) into.links.set(key(s.name, l.path), { storage: s.name, ...l });
  }
  await options.afterWalk?.(options.pass);
  const total = walked.reduce((n, w) => n + w.files.length, 0);
  const progress = new Progress(options.what, total, walked.reduce((n, w) => w.files.reduce((m, f) => m + f.size, n), 0), options.sink);
  let copiedFiles = 0;
  for (const { source, dirs, files } of walked) {
    const root = path.join(target, FILES_DIR, source.name);
    fs.mkdirSync(root, { recursive: true });
    for (const d of dirs) {
      const st = fs.lstatSync(path.join(source.root, d), { throwIfNoEntry: false });
      fs.mkdirSync(path.join(root, d), { recursive: true });
      into.dirs.push({ storage: source.name, path: d, mode: st ? st.mode & 0o777 : 0o755 });
      into.seen.add(key(source.name, d));
    }
    let next = 0;
    const worker = async () => {
      while (next < files.length) {
        const f = files[next++]!;
        const to = path.join(root, f.path);
        fs.mkdirSync(path.dirname(to), { recursive: true });
        const copied = await copyStoredFile(path.join(source.root, f.path), to, into.inodes);
        progress.advance(copied?.size ?? 0);
        // Gone since the walk (deleted or moved away): not part of this backup.
        if (!copied) continue;
        into.files.push({ storage: source.name, path: f.path, ...copied });
        into.seen.add(key(source.name, f.path));
        copiedFiles++;
      }
    };
    await Promise.all(Array.from({ length: PARALLEL_COPIES }, worker));
  }
  // The second pass says something only when it found something.
  if (total > 0 || options.pass === 1) progress.done();
  return copiedFiles;
}

/**
 * Copies the stored files, then once more whatever appeared meanwhile: files moved during the
 * first pass are found under their new name then (the restore makes the records follow). A
 * third pass is not made: the backup has to end while uploads go on.
 */
async function copyStorages(
  storages: StorageSource[],
  target: string,
  options: Pick<Pass, 'sink' | 'afterWalk'>,
): Promise<{ dirs: ManifestDir[]; files: ManifestFile[]; links: ManifestLink[] }> {
  const copied: Copied = { dirs: [], files: [], seen: new Set(), links: new Map(), inodes: new Map() };
  await copyPass(storages, target, { ...options, pass: 1, what: 'copying stored files' }, copied);
  await copyPass(storages, target, { ...options, pass: 2, what: 'copying files stored meanwhile' }, copied);
  const order = (a: { storage: string; path: string }, b: { storage: string; path: string }) =>
    a.storage < b.storage ? -1 : a.storage > b.storage ? 1 : a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
  return { dirs: copied.dirs.sort(order), files: copied.files.sort(order), links: [...copied.links.values()].sort(order) };
}

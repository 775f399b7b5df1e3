import fs from 'node:fs';
import path from 'node:path';
import { isPostgresUrl } from '../database/index.js';
import { databaseIdentity, maskDatabaseUrl } from './database-url.js';
import { BackupDamagedError, RestoreRefusedError } from './errors.js';
import { copyChecked, holdsFiles } from './file-copy.js';
import { backupPathOf, type Manifest, type ManifestDatabase, readManifest } from './manifest.js';
import { postgresTables, requireTool, restorePostgres } from './postgres-dump.js';
import { Progress, type ProgressSink, say } from './progress.js';
import { restoreSqlite, sqliteTablesAt } from './sqlite-snapshot.js';
import { databaseProblems } from './verify.js';

/** Where a restore puts things: each product's database URL and each storage location's folder. */
export interface RestoreTargets {
  databases: Record<string, string>;
  storages: Record<string, string>;
  /**
   * Tables that mark a database as holding Pier data (the products' migration tables): a target
   * with one of them is refused even when the backup has no dump for that product, since the
   * restore goes on to reconcile every product's records with the restored files.
   */
  markers: string[];
  /**
   * Stored files that are never changed in place (only replaced by a rename), so identical ones
   * may share one inode: label releases, which hard-link unchanged files on the server, are
   * restored as links again instead of one copy per kept release.
   */
  shareable?: (storage: string, path: string) => boolean;
}

/** Lists at most a few names (a refusal message stays one readable line). */
const some = (names: string[]) => (names.length > 5 ? `${names.slice(0, 5).join(', ')}, …` : names.join(', '));

/** The one target database of a dump; refuses dumps that do not fit the configured targets. */
function targetOf(d: ManifestDatabase, targets: RestoreTargets): string {
  const urls = d.products.map((p) => {
    const url = targets.databases[p];
    if (!url) throw new RestoreRefusedError(`the backup holds a database of "${p}", which this Pier does not know`);
    return url;
  });
  const url = urls[0]!;
  if (new Set(urls.map(databaseIdentity)).size > 1) {
    throw new RestoreRefusedError(
      `the backup holds ${d.products.join(' and ')} in one database (${d.file}): set PIER_DATABASE_URL and RUNNER_DATABASE_URL to the same database to restore it`,
    );
  }
  const postgres = isPostgresUrl(url);
  if (postgres !== (d.dialect === 'postgres')) {
    throw new RestoreRefusedError(
      `the backup holds a ${d.dialect === 'postgres' ? 'PostgreSQL' : 'SQLite'} database of ${d.products.join(' and ')} (${d.file}), ` +
        `but the target ${maskDatabaseUrl(url)} is ${postgres ? 'PostgreSQL' : 'a SQLite file'}: set the database URL to ${d.dialect === 'postgres' ? 'postgres://… of an empty database' : 'a SQLite file path'}`,
    );
  }
  return url;
}

/**
 * Refuses a target that is not empty: any of its databases has Pier tables (SQLite: any table),
 * or a storage folder holds files. Every configured target is checked, not only those the
 * backup has a dump or files for.
 */
async function checkEmpty(manifest: Manifest, targets: RestoreTargets, urls: Map<ManifestDatabase, string>): Promise<void> {
  const sqliteFiles = new Set<string>();
  for (const d of manifest.databases) {
    if (d.dialect !== 'sqlite') continue;
    const file = path.resolve(urls.get(d)!);
    if (sqliteFiles.has(file)) throw new RestoreRefusedError(`two SQLite dumps of the backup would go to one file, ${file}`);
    sqliteFiles.add(file);
  }
  const ours = new Set([...targets.markers, ...manifest.databases.flatMap((d) => d.tables)]);
  const seen = new Set<string>();
  for (const url of Object.values(targets.databases)) {
    if (seen.has(databaseIdentity(url))) continue;
    seen.add(databaseIdentity(url));
    if (!isPostgresUrl(url)) {
      const tables = sqliteTablesAt(url);
      if (tables.length) throw new RestoreRefusedError(`the database ${url} is not empty (tables ${some(tables)}): restore into an empty data dir`);
    } else {
      const clash = (await postgresTables(url)).filter((t) => ours.has(t));
      if (clash.length) {
        throw new RestoreRefusedError(`the database ${maskDatabaseUrl(url)} already has Pier tables (${some(clash)}): restore into an empty database`);
      }
    }
  }
  for (const s of manifest.storages) {
    if (!targets.storages[s.name]) throw new RestoreRefusedError(`the backup holds files of a storage location "${s.name}", which this Pier does not know`);
  }
  for (const [name, root] of Object.entries(targets.storages)) {
    const found = holdsFiles(root);
    if (found) throw new RestoreRefusedError(`the ${name} storage folder ${root} is not empty (it holds ${found}): restore into empty storage folders`);
  }
}

/** What a restore created, undone when it fails (the target was empty before). */
class Created {
  private readonly files: string[] = [];
  private readonly dirs: string[] = [];
  readonly databases: string[] = [];

  mkdir(dir: string, mode?: number): void {
    const first = fs.mkdirSync(dir, { recursive: true });
    if (first) {
      // Every level mkdir created, so each is removed again on failure.
      for (let d = dir; d.length >= first.length; d = path.dirname(d)) this.dirs.push(d);
    }
    if (mode !== undefined) fs.chmodSync(dir, mode);
  }

  file(p: string): void {
    this.files.push(p);
  }

  undo(): void {
    for (const f of this.files.reverse()) fs.rmSync(f, { force: true });
    for (const d of [...new Set(this.dirs)].sort((a, b) => b.length - a.length)) fs.rmSync(d, { recursive: true, force: true });
  }
}

/**
 * Restores a backup into an empty target: checks the target is empty and the dumps are sound,
 * copies the stored files (each checked against its size and sha256), then puts the databases
 * in place (SQLite: the file; PostgreSQL: pg_restore in one transaction). On a failure what was
 * written is removed again. Records and files are made to agree afterwards by the caller (the
 * products know their records; see cli/backup-deployment.ts).
 */
export async function restoreBackup(dir: string, targets: RestoreTargets, options: { sink?: ProgressSink } = {}): Promise<Manifest> {
  const sink = options.sink ?? process.stderr;
  const manifest = readManifest(dir);
  const urls = new Map(manifest.databases.map((d) => [d, targetOf(d, targets)]));
  if (manifest.databases.some((d) => d.dialect === 'postgres')) await requireTool('pg_restore');
  await checkEmpty(manifest, targets, urls);
  const warnings: string[] = [];
  const problems: string[] = [];
  for (const d of manifest.databases) problems.push(...(await databaseProblems(dir, d, warnings)));
  if (problems.length) throw new BackupDamagedError(problems);

  const created = new Created();
  try {
    const bytes = manifest.files.reduce((n, f) => n + f.size, 0);
    const progress = new Progress('restoring stored files', manifest.files.length, bytes, sink);
    for (const s of manifest.storages) created.mkdir(targets.storages[s.name]!);
    for (const d of manifest.dirs) created.mkdir(path.join(targets.storages[d.storage]!, d.path), d.mode & 0o777);
    /** The first restored file of each content, time and mode that may be shared. */
    const restored = new Map<string, string>();
    for (const f of manifest.files) {
      const to = path.join(targets.storages[f.storage]!, f.path);
      created.mkdir(path.dirname(to));
      created.file(to);
      const share = targets.shareable?.(f.storage, f.path) ? `${f.storage}\0${f.sha256}\0${f.size}\0${f.mtimeMs}\0${f.mode}` : null;
      const same = share === null ? undefined : restored.get(share);
      if (same !== undefined) fs.linkSync(same, to);
      else {
        await copyChecked(path.join(dir, backupPathOf(manifest, f)), to, f, f);
        if (share !== null) restored.set(share, to);
      }
      progress.advance(f.size);
    }
    progress.done();
    // Pointers after the files they name: a label's current release is served as soon as the
    // restored deployment starts, not its upload folder.
    for (const l of manifest.links ?? []) {
      const at = path.join(targets.storages[l.storage]!, l.path);
      created.mkdir(path.dirname(at));
      created.file(at);
      fs.symlinkSync(l.target, at);
    }
    for (const d of manifest.databases) {
      const url = urls.get(d)!;
      say(`restoring the ${d.products.join(' and ')} database into ${maskDatabaseUrl(url)}`, sink);
      if (d.dialect === 'sqlite') {
        created.mkdir(path.dirname(path.resolve(url)));
        created.file(url);
        await restoreSqlite(path.join(dir, d.file), url, d);
      } else {
        await restorePostgres(url, path.join(dir, d.file));
        created.databases.push(maskDatabaseUrl(url));
      }
    }
  } catch (e) {
    created.undo();
    if (e instanceof Error) {
      const kept = created.databases.length
        ? ` The database${created.databases.length > 1 ? 's' : ''} ${created.databases.join(', ')} ${created.databases.length > 1 ? 'were' : 'was'} restored already: empty ${created.databases.length > 1 ? 'them' : 'it'} before trying again; nothing else of the restore was kept.`
        : ' Nothing of the restore was kept.';
      e.message = `${e.message.replace(/\.$/, '')}.${kept}`;
    }
    throw e;
  }
  for (const w of warnings) say(`warning: ${w}`, sink);
  return manifest;
}

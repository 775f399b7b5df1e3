import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { BackupError } from './errors.js';
import { copyChecked } from './file-copy.js';

/** Tables of a SQLite database (SQLite's own excluded). */
function tablesOf(db: SQLite.Database): string[] {
  const rows = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name").all() as {
    name: string;
  }[];
  return rows.map((r) => r.name);
}

/**
 * Copies a live SQLite database to `dest` with SQLite's online backup API: the copy is one
 * consistent state of the database while the server keeps writing. Steps after the first copy
 * every remaining page at once: a write by another connection between two steps restarts the
 * backup, so small steps could restart for ever under a steady stream of writes, while one step
 * holds only a read snapshot (WAL: writers go on meanwhile). The copy is switched from WAL to a
 * rollback journal, so the dump is one self-contained file; the server sets WAL again when it
 * opens a restored copy.
 */
export async function snapshotSqlite(source: string, dest: string): Promise<{ tables: string[] }> {
  let db: SQLite.Database;
  try {
    db = new SQLite(source, { fileMustExist: true });
  } catch (e) {
    throw new BackupError(`cannot open the SQLite database ${source}: ${(e as Error).message}`);
  }
  try {
    db.pragma('busy_timeout = 5000');
    await db.backup(dest, { progress: () => 0x7fffffff });
  } finally {
    db.close();
  }
  const copy = new SQLite(dest, { fileMustExist: true });
  try {
    copy.pragma('journal_mode = DELETE');
    return { tables: tablesOf(copy) };
  } finally {
    copy.close();
  }
}

/** `PRAGMA integrity_check` of a dump: empty when SQLite finds nothing wrong, else its findings. */
export function sqliteIntegrityProblems(file: string): string[] {
  let db: SQLite.Database;
  try {
    db = new SQLite(file, { readonly: true, fileMustExist: true });
  } catch (e) {
    return [`cannot be opened as SQLite: ${(e as Error).message}`];
  }
  try {
    const rows = db.pragma('integrity_check') as { integrity_check: string }[];
    const found = rows.map((r) => r.integrity_check).filter((r) => r !== 'ok');
    return found;
  } catch (e) {
    return [(e as Error).message];
  } finally {
    db.close();
  }
}

/** Tables of the SQLite database at `file` ([] when there is no file or it is empty). */
export function sqliteTablesAt(file: string): string[] {
  const st = fs.statSync(file, { throwIfNoEntry: false });
  if (!st || st.size === 0) return [];
  const db = new SQLite(file, { readonly: true, fileMustExist: true });
  try {
    return tablesOf(db);
  } finally {
    db.close();
  }
}

/**
 * Puts a dump in place as the database file `target` (which holds no tables: checked before):
 * copied under a temporary name with its checksum checked, then renamed. Journal files left
 * beside an empty or missing target belong to no data and would be read as part of the new file.
 */
export async function restoreSqlite(dump: string, target: string, expected: { size: number; sha256: string }): Promise<void> {
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const temp = `${target}.restoring`;
  fs.rmSync(temp, { force: true });
  await copyChecked(dump, temp, expected, { mode: 0o644 });
  for (const suffix of ['-wal', '-shm', '-journal']) fs.rmSync(`${target}${suffix}`, { force: true });
  fs.renameSync(temp, target);
}

import fs from 'node:fs';
import path from 'node:path';
import { hashFile } from './file-copy.js';
import { backupPathOf, DATABASES_DIR, type Manifest, type ManifestDatabase, MANIFEST_FILE, readManifest } from './manifest.js';
import { postgresDumpProblem } from './postgres-dump.js';
import { Progress, type ProgressSink } from './progress.js';
import { sqliteIntegrityProblems } from './sqlite-snapshot.js';

export interface VerifyResult {
  manifest: Manifest;
  /** What makes the backup unfit to restore, one line each, naming the file. */
  problems: string[];
  /** Worth saying, but nothing a restore needs (a file the manifest does not list, a check that could not run). */
  warnings: string[];
  files: number;
  bytes: number;
}

/** Compares one file of the backup with what the manifest says of it; null when they agree. */
async function fileProblem(dir: string, rel: string, expected: { size: number; sha256: string }): Promise<string | null> {
  const abs = path.join(dir, rel);
  const st = fs.lstatSync(abs, { throwIfNoEntry: false });
  if (!st) return `${rel}: missing`;
  if (!st.isFile()) return `${rel}: not a regular file`;
  const got = await hashFile(abs);
  if (got.size !== expected.size) return `${rel}: ${got.size} bytes, the manifest says ${expected.size}`;
  if (got.sha256 !== expected.sha256) return `${rel}: sha256 differs from the manifest (the file is damaged)`;
  return null;
}

/** Checks a database dump: its checksum, then what its own tool says of it. */
export async function databaseProblems(dir: string, d: ManifestDatabase, warnings: string[]): Promise<string[]> {
  const problem = await fileProblem(dir, d.file, d);
  if (problem) return [problem];
  const abs = path.join(dir, d.file);
  if (d.dialect === 'sqlite') return sqliteIntegrityProblems(abs).map((p) => `${d.file}: integrity_check: ${p}`);
  try {
    const said = await postgresDumpProblem(abs);
    return said ? [`${d.file}: pg_restore cannot read it: ${said}`] : [];
  } catch {
    warnings.push(`${d.file}: pg_restore is not installed, so only the dump's checksum was checked`);
    return [];
  }
}

/** Files in the backup's folders that the manifest does not list (left by hand, or by something else). */
function unlisted(dir: string, manifest: Manifest): string[] {
  const listed = new Set([MANIFEST_FILE, ...manifest.databases.map((d) => d.file), ...manifest.files.map((f) => backupPathOf(manifest, f))]);
  const out: string[] = [];
  const visit = (rel: string) => {
    for (const d of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const childRel = rel === '' ? d.name : `${rel}/${d.name}`;
      if (d.isDirectory()) visit(childRel);
      else if (!listed.has(childRel)) out.push(childRel);
    }
  };
  for (const top of [DATABASES_DIR, ...manifest.storages.map((s) => s.dir)]) {
    if (fs.existsSync(path.join(dir, top))) visit(top);
  }
  return out;
}

/**
 * Checks a backup without restoring it: the manifest reads, every dump and file is there with
 * the size and sha256 it lists, SQLite dumps pass `PRAGMA integrity_check` and PostgreSQL dumps
 * can be read by pg_restore. A manifest that cannot be read throws BackupDamagedError.
 */
export async function verifyBackup(dir: string, options: { sink?: ProgressSink } = {}): Promise<VerifyResult> {
  const manifest = readManifest(dir);
  const problems: string[] = [];
  const warnings: string[] = [];
  for (const d of manifest.databases) problems.push(...(await databaseProblems(dir, d, warnings)));
  const bytes = manifest.files.reduce((n, f) => n + f.size, 0);
  const progress = new Progress('checking stored files', manifest.files.length, bytes, options.sink ?? process.stderr);
  for (const f of manifest.files) {
    const problem = await fileProblem(dir, backupPathOf(manifest, f), f);
    if (problem) problems.push(problem);
    progress.advance(f.size);
  }
  progress.done();
  for (const extra of unlisted(dir, manifest)) warnings.push(`${extra}: not listed in the manifest (a restore leaves it out)`);
  return { manifest, problems, warnings, files: manifest.files.length, bytes };
}

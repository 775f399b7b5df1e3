import fs from 'node:fs';
import path from 'node:path';
import type { RunUser } from './run-user.js';

/** The folders of one run, under `<work-dir>/runs/<run>-<attempt>/`. */
export interface RunFolder {
  dir: string;
  /** The run's copy of the workflow archive ({archive}). */
  archive: string;
  /** The unpacked archive ({workflow}). */
  workflowDir: string;
  /** Where the command leaves its outputs ({out}). */
  outDir: string;
  /** HOME and TMPDIR of a command run as a user of `--run-as`: its own, removed with the run. */
  home: string | null;
  tmp: string | null;
}

/** A directory of the work directory, checked: a real directory (not a link) of this process's user. */
async function ownDirectory(dir: string, mode: number, uid: number | undefined): Promise<void> {
  await fs.promises.mkdir(dir, { recursive: true, mode });
  const stat = await fs.promises.lstat(dir);
  if (!stat.isDirectory()) throw new Error(`${dir} is not a directory (a symbolic link?): the executor keeps its runs there`);
  if (uid !== undefined && stat.uid !== uid) throw new Error(`${dir} belongs to uid ${stat.uid}, not to the executor's user: the executor keeps its runs there`);
  // Nobody else may rename or replace what is in it (a run folder swapped while it is filled).
  await fs.promises.chmod(dir, mode);
}

/**
 * The work directory and its two folders, writable by the executor's user only: `runs/` (0711: a
 * command's user passes through to its own run folder, but cannot list the others) and
 * `archives/` (0700: the cached workflow archives of every project, read by the executor alone).
 */
export async function prepareWorkDir(workDir: string): Promise<{ runs: string; archives: string }> {
  const uid = process.getuid?.();
  const stat = await fs.promises.lstat(workDir).catch(() => null);
  if (stat?.isSymbolicLink()) throw new Error(`the work directory ${workDir} is a symbolic link: give its real path`);
  await fs.promises.mkdir(workDir, { recursive: true });
  const own = await fs.promises.lstat(workDir);
  if (uid !== undefined && own.uid !== uid) throw new Error(`the work directory ${workDir} belongs to uid ${own.uid}, not to the executor's user`);
  // Group and others keep what they had, but never write access.
  if (own.mode & 0o022) await fs.promises.chmod(workDir, own.mode & 0o7755);
  const runs = path.join(workDir, 'runs');
  const archives = path.join(workDir, 'archives');
  await ownDirectory(runs, 0o711, uid);
  await ownDirectory(archives, 0o700, uid);
  return { runs, archives };
}

/**
 * A fresh folder for one run, private to the executor (0700) while it is filled: no process of
 * any earlier run can reach into it while the archive is copied and unpacked. A folder of the
 * same name (left by an executor that died) is removed first.
 */
export async function createRunFolder(runsDir: string, name: string, ownHome: boolean): Promise<RunFolder> {
  const dir = path.join(runsDir, name);
  await fs.promises.rm(dir, { recursive: true, force: true });
  await fs.promises.mkdir(dir, { mode: 0o700 });
  await fs.promises.chmod(dir, 0o700);
  const folder: RunFolder = {
    dir,
    archive: path.join(dir, 'workflow.knwf'),
    workflowDir: path.join(dir, 'workflow'),
    outDir: path.join(dir, 'out'),
    home: ownHome ? path.join(dir, 'home') : null,
    tmp: ownHome ? path.join(dir, 'tmp') : null,
  };
  for (const d of [folder.outDir, folder.home, folder.tmp]) if (d) await fs.promises.mkdir(d);
  return folder;
}

/** Every entry under `dir` (not `dir` itself), children before their directory; links are not followed. */
async function* entries(dir: string): AsyncGenerator<string> {
  for (const entry of await fs.promises.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* entries(p);
    yield p;
  }
}

/**
 * Gives the filled folder to the command. With a `--run-as` user: every entry becomes that
 * user's (lchown: only the executor wrote here, and a link would not be followed), the folder
 * itself last; it stays 0700, so only that user (and the executor) can enter it. Without: the
 * folder opens as a new directory would under the umask (a command that switches users itself
 * may rely on a shared group).
 */
export async function handOver(folder: RunFolder, user: RunUser | null, umask: number): Promise<void> {
  if (user) {
    for await (const p of entries(folder.dir)) await fs.promises.lchown(p, user.uid, user.gid);
    await fs.promises.lchown(folder.dir, user.uid, user.gid);
    return;
  }
  await fs.promises.chmod(folder.dir, 0o777 & ~umask);
}

/** This process's umask, from /proc (Linux) without changing it; 022 elsewhere. */
export function currentUmask(): number {
  try {
    const m = /^Umask:\s+([0-7]+)/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number.parseInt(m[1]!, 8);
  } catch {
    // not Linux
  }
  return 0o022;
}

import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { RESERVED_NAME_PREFIX } from './storage.js';

/*
 * The temporary files of a local storage (uploads being written, release copies being built,
 * trees being removed, links being replaced) and the leases that tell instances sharing the
 * storage whose files those are: a sweep deletes only what no live writer may still need.
 */

const TEMP_PREFIX = `${RESERVED_NAME_PREFIX}tmp-`;
/** Leases of the instances writing to this storage, one file each (see `sweepTemporary`). */
const LEASE_DIR = `${RESERVED_NAME_PREFIX}instances`;
/** `.pier-tmp-<instance>_<random>`: the owner of a temporary file is in its name. */
const TEMP_NAME = /^\.pier-tmp-([0-9a-z]{16})_/;
/**
 * Whether an entry of a storage location (a path relative to its root) is bookkeeping of work in
 * flight rather than a stored file: a temporary file of an upload, or the instances' leases.
 * Backups leave these out (a restored deployment has no uploads in flight).
 */
export function isTransientEntry(relPath: string): boolean {
  return relPath === LEASE_DIR || path.posix.basename(relPath).startsWith(TEMP_PREFIX);
}

/** Whether a name in a folder is a temporary file (an empty folder may still hold these). */
export const isTemporaryName = (name: string) => name.startsWith(TEMP_PREFIX);

/** Temporary files named before names carried their owner: only age tells they are leftovers. */
const UNOWNED_TEMP_MAX_AGE_MS = 60 * 60_000;
/** How long an instance's lease runs without a renewal (each sweep and each new upload renew it). */
const DEFAULT_LEASE_MS = 15 * 60_000;

/** Who writes temporary files: one per process unless a test stands in for another instance. */
export interface StorageInstance {
  id: string;
  pid: number;
  host: string;
}

const THIS_PROCESS: StorageInstance = { id: randomBytes(8).toString('hex'), pid: process.pid, host: os.hostname() };

/** Temporary files of open uploads, per instance id: what a sweep of this process must keep. */
const liveTemps = new Map<string, Set<string>>();

export interface LocalStorageOptions {
  /** Clock of the leases (tests inject one). */
  now?: () => number;
  leaseMs?: number;
  instance?: StorageInstance;
}

interface Lease {
  pid: number;
  host: string;
  expiresAt: number;
}

/** Whether a process of this machine still runs (EPERM: it runs under another user). */
function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface TemporaryFiles {
  /**
   * A new temporary name in `dir`, owned by this instance (its lease renewed first) and known as
   * live until `done`: a sweep in between must not take it.
   */
  take(dir: string): string;
  /** The temporary file was renamed into place or deleted: a sweep may take whatever is left. */
  done(temp: string): void;
  /** Deletes every temporary file below `dir` (uploads under a folder that moved can no longer commit). */
  sweepAll(dir: string): Promise<number>;
  /**
   * Deletes the temporary files below `dir` that no live writer may still need: this instance's
   * that are not live, others' whose lease ran out or whose process is gone. After a sweep of
   * the whole root (`whole`), the leases of instances that are gone go too.
   */
  sweepStale(dir: string, whole: boolean): Promise<number>;
}

export function temporaryFiles(root: string, options: LocalStorageOptions = {}): TemporaryFiles {
  const { now = Date.now, leaseMs = DEFAULT_LEASE_MS, instance = THIS_PROCESS } = options;
  const live = liveTemps.get(instance.id) ?? new Set<string>();
  liveTemps.set(instance.id, live);
  const leaseDir = path.join(root, LEASE_DIR);
  const leaseFile = (id: string) => path.join(leaseDir, id);
  let renewedAt = Number.NEGATIVE_INFINITY;
  /**
   * Tells instances sharing this storage that this one is alive, until `expiresAt`: written
   * before its first temporary file and renewed by every sweep, so another instance deletes
   * these files only once the lease ran out (or, on this machine, once the process is gone).
   */
  const renewLease = (force = false) => {
    const at = now();
    if (!force && at - renewedAt < leaseMs / 3) return;
    fs.mkdirSync(leaseDir, { recursive: true });
    const lease: Lease = { pid: instance.pid, host: instance.host, expiresAt: at + leaseMs };
    const temp = `${leaseFile(instance.id)}.${randomUUID()}`;
    fs.writeFileSync(temp, JSON.stringify(lease));
    fs.renameSync(temp, leaseFile(instance.id));
    renewedAt = at;
  };
  /** Whether the instance that named a temporary file may still be writing it. */
  const ownerAlive = (id: string, cache: Map<string, boolean>): boolean => {
    if (id === instance.id) return false; // this instance's live files are known by name
    const known = cache.get(id);
    if (known !== undefined) return known;
    let alive = false;
    try {
      const lease = JSON.parse(fs.readFileSync(leaseFile(id), 'utf8')) as Lease;
      const sameMachine = lease.host === instance.host;
      // On this machine a process that is gone (or whose pid is ours now: the previous run
      // of a restarted container) writes nothing more, whatever its lease says.
      alive = lease.expiresAt > now() && !(sameMachine && (lease.pid === instance.pid || !processRuns(lease.pid)));
    } catch {
      alive = false; // no lease (it is written before any temporary file) or a torn one: gone
    }
    cache.set(id, alive);
    return alive;
  };

  /** Deletes temporary files below `dir` for which `stale` says so. */
  async function sweep(dir: string, stale: (file: string, name: string) => boolean): Promise<number> {
    let removed = 0;
    let names: fs.Dirent[];
    try {
      names = await fsp.readdir(dir, { withFileTypes: true });
    } catch {
      return 0;
    }
    for (const d of names) {
      const p = path.join(dir, d.name);
      if (d.isDirectory() && d.name.startsWith(TEMP_PREFIX)) {
        // A release copy being built (linkTree) or a tree being removed (removeTree) by a
        // process that died: its hard links would keep replaced files' bytes on disk for good.
        if (stale(p, d.name)) {
          await fsp.rm(p, { recursive: true, force: true });
          removed++;
        }
      } else if (d.isDirectory()) {
        if (d.name !== LEASE_DIR) removed += await sweep(p, stale);
      } else if (d.name.startsWith(TEMP_PREFIX) && stale(p, d.name)) {
        await fsp.rm(p, { force: true });
        removed++;
      }
    }
    return removed;
  }

  return {
    take(dir) {
      // randomUUID draws from a cached entropy pool: randomBytes(8) was a synchronous OpenSSL call
      // per uploaded file, visible in SFTP profiles of many-small-file uploads.
      renewLease();
      const temp = path.join(dir, `${TEMP_PREFIX}${instance.id}_${randomUUID()}`);
      live.add(temp);
      return temp;
    },

    done(temp) {
      live.delete(temp);
    },

    sweepAll: (dir) => sweep(dir, () => true),

    async sweepStale(dir, whole) {
      renewLease(true);
      const owners = new Map<string, boolean>();
      const removed = await sweep(dir, (file, name) => {
        const owner = TEMP_NAME.exec(name)?.[1];
        if (owner === undefined) {
          const st = fs.lstatSync(file, { throwIfNoEntry: false });
          return !!st && st.mtimeMs < now() - UNOWNED_TEMP_MAX_AGE_MS;
        }
        return owner === instance.id ? !live.has(file) : !ownerAlive(owner, owners);
      });
      // Leases of instances that are gone, once their files are (a whole sweep only).
      if (whole) {
        for (const [id, alive] of owners) if (!alive) fs.rmSync(leaseFile(id), { force: true });
      }
      return removed;
    },
  };
}

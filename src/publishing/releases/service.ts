/**
 * Atomic label releases (spec area A "Files": a label is symlinked on the server). SFTP writes
 * `update-site/<label>/` as before; when an upload is complete, that folder is copied (hard
 * links, no bytes) to a candidate folder `<product>/releases/<label>/candidate-<n>-<secret>/`,
 * the copy is crawled there (the download host answers it only at its unguessable address
 * `<label>@<n>~<secret>/`), and when it installs (no fatal or error problems) it is renamed to
 * `<product>/releases/<label>/<n>/` and the label's pointer `<product>/releases/<label>/current`
 * moves to it in one rename. So `<label>@<n>/` only ever serves an accepted release, and the
 * label's own address only its current one: a downloader sees one upload or the other, never a
 * mix, and a label with no release yet serves nothing. Earlier releases are kept for a rollback,
 * `keep` per label.
 */
import { randomBytes } from 'node:crypto';
import { DEFAULT_LIMITS, type FileLimits } from '../../infra/config.js';
import { ConflictError, NotFoundError } from '../../infra/errors.js';
import type { Storage } from '../../infra/storage.js';
import { CANDIDATE_SECRET, candidatePrefix, candidateSegment, releaseKeys, releaseNumberOf } from './keys.js';
import type { ReleaseRow, ReleasesRepository } from './repository.js';
import { releaseHoldings } from './usage.js';

/** Who moved a label: shown in the release history (`pier staff show`, `GET …/labels`). */
export type ReleasedBy =
  | { kind: 'vendor' }
  | { kind: 'automatic' }
  | { kind: 'staff' }
  | { kind: 'trusted-publisher'; provider: string; repository: string; workflow: string; ref: string; runId: string };

export interface Release {
  number: number;
  createdAt: string;
  releasedAt: string | null;
  files: number;
  bytes: number;
  releasedBy: ReleasedBy | null;
}

/** A copy of an upload that is not a release: being crawled (`checking`) or refused by its crawl. */
export interface Attempt {
  number: number;
  status: 'checking' | 'refused';
  createdAt: string;
  files: number;
  bytes: number;
}

export interface LabelReleases {
  label: string;
  /** The release downloaders get; null before the label's first release, or once its folder was removed (the label's URL answers 404). */
  current: number | null;
  releases: Release[];
  /** The newest copy, when it is newer than every release and is not one (being crawled, or refused); else null. */
  attempt: Attempt | null;
}

/** A copy that is being crawled before it may become current. */
export interface Candidate {
  productId: string;
  label: string;
  number: number;
  createdAt: string;
  files: number;
  bytes: number;
  /** The secret part of the copy's folder name and download address (`<label>@<n>~<secret>/`). */
  secret: string;
}

/** A candidate not released after this long was left by a process that died. */
const CANDIDATE_STALE_MS = 60 * 60_000;

export { CANDIDATE_SECRET, candidateSegment, releaseKeys, releaseNumberOf };

const present = (r: ReleaseRow): Release => ({
  number: r.number,
  createdAt: r.created_at,
  releasedAt: r.released_at,
  files: r.files,
  bytes: r.bytes,
  releasedBy: r.released_by ? (JSON.parse(r.released_by) as ReleasedBy) : null,
});

export interface ReleasesServiceDeps {
  storage: Storage;
  repo: ReleasesRepository;
  /** Releases kept per label, the current one included (PIER_RELEASES_KEPT). */
  keep: number;
  /** The configured quotas (PIER_QUOTA_BYTES, PIER_QUOTA_FILES); a product's own come from the database. */
  limits?: Pick<FileLimits, 'quotaBytes' | 'quotaFiles'>;
  /** Where a failed count of what releases hold is logged (the release itself stands). */
  log?: { error(o: object, msg: string): void };
  now?: () => Date;
}

/** A kept release removed to give the product's quota back its room. */
export interface Evicted {
  label: string;
  number: number;
}

export function releasesService({ storage, repo, keep, limits = DEFAULT_LIMITS, log, now = () => new Date() }: ReleasesServiceDeps) {
  const current = (productId: string, label: string) => releaseNumberOf(storage.pointer(releaseKeys.pointer(productId, label)));

  /**
   * Drops the records of released copies past the newest `keep` (never the current one) and of
   * stale candidates; answers the copies to remove. They are removed after the transaction: it
   * holds the product's lock (on SQLite the one connection every request uses) and a copy may have
   * 100,000 files.
   */
  async function prune(r: ReleasesRepository, productId: string, label: string, cur: number | null): Promise<(() => Promise<void>)[]> {
    const rows = await r.forLabel(productId, label);
    const staleBefore = new Date(now().getTime() - CANDIDATE_STALE_MS).toISOString();
    const gone: (() => Promise<void>)[] = [];
    let kept = cur === null ? 0 : 1;
    for (const row of rows) {
      if (row.number === cur) continue;
      if (row.status === 'refused') continue;
      const drop = row.status === 'released' ? ++kept > keep : row.created_at < staleBefore;
      if (!drop) continue;
      if (row.status === 'released') gone.push(() => storage.removeTree(releaseKeys.tree(productId, label, row.number)));
      else gone.push(() => removeCandidates(productId, label, row.number));
      // A stale candidate keeps its row as refused: its number is never given to another copy.
      if (row.status === 'released') await r.remove(productId, label, row.number);
      else await r.markRefused(productId, label, row.number);
    }
    return gone;
  }

  /**
   * Counts what the product's release copies hold beyond its upload folders (releases/usage.ts),
   * and while its files and those copies together exceed its quota removes kept releases that no
   * label serves, oldest first: copies no record names, then those of labels with no current
   * release (removed labels), then by age. A label's current release is never removed. Records
   * the part current releases hold (what uploads are checked against) and answers what it removed.
   */
  async function measureAndEvict(productId: string): Promise<Evicted[]> {
    const { trees, holdings } = await releaseHoldings(storage, productId);
    const room = await repo.room(productId);
    const quotaBytes = room.quotaBytes ?? limits.quotaBytes;
    const quotaFiles = room.quotaFiles ?? limits.quotaFiles;
    const over = () => {
      const { all } = holdings.usage();
      return room.usedBytes + all.bytes > quotaBytes || room.usedFiles + all.files > quotaFiles;
    };
    const rows = new Map((await repo.forProduct(productId)).map((r) => [`${r.label}/${r.number}`, r]));
    const served = new Set(trees.filter((t) => t.current).map((t) => t.label));
    const rank = (t: (typeof trees)[number]) => {
      const row = rows.get(`${t.label}/${t.number}`);
      return [row ? 1 : 0, served.has(t.label) ? 1 : 0, row?.created_at ?? '', t.number] as const;
    };
    const evictable = trees
      .filter((t) => {
        const row = rows.get(`${t.label}/${t.number}`);
        return !t.current && !t.candidate && (row === undefined || row.status === 'released');
      })
      .sort((a, b) => {
        const [x, y] = [rank(a), rank(b)];
        for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
        return 0;
      });
    const evicted: Evicted[] = [];
    for (const t of evictable) {
      if (!over()) break;
      // Checked again under the lock: a rollback may have made it current meanwhile.
      const removed = await repo.locked(productId, async (r) => {
        if (current(productId, t.label) === t.number) return false;
        const row = await r.find(productId, t.label, t.number);
        if (row && row.status !== 'released') return false;
        if (row) await r.remove(productId, t.label, t.number);
        return true;
      });
      if (!removed) continue;
      await storage.removeTree(releaseKeys.tree(productId, t.label, t.number));
      holdings.drop(t);
      evicted.push({ label: t.label, number: t.number });
    }
    await repo.setUsage(productId, holdings.usage().pinned);
    return evicted;
  }

  // One count per product at a time in this process; calls meanwhile share the one after it.
  const running = new Map<string, Promise<Evicted[]>>();
  const queued = new Map<string, Promise<Evicted[]>>();
  function settleUsage(productId: string): Promise<Evicted[]> {
    const waiting = queued.get(productId);
    if (waiting) return waiting;
    const start = () => {
      const run = measureAndEvict(productId).finally(() => {
        if (running.get(productId) === run) running.delete(productId);
      });
      running.set(productId, run);
      return run;
    };
    const busy = running.get(productId);
    if (!busy) return start();
    const next = busy
      .catch(() => [])
      .then(() => {
        queued.delete(productId);
        return start();
      });
    queued.set(productId, next);
    return next;
  }
  /** After a change of the releases: a failed count is logged, the change stands. */
  const settle = (productId: string) =>
    settleUsage(productId).catch((e: unknown) => {
      log?.error({ err: e, productId }, 'counting what the releases of a product hold failed');
    });

  /**
   * Every folder of copy `n`, a candidate left by a process that died: its candidate folders
   * (their secret was known only to that crawl) and the release address, in case it died after
   * moving the copy there but before recording it.
   */
  async function removeCandidates(productId: string, label: string, n: number): Promise<void> {
    await storage.removeTree(releaseKeys.tree(productId, label, n));
    const names = (await storage.listNames(releaseKeys.folder(productId, label))) ?? [];
    for (const name of names) {
      if (name.startsWith(candidatePrefix(n))) await storage.removeTree(`${releaseKeys.folder(productId, label)}/${name}`);
    }
  }

  return {
    current,

    /**
     * Whether the label's folder is unchanged since its newest release was copied from it (after
     * a rollback the current release is an older one: the folder still holds the newest).
     */
    async upToDate(productId: string, label: string, labelChangedSeq: number): Promise<boolean> {
      if (current(productId, label) === null) return false;
      return (await repo.forLabel(productId, label)).some((r) => r.status === 'released' && r.files_seq >= labelChangedSeq);
    },

    /** Copies `update-site/<label>/` as the label's next release, not yet current. */
    async candidate(productId: string, label: string, filesSeq: number): Promise<Candidate> {
      const createdAt = now().toISOString();
      let number = await repo.allocate(productId, label, createdAt, filesSeq);
      let tree = releaseKeys.tree(productId, label, number);
      // The row just taken is the only holder of its number, so a folder already there has no
      // record: a backup restored from a database snapshot older than its files, or a copy whose
      // record was lost. Left there, it made every later copy of the label fail (same number).
      // One the label's pointer names is what downloaders get: recorded as released, never
      // replaced by an unchecked copy; any other goes.
      if (current(productId, label) === number && (await storage.stat(tree))) {
        const found = (await storage.walk(tree)) ?? [];
        const files = found.filter((e) => e.type === 'file');
        await repo.setCounts(productId, label, number, { files: files.length, bytes: files.reduce((n, e) => n + e.size, 0) });
        await repo.markReleased(productId, label, number, createdAt, null);
        number = await repo.allocate(productId, label, createdAt, filesSeq);
        tree = releaseKeys.tree(productId, label, number);
      }
      const secret = randomBytes(16).toString('base64url');
      const copy = releaseKeys.candidate(productId, label, number, secret);
      try {
        // An unrecorded folder at the release's own address would be served as release `number`.
        await storage.removeTree(tree);
        const counts = await storage.linkTree(`${productId}/update-site/${label}`, copy);
        await repo.setCounts(productId, label, number, counts);
        return { productId, label, number, createdAt, ...counts, secret };
      } catch (e) {
        await storage.removeTree(copy).catch(() => {});
        await repo.remove(productId, label, number);
        throw e;
      }
    },

    /**
     * A candidate that did not pass: its copy goes, the current release stays. Its number stays
     * taken (refused): a number names one copy only, in reports as on the download host.
     */
    async discard(c: Candidate): Promise<void> {
      await storage.removeTree(releaseKeys.candidate(c.productId, c.label, c.number, c.secret));
      await repo.markRefused(c.productId, c.label, c.number);
      await settle(c.productId);
    },

    /**
     * Makes a passed candidate a release: its copy moves to the release's own address
     * (`<label>@<n>/`) and becomes current, unless a later one became current meanwhile (another
     * process released a newer upload first: this one is kept as an earlier release).
     */
    async release(c: Candidate, by: ReleasedBy): Promise<boolean> {
      // Outside the lock: the number is this copy's alone, and the rename needs no database.
      await storage.rename(releaseKeys.candidate(c.productId, c.label, c.number, c.secret), releaseKeys.tree(c.productId, c.label, c.number));
      const { moves, gone } = await repo.locked(c.productId, async (r) => {
        const cur = current(c.productId, c.label);
        await r.markReleased(c.productId, c.label, c.number, now().toISOString(), JSON.stringify(by));
        const moves = cur === null || c.number > cur;
        if (moves) await storage.setPointer(releaseKeys.pointer(c.productId, c.label), String(c.number));
        return { moves, gone: await prune(r, c.productId, c.label, moves ? c.number : cur) };
      });
      for (const remove of gone) await remove();
      await settle(c.productId);
      return moves;
    },

    /** Moves the label back to `to` (default: the newest release before the current one). */
    async rollback(productId: string, label: string, to?: number): Promise<{ label: string; current: number; previous: number | null }> {
      const moved = await repo.locked(productId, async (r) => {
        const cur = current(productId, label);
        const released = (await r.forLabel(productId, label)).filter((x) => x.status === 'released');
        if (released.length === 0) throw new NotFoundError(`label "${label}" of product "${productId}" has no releases`);
        const target = to ?? released.find((x) => cur === null || x.number < cur)?.number;
        if (target === undefined) throw new ConflictError(`label "${label}" has no release before its current one (${cur}) to roll back to`, 'no_earlier_release');
        if (!released.some((x) => x.number === target)) {
          throw new NotFoundError(`label "${label}" has no kept release ${target} (kept: ${released.map((x) => x.number).join(', ')})`);
        }
        await storage.setPointer(releaseKeys.pointer(productId, label), String(target));
        return { label, current: target, previous: cur };
      });
      // The release rolled back from is no longer current: it now uses the room the quota leaves.
      await settle(productId);
      return moved;
    },

    /** The label's folder was removed: downloaders get nothing; its releases stay for a rollback. */
    async withdraw(productId: string, label: string): Promise<void> {
      if (current(productId, label) === null) return;
      await storage.setPointer(releaseKeys.pointer(productId, label), null);
      // Its releases are no label's current one now: they use the room the quota leaves.
      await settle(productId);
    },

    settleUsage,

    /**
     * Each label that has a release or a copy of an upload, with its current release, the kept
     * releases and the newest copy that is not (yet) one: a label before its first release is
     * listed too (its vendor sees the copy being crawled or refused; users get 404).
     */
    async list(productId: string): Promise<LabelReleases[]> {
      const byLabel = new Map<string, LabelReleases>();
      // Rows come by label, newest first: the first row of a label is its newest copy.
      for (const row of await repo.forProduct(productId)) {
        let l = byLabel.get(row.label);
        if (!l) {
          const attempt: Attempt | null =
            row.status === 'released'
              ? null
              : { number: row.number, status: row.status === 'candidate' ? 'checking' : 'refused', createdAt: row.created_at, files: row.files, bytes: row.bytes };
          l = { label: row.label, current: current(productId, row.label), releases: [], attempt };
          byLabel.set(row.label, l);
        }
        if (row.status === 'released') l.releases.push(present(row));
      }
      return [...byLabel.values()];
    },

    /** Every copy of the product's labels (releases, candidates, refused), by label, newest first. */
    copies: (productId: string): Promise<ReleaseRow[]> => repo.forProduct(productId),
  };
}

export type ReleasesService = ReturnType<typeof releasesService>;

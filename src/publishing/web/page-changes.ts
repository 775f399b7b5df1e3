/**
 * Whether anything the public pages are built from changed: the database's page change counter
 * (migration 0009, raised in the same transaction as every such write, by any process), read
 * at most once per FRESH_MS for all requests together.
 *
 * The rule is the download host's (downloads/file-cache.ts): a read serves the requests that
 * arrive within FRESH_MS (1 ms) after it began, unless this process finished a write since it
 * began (the database's write count), so a change made through this process shows from the
 * next request on. A change committed by another process or instance shows on every request
 * arriving more than FRESH_MS after its commit; one arriving within that bound may still get
 * the page as it was. Reads are made before what they guard is read (see PagesService), so the
 * counter a page is filed under is never newer than the data it was built from. At most one
 * read is in flight: requests that come while it runs and began too early for it share one
 * follow-up read, so a flood of page requests holds at most one database connection.
 */
import type { Database } from '../../infra/database/index.js';
import type { PublishingDB } from '../db.js';
import { FRESH_MS } from '../downloads/file-cache.js';
import { pageChangesRepository } from './changes-repository.js';

export interface PageChanges {
  /** The counter as of a read begun less than FRESH_MS ago and after this process's last write. */
  current(): number | Promise<number>;
}

export function pageChanges(options: {
  /** Reads the counter (synchronously when it can). */
  read(): number | Promise<number>;
  /** Writes this process finished so far (infra/database WriteCounter). */
  localWrites(): number;
  freshMs?: number;
  now?: () => number;
}): PageChanges {
  const { read, localWrites, freshMs = FRESH_MS, now = () => performance.now() } = options;
  let seq = 0;
  let checkedAt = Number.NEGATIVE_INFINITY;
  let checkedWrites = -1;
  /** The read in flight (at most one: a flood of requests must not fill the database's pool). */
  let pending: { startedAt: number; writes: number; value: Promise<number> } | null = null;
  /** The read that begins when the one in flight settles; shared by everyone who asks meanwhile. */
  let queued: Promise<number> | null = null;

  const settle = (value: number, startedAt: number, writes: number) => {
    // A read that began later than the one on file knows at least as much.
    if (startedAt >= checkedAt) {
      seq = value;
      checkedAt = startedAt;
      checkedWrites = writes;
    }
    return value;
  };

  function start(): number | Promise<number> {
    const at = now();
    const writes = localWrites();
    const value = read();
    if (typeof value === 'number') return settle(value, at, writes);
    const p = { startedAt: at, writes, value: value.then((v) => settle(v, at, writes)) };
    pending = p;
    const done = () => {
      if (pending === p) pending = null;
    };
    p.value.then(done, done);
    return p.value;
  }

  return {
    current() {
      const at = now();
      const writes = localWrites();
      if (at - checkedAt < freshMs && writes === checkedWrites) return seq;
      // A read not yet begun begins after this request arrived (and after its writes): it serves it.
      if (queued) return queued;
      if (!pending) return start();
      // The read under way serves if it began within the bound and after our last write; if not,
      // the next read begins as soon as it settles.
      if (at - pending.startedAt < freshMs && writes === pending.writes) return pending.value;
      const next = pending.value.then(
        () => undefined,
        () => undefined,
      ).then(() => {
        queued = null;
        return start();
      });
      queued = next;
      return next;
    },
  };
}

/** The page changes of the publishing database `database` (its counter and this process's writes to it). */
export function databasePageChanges(database: Database<PublishingDB>, freshMs?: number): PageChanges {
  const repo = pageChangesRepository(database.db, { readNow: database.readNow });
  return pageChanges({ read: () => repo.seq(), localWrites: () => database.writes.count, freshMs });
}

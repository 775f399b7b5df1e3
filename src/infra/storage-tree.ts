/**
 * Whole-folder work of the local storage (a label's release copy, its removal, the count of what
 * release copies hold) runs in a worker thread (storage-tree-worker.ts). A label may hold as many
 * files as the file quota allows (100,000 by default): one synchronous call per file on the
 * serving thread held the event loop of every product's pages, API and SFTP for seconds, and
 * asynchronous calls still cost that thread a promise and a callback per file. In the worker the
 * per-file calls hold only the worker; it runs at a lower priority (nice 10), so where cores are
 * scarce the serving thread goes first. One worker per process takes the jobs in turn.
 */
import { type KeptWorker, keptWorker } from './kept-worker.js';
import { workerEntry } from './module-worker.js';
import type { FileLinksReply, TreeJob, TreeReply } from './storage-tree-worker.js';

export type { FileLinksReply };

/** A job that has not ended after this long is taken as stuck: the worker is ended. */
const JOB_TIMEOUT_MS = 30 * 60_000;
/** An idle worker is ended after this long (its memory returns). */
const IDLE_MS = 60_000;

let worker: KeptWorker<TreeJob> | null = null;

function treeWorker(): KeptWorker<TreeJob> {
  worker ??= keptWorker<TreeJob>({
    entry: workerEntry('storage-tree-worker', import.meta.url),
    // Listings of 100,000 entries and the count of a few such copies.
    maxMemoryMb: 512,
    timeoutMs: JOB_TIMEOUT_MS,
    idleMs: IDLE_MS,
    nice: 10,
    failed: (f) => new Error(`storage folder work failed: ${f.message}`),
  });
  return worker;
}

/** An error of the job itself, with its file-system code (ENOENT, ENOTDIR…) kept for callers. */
function run<R>(job: TreeJob): Promise<R> {
  return treeWorker().run(job, (reply) => {
    const r = reply as TreeReply;
    if (!r.ok) throw Object.assign(new Error(r.message), r.code ? { code: r.code } : {});
    return r.result as R;
  });
}

/**
 * Fills the new folder `into` with hard links to every regular file below `from` (folders made
 * again; names starting with `skipPrefix` and anything that is not a regular file or folder left
 * out; a file removed meanwhile is simply not there). Answers the files linked and their bytes.
 */
export function linkTreeInto(from: string, into: string, skipPrefix: string): Promise<{ files: number; bytes: number }> {
  return run({ op: 'link', from, into, skipPrefix });
}

/** Removes a folder and everything below it; nothing when it is gone. */
export function removeTreeBounded(dir: string): Promise<void> {
  return run({ op: 'remove', dir });
}

/**
 * The regular files below each of `dirs` (names starting with `skipPrefix` left out) as their
 * stored bytes: files that share bytes (hard links) share an index into `size` and `links`.
 */
export function fileLinksBelow(dirs: string[], skipPrefix: string): Promise<FileLinksReply> {
  return run({ op: 'fileLinks', dirs, skipPrefix });
}

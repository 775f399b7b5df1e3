/**
 * Worker threads that run our TypeScript modules. Sources are run through tsx: the worker
 * registers the same loader before it loads its entry module (a worker does not inherit a loader
 * registered by `register()`). The entry posts 'ready' once loaded, so a caller can start its
 * time limit after the (slow) module load rather than before.
 */
import { Worker } from 'node:worker_threads';

// The nice value is set on this thread only: Linux keeps one per thread (setpriority(2), the
// thread id read from /proc/thread-self). Elsewhere the worker runs at the process's priority.
const BOOT = `
const { workerData } = require('node:worker_threads');
if (workerData.nice) {
  try {
    const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
    if (tid > 0) require('node:os').setPriority(tid, workerData.nice);
  } catch {}
}
import(workerData.tsx).then((m) => { m.register(); return import(workerData.entry); });
`;

export interface TsWorker {
  worker: Worker;
  /** Resolves on the entry's 'ready'; rejects (through `fail`) when the worker dies first. */
  ready: Promise<void>;
}

export function startTsWorker(entry: URL, maxMemoryMb: number, fail: (message: string) => Error, nice = 0): TsWorker {
  const worker = new Worker(BOOT, {
    eval: true,
    workerData: { tsx: import.meta.resolve('tsx/esm/api'), entry: entry.href, nice },
    resourceLimits: { maxOldGenerationSizeMb: maxMemoryMb, maxYoungGenerationSizeMb: Math.min(64, Math.max(8, maxMemoryMb / 8)) },
    stdout: false,
    stderr: false,
  });
  const ready = new Promise<void>((resolve, reject) => {
    worker.once('message', (m) => (m === 'ready' ? resolve() : reject(fail('did not start'))));
    worker.once('error', (e) => reject(fail(`did not start: ${e.message}`)));
    worker.once('exit', (code) => reject(fail(`did not start (exit ${code})`)));
  });
  ready.catch(() => {});
  return { worker, ready };
}

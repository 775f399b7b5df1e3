/**
 * Worker threads that run one of our modules as their entry. In the compiled program (bin/pier.js
 * runs dist/server) each worker entry is a JavaScript file of the build and is imported as it is;
 * from the TypeScript sources (tests, PIER_FROM_SOURCE=1) the worker first registers tsx, since a
 * worker does not inherit a loader registered by `register()`. The entry posts 'ready' once
 * loaded, so a caller can start its time limit after the module load rather than before.
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
if (workerData.tsx) import(workerData.tsx).then((m) => { m.register(); return import(workerData.entry); });
else {
  process.setSourceMapsEnabled(true);
  import(workerData.entry);
}
`;

const TYPESCRIPT = /\.tsx?$/;

/**
 * The worker entry `name` beside the calling module (`base`: its import.meta.url): `<name>.ts` in
 * the sources, `<name>.js` in the build, which puts every worker entry in the one folder of the
 * code that starts it (WORKER_ENTRIES in scripts/build-server.mjs).
 */
export function workerEntry(name: string, base: string): URL {
  return new URL(`./${name}${TYPESCRIPT.test(base) ? '.ts' : '.js'}`, base);
}

export interface ModuleWorker {
  worker: Worker;
  /** Resolves on the entry's 'ready'; rejects (through `fail`) when the worker dies first. */
  ready: Promise<void>;
}

export function startModuleWorker(entry: URL, maxMemoryMb: number, fail: (message: string) => Error, nice = 0): ModuleWorker {
  // Only a TypeScript entry needs the loader: the build runs with no tsx at all.
  const tsx = TYPESCRIPT.test(entry.pathname) ? import.meta.resolve('tsx/esm/api') : null;
  const worker = new Worker(BOOT, {
    eval: true,
    workerData: { tsx, entry: entry.href, nice },
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

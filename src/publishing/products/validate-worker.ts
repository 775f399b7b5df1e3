/**
 * The PATCH checker's own thread: the Markdown fields (changelog and FAQ parsed, every field
 * searched for relative links) and the SVG icon are checked here, so a body built to be slow
 * stalls only this thread, never the serving event loop. It posts back plain data, which the
 * serving side checks before it uses it.
 */
import { parentPort } from 'node:worker_threads';
import type { ProductPatch } from './patch-schema.js';
import { validatePatch } from './patch-validation.js';

export interface ValidateJob {
  patch: ProductPatch;
  /** Tests only: the worker counts the job in cell 1, then waits while cell 0 is 0. */
  hold?: Int32Array;
}

export type ValidateReply = { ok: true; result: unknown } | { ok: false; message: string };

const HOLD_MAX_MS = 60_000;

const port = parentPort;
if (port) {
  port.on('message', (job: ValidateJob) => {
    try {
      if (job.hold) {
        Atomics.add(job.hold, 1, 1);
        Atomics.wait(job.hold, 0, 0, HOLD_MAX_MS);
      }
      port.postMessage({ ok: true, result: validatePatch(job.patch) } satisfies ValidateReply);
    } catch (e) {
      port.postMessage({ ok: false, message: e instanceof Error ? e.message : String(e) } satisfies ValidateReply);
    }
  });
  port.postMessage('ready');
}

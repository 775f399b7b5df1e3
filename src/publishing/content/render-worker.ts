/**
 * The page renderer's own thread: vendor Markdown (text, changelog, FAQ, license, instructions)
 * is parsed and rendered here, so a field built to be slow stalls only this thread, never the
 * serving event loop that web pages, downloads and SFTP share. It posts back plain data, which
 * the serving side checks before it uses it.
 */
import { parentPort } from 'node:worker_threads';
import type { ProductFields } from '../products/fields.js';
import { renderProductContent } from './product-content.js';

export interface RenderJob {
  fields: ProductFields;
  release: string | null;
  reservedIds: string[];
  /** Tests only: the worker counts the job in cell 1, then waits while cell 0 is 0. */
  hold?: Int32Array;
}

export type RenderReply = { ok: true; content: unknown } | { ok: false; message: string };

const HOLD_MAX_MS = 60_000;

const port = parentPort;
if (port) {
  port.on('message', (job: RenderJob) => {
    try {
      if (job.hold) {
        Atomics.add(job.hold, 1, 1);
        Atomics.wait(job.hold, 0, 0, HOLD_MAX_MS);
      }
      const content = renderProductContent(job.fields, job.release, job.reservedIds);
      port.postMessage({ ok: true, content } satisfies RenderReply);
    } catch (e) {
      port.postMessage({ ok: false, message: e instanceof Error ? e.message : String(e) } satisfies RenderReply);
    }
  });
  port.postMessage('ready');
}

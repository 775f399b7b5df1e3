/**
 * The page renderer's own thread: vendor Markdown (text, changelog, FAQ, license, instructions)
 * is parsed and rendered here, so a field built to be slow stalls only this thread, never the
 * serving event loop that web pages, downloads and SFTP share; so is the product page's whole
 * document, whose size follows that content. It posts back plain data, which the serving side
 * checks before it uses it.
 */
import { parentPort } from 'node:worker_threads';
import type { ProductFields } from '../model/fields.js';
import { renderProductContent } from '../content/product-content.js';
import { entityTag } from './entity-tag.js';
import type { ProductPageModel, SiteInfo } from './model.js';
import { ProductPage } from './product-page.js';
import { renderDocument } from './render.js';

/** A product's vendor content (Markdown fields) to render. */
export interface ContentJob {
  kind?: 'content';
  fields: ProductFields;
  release: string | null;
  reservedIds: string[];
  /** Tests only: the worker counts the job in cell 1, then waits while cell 0 is 0. */
  hold?: Int32Array;
}

/**
 * A product's whole page document to render from its model (web/product-page.tsx): its size
 * follows the vendor's content, so it is built here too, and posted back as bytes with their
 * entity tag, ready to send.
 */
export interface PageJob {
  kind: 'page';
  site: SiteInfo;
  model: ProductPageModel;
  hold?: Int32Array;
}

export type RenderJob = ContentJob | PageJob;

export type RenderReply = { ok: true; content: unknown } | { ok: true; page: { bytes: Uint8Array; etag: string } } | { ok: false; message: string };

const HOLD_MAX_MS = 60_000;

const port = parentPort;
if (port) {
  port.on('message', (job: RenderJob) => {
    try {
      if (job.hold) {
        Atomics.add(job.hold, 1, 1);
        Atomics.wait(job.hold, 0, 0, HOLD_MAX_MS);
      }
      if (job.kind === 'page') {
        const bytes = new TextEncoder().encode(renderDocument(ProductPage({ site: job.site, m: job.model })));
        // Moved, not copied: the serving thread sends these very bytes.
        port.postMessage({ ok: true, page: { bytes, etag: entityTag(bytes) } } satisfies RenderReply, [bytes.buffer]);
        return;
      }
      const content = renderProductContent(job.fields, job.release, job.reservedIds);
      port.postMessage({ ok: true, content } satisfies RenderReply);
    } catch (e) {
      port.postMessage({ ok: false, message: e instanceof Error ? e.message : String(e) } satisfies RenderReply);
    }
  });
  port.postMessage('ready');
}

import type { VNode } from 'preact';
import { renderToString } from 'preact-render-to-string';

/** A full HTML document from a page component (preact escapes every text and attribute). */
export function renderDocument(page: VNode): string {
  return `<!doctype html>${renderToString(page)}`;
}

// What a render worker posts back is checked field by field before a page is built from it:
// a worker in an unknown state must not put arbitrary values into the page model.
import type { RenderedContent, RenderedRelease } from './product-content.js';

type Rec = Record<string, unknown>;

const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStr = (v: unknown): v is string => typeof v === 'string';
const isStrOrNull = (v: unknown) => v === null || isStr(v);
const isBool = (v: unknown): v is boolean => typeof v === 'boolean';
const every = (v: unknown, ok: (x: unknown) => boolean) => Array.isArray(v) && v.every(ok);

function isHeading(v: unknown): boolean {
  return isRec(v) && Number.isInteger(v.level) && isStr(v.text) && isStr(v.id);
}

function isRelease(v: unknown): v is RenderedRelease {
  return (
    isRec(v) &&
    isStr(v.version) &&
    isStrOrNull(v.date) &&
    isBool(v.unreleased) &&
    isBool(v.yanked) &&
    isBool(v.breaking) &&
    isStr(v.id) &&
    isStr(v.summaryHtml) &&
    every(v.sections, (s) => isRec(s) && isStr(s.type) && isBool(s.known) && every(s.itemsHtml, isStr))
  );
}

/** The content, or null when `v` is not what `renderProductContent` returns. */
export function checkRenderedContent(v: unknown): RenderedContent | null {
  if (!isRec(v)) return null;
  const c = v.changelog;
  const changelogOk = c === null || (isRec(c) && isStr(c.title) && isStr(c.introHtml) && every(c.releases, isRelease));
  const latest = v.latest;
  const latestOk = latest === null || (isRec(latest) && isStr(latest.version) && isStr(latest.date));
  const ok =
    isStr(v.descriptionText) &&
    isStr(v.textHtml) &&
    every(v.headings, isHeading) &&
    isStr(v.instructionsHtml) &&
    isStr(v.licenseHtml) &&
    every(v.faq, (f) => isRec(f) && isStr(f.question) && isStr(f.id) && isStr(f.answerHtml)) &&
    changelogOk &&
    isStr(v.changelogHtml) &&
    latestOk;
  return ok ? (v as unknown as RenderedContent) : null;
}

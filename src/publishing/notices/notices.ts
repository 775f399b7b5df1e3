/**
 * Label notices (docs/vendors.md#deprecating-and-withdrawing-a-label): a vendor marks one of the
 * product's labels deprecated (still offered, with a banner and a pointer to its replacement) or
 * withdrawn (no longer offered; the download host answers 410 Gone under it, downloads/server.ts).
 * Notices live in the product's page fields (`fields.labels`), so PATCH's rules, dry run, revision
 * history and page-cache invalidation apply to them as to every other field.
 *
 * Two kinds of checks: the ones that need nothing but the body (`validateLabelsPatch`, run with
 * the other field rules, off the serving loop) and the ones that need the product's stored
 * notices and uploaded labels (`labelNoticeProblems`, run by the product service).
 */
import type { FieldProblem } from '../../infra/errors.js';
import type { ProductFilesReader } from '../files/reader.js';
import type { LabelNotice, LabelNotices, LabelStatus } from '../model/fields.js';
import { isLabel } from '../files/tree.js';

export const LABEL_STATUSES: readonly LabelStatus[] = ['deprecated', 'withdrawn'];

/** A notice as sent in a PATCH, before the service stamps `since`. */
export type LabelNoticeInput = Omit<LabelNotice, 'since'>;

/** What a PATCH's `labels` does: a notice to set, or null to remove the label's notice. */
export type LabelsPatch = Record<string, LabelNoticeInput | null>;

/** Labels with a notice per product, and labels one PATCH may name. */
export const MAX_LABEL_NOTICES = 200;
/** Characters (code points) of a message. */
export const MAX_NOTICE_MESSAGE = 500;

// Tab, line feed and carriage return are whitespace of a pasted paragraph; the others are not text,
// nor are invisible characters and bidirectional controls, which could make a banner read other
// than it is (zero-width U+200B–U+200F, U+2060–U+2064, U+FEFF; embeddings and isolates U+202A–U+202E,
// U+2066–U+2069).
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/;
const PARAGRAPH_BREAK = /\n[ \t\r]*\n/;
const NOTICE_KEYS = new Set(['status', 'message', 'replacement']);

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Field names quote a hostile key shortly. */
const keyOf = (label: string) => (label.length > 128 ? `${label.slice(0, 128)}…` : label);
const absent = (v: unknown) => v === undefined || v === null || v === '';
/** A label's entry, never an inherited property: "constructor" is a valid label name. */
export const own = <T>(map: Record<string, T> | undefined, label: string): T | undefined => (map && Object.hasOwn(map, label) ? map[label] : undefined);
/** Sets a label's own entry: an assignment to "__proto__" (a valid label name) would set the prototype instead. */
const setOwn = <M extends Record<string, unknown>>(map: M, label: string, value: M[string]): void => {
  Object.defineProperty(map, label, { value, enumerable: true, writable: true, configurable: true });
};

/**
 * The body's own rules for `labels` (the route schema checked JSON types; this checks again, as
 * it also sees bodies the schema refused: patch-validation.ts allPatchProblems). Problems are
 * added to `errors` with their field (`labels.<label>.<part>`); the result is what to apply.
 */
export function validateLabelsPatch(value: unknown, errors: FieldProblem[]): LabelsPatch {
  const out: LabelsPatch = {};
  if (!isPlainObject(value)) {
    errors.push({ field: 'labels', message: 'must be an object of label → notice ({ status, message?, replacement? }, or null to remove)' });
    return out;
  }
  const entries = Object.entries(value);
  if (entries.length > MAX_LABEL_NOTICES) {
    errors.push({ field: 'labels', message: `names ${entries.length} labels; at most ${MAX_LABEL_NOTICES} may have a notice` });
    return out;
  }
  for (const [label, notice] of entries) {
    const field = `labels.${keyOf(label)}`;
    if (!isLabel(label)) {
      errors.push({ field, message: 'is not a label name (1 to 128 letters, digits, ".", "_" or "-")' });
      continue;
    }
    // Spec-wide PATCH rule: null or "" removes.
    if (notice === null || notice === '') {
      setOwn(out, label, null);
      continue;
    }
    if (!isPlainObject(notice)) {
      errors.push({ field, message: 'must be an object { status, message?, replacement? }, or null or "" to remove the notice' });
      continue;
    }
    let ok = true;
    for (const key of Object.keys(notice)) {
      if (!NOTICE_KEYS.has(key)) {
        errors.push({ field: `${field}.${keyOf(key)}`, message: `unknown field "${keyOf(key)}"` });
        ok = false;
      }
    }
    const { status, message, replacement } = notice;
    if (!LABEL_STATUSES.includes(status as LabelStatus)) {
      errors.push({ field: `${field}.status`, message: status === undefined ? 'is required' : 'must be "deprecated" or "withdrawn"' });
      ok = false;
    }
    let text: string | undefined;
    if (!absent(message)) {
      if (typeof message !== 'string') {
        errors.push({ field: `${field}.message`, message: 'must be a string' });
        ok = false;
      } else if (CONTROL.test(message)) {
        errors.push({ field: `${field}.message`, message: 'must be plain text without control characters' });
        ok = false;
      } else if (PARAGRAPH_BREAK.test(message.replace(/\r\n?/g, '\n'))) {
        errors.push({ field: `${field}.message`, message: 'must be one paragraph (no blank line)' });
        ok = false;
      } else {
        // One paragraph: its line breaks and runs of spaces read as single spaces.
        const folded = message.replace(/\s+/g, ' ').trim();
        const length = [...folded].length;
        if (length > MAX_NOTICE_MESSAGE) {
          errors.push({ field: `${field}.message`, message: `is ${length} characters; the limit is ${MAX_NOTICE_MESSAGE}` });
          ok = false;
        } else if (folded !== '') text = folded;
      }
    }
    let target: string | undefined;
    if (!absent(replacement)) {
      if (typeof replacement !== 'string' || !isLabel(replacement)) {
        errors.push({ field: `${field}.replacement`, message: 'must be a label name of this product' });
        ok = false;
      } else if (replacement === label) {
        errors.push({ field: `${field}.replacement`, message: 'cannot be the label itself' });
        ok = false;
      } else target = replacement;
    }
    if (ok) setOwn(out, label, { status: status as LabelStatus, ...(text ? { message: text } : {}), ...(target ? { replacement: target } : {}) });
  }
  // A replacement withdrawn by this same body (the stored ones are the service's check).
  for (const [label, notice] of Object.entries(out)) {
    const r = notice?.replacement;
    if (r !== undefined && own(out, r)?.status === 'withdrawn') {
      errors.push({ field: `labels.${label}.replacement`, message: `"${r}" is withdrawn in this same change; name a label that is still offered` });
    }
  }
  return out;
}

/** Whether `v` is what validateLabelsPatch returns (a check of the validation worker's reply). */
export function isLabelsPatch(v: unknown): v is LabelsPatch {
  if (!isPlainObject(v)) return false;
  return Object.entries(v).every(
    ([k, n]) =>
      isLabel(k) &&
      (n === null ||
        (isPlainObject(n) &&
          LABEL_STATUSES.includes(n.status as LabelStatus) &&
          Object.keys(n).every((x) => NOTICE_KEYS.has(x)) &&
          (n.message === undefined || typeof n.message === 'string') &&
          (n.replacement === undefined || (typeof n.replacement === 'string' && isLabel(n.replacement))))),
  );
}

/**
 * The stored notices after a PATCH: only the labels sent change; `since` is stamped `at` when a
 * label's status changes (a new notice, or deprecated ↔ withdrawn), kept when only its message
 * or replacement does. Undefined when no notice is left.
 */
export function mergeLabelNotices(current: LabelNotices | undefined, patch: LabelsPatch, at: string): LabelNotices | undefined {
  const next: LabelNotices = { ...(current ?? {}) };
  for (const [label, notice] of Object.entries(patch)) {
    if (notice === null) {
      delete next[label];
      continue;
    }
    const before = own(next, label);
    setOwn(next, label, { ...notice, since: before && before.status === notice.status ? before.since : at });
  }
  return Object.keys(next).length ? next : undefined;
}

/**
 * The rules that need the product: a notice goes on an uploaded label, a replacement is an
 * uploaded label that is not withdrawn, replacements never lead in a circle, and the product
 * keeps at most MAX_LABEL_NOTICES notices. `uploaded` is every label with files under
 * `update-site/<label>/` or the archive `update-site/<label>.zip`.
 *
 * A notice whose label is deleted later is kept (the label may come back with the same name and
 * the vendor's decision still holds): not shown on the pages while the label is gone, its feed
 * entry stays, and a withdrawn one still answers 410 under the label's URL. It counts towards
 * the limit until removed.
 */
export function labelNoticeProblems(current: LabelNotices | undefined, patch: LabelsPatch, uploaded: ReadonlySet<string>): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const merged = mergeLabelNotices(current, patch, '') ?? {};
  const sent = new Set(Object.keys(patch).filter((l) => patch[l] !== null));
  for (const label of sent) {
    const notice = merged[label]!;
    if (!uploaded.has(label)) problems.push({ field: `labels.${label}`, message: `no label "${label}" has been uploaded (update-site/${label}/ or update-site/${label}.zip)` });
    const r = notice.replacement;
    if (r === undefined) continue;
    if (!uploaded.has(r)) problems.push({ field: `labels.${label}.replacement`, message: `no label "${r}" has been uploaded` });
    // Same-body withdrawals were reported by validateLabelsPatch.
    else if (own(merged, r)?.status === 'withdrawn' && own(patch, r)?.status !== 'withdrawn') {
      problems.push({ field: `labels.${label}.replacement`, message: `"${r}" is withdrawn; name a label that is still offered` });
    }
  }
  // Withdrawing a label that a stored notice names as its replacement.
  for (const [label, notice] of Object.entries(merged)) {
    const r = notice.replacement;
    if (r === undefined || sent.has(label) || !sent.has(r) || own(merged, r)?.status !== 'withdrawn') continue;
    problems.push({ field: `labels.${r}.status`, message: `"${r}" is the replacement named by label "${label}"; change that notice first or in the same change` });
  }
  // Cycles: a → b → … → a. Only those passing through a label of this body are this body's fault.
  const reported = new Set<string>();
  for (const start of sent) {
    const path: string[] = [start];
    let at = own(merged, start)?.replacement;
    while (at !== undefined && !path.includes(at)) {
      path.push(at);
      at = own(merged, at)?.replacement;
    }
    if (at === start && !reported.has(start)) {
      for (const l of path) reported.add(l);
      problems.push({ field: `labels.${start}.replacement`, message: `replacements lead in a circle: ${[...path, start].join(' → ')}` });
    }
  }
  const count = Object.keys(merged).length;
  if (count > MAX_LABEL_NOTICES) problems.push({ field: 'labels', message: `the product would have ${count} label notices; at most ${MAX_LABEL_NOTICES}` });
  return problems;
}

/** The withdrawn labels among stored notices, with their replacement (for the download host). */
/** The withdrawn labels of a product row's stored fields (JSON), as `withdrawnOf` reads them. */
export function withdrawnInFields(fieldsJson: string): Map<string, string | null> {
  try {
    return withdrawnOf((JSON.parse(fieldsJson) as { labels?: unknown }).labels);
  } catch {
    return new Map();
  }
}

export function withdrawnOf(notices: unknown): Map<string, string | null> {
  const out = new Map<string, string | null>();
  if (!isPlainObject(notices)) return out;
  for (const [label, n] of Object.entries(notices)) {
    if (isPlainObject(n) && n.status === 'withdrawn') out.set(label, typeof n.replacement === 'string' ? n.replacement : null);
  }
  return out;
}

/** The labels a notice may name: those with files under `update-site/<label>/` or an archive. */
export function uploadedLabelsOf(files: Pick<ProductFilesReader, 'listLabels'>): (productId: string) => Promise<string[]> {
  return async (productId) => (await files.listLabels(productId)).filter((l) => l.files > 0 || l.hasArchive).map((l) => l.label);
}

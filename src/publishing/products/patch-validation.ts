import { type FieldProblem, ValidationError } from '../../infra/errors.js';
import { parseChangelog } from '../content/changelog.js';
import { parseFaq } from '../content/faq.js';
import { findRelativeLinks } from '../content/markdown.js';
import { sanitizeSvg, sniffRasterImage } from '../content/svg.js';
import { FIELD_LIMITS, FIELD_NAMES, type FieldName, type ProductFields, type ProductStyle, URL_LIMIT } from '../model/fields.js';
import type { ProductPatch } from './patch-schema.js';
import { type LabelsPatch, MAX_LABEL_NOTICES, mergeLabelNotices, validateLabelsPatch } from '../notices/notices.js';

/** What a valid PATCH does: the values to set, the fields to remove, and what to tell the vendor. */
export interface ValidatedPatch {
  set: Partial<ProductFields>;
  unset: FieldName[];
  /** Every field the request touched, implied ones included (icon clears iconBase64). */
  changed: FieldName[];
  warnings: FieldProblem[];
  /** The label notices to set (null: remove), merged into the stored ones by applyPatch. */
  labels?: LabelsPatch;
}

export type PatchCheck = { ok: true; value: ValidatedPatch } | { ok: false; errors: FieldProblem[] };

/** Runs validatePatch, in the serving process or off it (isolated-validation.ts). */
export type ValidatePatch = (patch: ProductPatch) => Promise<PatchCheck>;

export const validateInProcess: ValidatePatch = async (patch) => validatePatch(patch);

const HEX_COLOR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
// Deliberately plain: one @, no spaces or angle brackets, a dot in the domain.
const EMAIL = /^[^\s@<>()",;:]+@[^\s@<>()",;:]+\.[^\s@<>()",;:.]{2,}$/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL_OR_NEWLINE = /[\u0000-\u001f\u007f]/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const DATA_URL_PREFIX = /^data:image\/(?:png|jpeg|gif|webp);base64,/;
const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function isHexColor(value: string): boolean {
  return HEX_COLOR.test(value);
}

export function isHttpUrl(value: string): boolean {
  if (value.length > URL_LIMIT || CONTROL_OR_NEWLINE.test(value) || /\s/.test(value)) return false;
  try {
    const u = new URL(value);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

function tooLarge(field: FieldName, value: unknown): FieldProblem | null {
  const size = Buffer.byteLength(typeof value === 'string' ? value : JSON.stringify(value));
  const limit = FIELD_LIMITS[field];
  return size > limit ? { field, message: `is ${size} bytes; the limit is ${limit} bytes` } : null;
}

function validateStyle(style: NonNullable<ProductPatch['style']>, errors: FieldProblem[]): ProductStyle {
  const out: ProductStyle = {};
  for (const key of ['color1', 'color2', 'badgeColor'] as const) {
    const v = style[key];
    if (v === undefined) continue;
    // Spec: an empty badgeColor removes it (it then falls back to color1).
    if (key === 'badgeColor' && v === '') continue;
    if (!isHexColor(v)) errors.push({ field: `style.${key}`, message: `must be a hex color like #1a2b3c or #abc, got "${v.slice(0, 40)}"` });
    else out[key] = v.toLowerCase();
  }
  const bg = style.backgroundImageUrl;
  if (bg !== undefined && bg !== '') {
    if (!isHttpUrl(bg)) errors.push({ field: 'style.backgroundImageUrl', message: 'must be an absolute http(s) URL' });
    else out.backgroundImageUrl = bg;
  }
  return out;
}

function decodeRasterIcon(value: string, errors: FieldProblem[]): string | null {
  const b64 = value.replace(DATA_URL_PREFIX, '').replace(/\s+/g, '');
  if (!BASE64.test(b64)) {
    errors.push({ field: 'iconBase64', message: 'is not valid base64' });
    return null;
  }
  const kind = sniffRasterImage(Buffer.from(b64, 'base64'));
  if (!kind) {
    errors.push({ field: 'iconBase64', message: 'must decode to a PNG, JPEG, GIF or WebP image' });
    return null;
  }
  return b64;
}

function markdownWarnings(field: FieldName, value: string, warnings: FieldProblem[]): void {
  for (const link of findRelativeLinks(value)) {
    warnings.push({
      field,
      line: link.line,
      message: `relative link "${link.href.slice(0, 200)}" is not rewritten; use an absolute URL (e.g. the download host)`,
    });
  }
}

/**
 * Checks every rule of the spec's Product table beyond JSON types (those are the route schema's
 * job) and collects all problems, so one response lists everything to fix.
 */
export function validatePatch(patch: ProductPatch): PatchCheck {
  const errors: FieldProblem[] = [];
  const warnings: FieldProblem[] = [];
  const set: Partial<ProductFields> = {};
  const unset = new Set<FieldName>();
  const changed = new Set<FieldName>();
  let labels: LabelsPatch | undefined;

  for (const [key, value] of Object.entries(patch) as [FieldName, unknown][]) {
    if (value === undefined) continue;
    changed.add(key);
    const big = tooLarge(key, value);
    if (big) {
      errors.push(big);
      continue;
    }
    if (value === null) {
      if (key === 'name') errors.push({ field: 'name', message: 'can never be removed' });
      else unset.add(key);
      continue;
    }
    switch (key) {
      case 'name': {
        const name = (value as string).trim();
        if (name === '') errors.push({ field: 'name', message: 'can never be empty' });
        else if (CONTROL_OR_NEWLINE.test(name)) errors.push({ field: 'name', message: 'must be a single line without control characters' });
        else set.name = name;
        break;
      }
      case 'description': {
        const d = (value as string).trim();
        if (CONTROL_OR_NEWLINE.test(d)) errors.push({ field: 'description', message: 'must be a single line without control characters' });
        else if (d === '') unset.add(key);
        else set.description = d;
        break;
      }
      case 'text':
      case 'license':
      case 'instructions':
      case 'changelog':
      case 'faq': {
        const md = value as string;
        if (CONTROL.test(md)) {
          errors.push({ field: key, message: 'contains control characters' });
          break;
        }
        // Spec: an empty string removes instructions; the same holds for every Markdown field.
        if (md.trim() === '') {
          unset.add(key);
          break;
        }
        if (key === 'changelog' || key === 'faq') {
          const parsed = key === 'changelog' ? parseChangelog(md) : parseFaq(md);
          for (const e of parsed.errors) errors.push({ field: key, message: e.message, ...(e.line ? { line: e.line } : {}) });
          for (const w of parsed.warnings) warnings.push({ field: key, message: w.message, ...(w.line ? { line: w.line } : {}) });
        }
        markdownWarnings(key, md, warnings);
        set[key] = md;
        break;
      }
      case 'contact': {
        // Either part may be missing here when the schema already reported it (allPatchProblems).
        const c = value as { name?: string; email?: string };
        const name = (c.name ?? '').trim();
        const email = (c.email ?? '').trim();
        if (name === '' || CONTROL_OR_NEWLINE.test(name)) errors.push({ field: 'contact.name', message: 'is required when contact is set and must be a single line' });
        if (!EMAIL.test(email) || email.length > 254) errors.push({ field: 'contact.email', message: 'must be a valid email address' });
        set.contact = { name, email };
        break;
      }
      case 'style': {
        const style = validateStyle(value as NonNullable<ProductPatch['style']>, errors);
        // Spec: style is replaced wholesale, so sub-fields not sent are dropped.
        if (Object.keys(style).length === 0) unset.add('style');
        else set.style = style;
        break;
      }
      case 'icon': {
        const svg = value as string;
        if (svg.trim() === '') {
          unset.add('icon');
          break;
        }
        const result = sanitizeSvg(svg);
        if ('error' in result) errors.push({ field: 'icon', message: result.error, ...(result.line ? { line: result.line } : {}) });
        else set.icon = result.svg;
        break;
      }
      case 'iconBase64': {
        const raw = value as string;
        if (raw.trim() === '') {
          unset.add('iconBase64');
          break;
        }
        const b64 = decodeRasterIcon(raw, errors);
        if (b64) set.iconBase64 = b64;
        break;
      }
      case 'labels':
        labels = validateLabelsPatch(value, errors);
        break;
    }
  }

  const present = (v: string | null | undefined) => typeof v === 'string' && v.trim() !== '';
  if (present(patch.icon) && present(patch.iconBase64)) {
    errors.push({ field: 'iconBase64', message: 'send either icon (SVG) or iconBase64 (raster), not both' });
  }
  // The product has one icon: setting one kind clears the other.
  if (set.icon !== undefined) {
    unset.add('iconBase64');
    changed.add('iconBase64');
  }
  if (set.iconBase64 !== undefined) {
    unset.add('icon');
    changed.add('icon');
  }

  if (errors.length) return { ok: false, errors };
  return { ok: true, value: { set, unset: [...unset], changed: [...changed], warnings, ...(labels ? { labels } : {}) } };
}

/** Problems listed in one answer: enough to fix a real body, small for a hostile one. */
export const MAX_REPORTED_PROBLEMS = 20;

/**
 * The 400 for an invalid PATCH: the problems in `errors` (the first MAX_REPORTED_PROBLEMS; the
 * detail gives the total), the first in the detail.
 */
export function invalidPatch(errors: FieldProblem[]): ValidationError {
  const first = errors[0];
  const listed = errors.length > MAX_REPORTED_PROBLEMS ? ` (first ${MAX_REPORTED_PROBLEMS} listed)` : '';
  const detail = `${errors.length} invalid field(s)${listed}; first: ${first?.field} ${first?.message}${first?.line ? ` (line ${first.line})` : ''}`;
  return new ValidationError(detail, errors.slice(0, MAX_REPORTED_PROBLEMS));
}

/** Keys allowed in the body and in each of its objects before anything else is looked at. */
const MAX_KEYS = 4 * FIELD_NAMES.length;

/**
 * A body with far more keys than a product has fields, told cheaply before the schema reports
 * every unknown key one by one (170,000 keys fit in the body limit): a count, not a list.
 */
export function keyCountProblem(body: unknown): FieldProblem | null {
  if (!isPlainObject(body)) return null;
  const count = (o: Record<string, unknown>) => {
    let n = 0;
    for (const _ in o) n++;
    return n;
  };
  const top = count(body);
  if (top > MAX_KEYS) return { field: '(body)', message: `has ${top} fields; a product has ${FIELD_NAMES.length}` };
  for (const key of Object.keys(body)) {
    const value = body[key];
    if (!isPlainObject(value)) continue;
    const n = count(value);
    // `labels` is keyed by label, not by field name.
    if (key === 'labels' && n > MAX_LABEL_NOTICES) return { field: 'labels', message: `names ${n} labels; at most ${MAX_LABEL_NOTICES} may have a notice` };
    if (key !== 'labels' && n > MAX_KEYS) return { field: key.slice(0, 64), message: `has ${n} fields; at most ${MAX_KEYS} are read` };
  }
  return null;
}


/**
 * Every problem of a body the route schema refused: the schema's own (wrong types, unknown or
 * missing fields) and, for the fields and sub-fields it had nothing against, the rules above.
 * A vendor then fixes one body in one round trip instead of learning of the next error each time.
 */
export async function allPatchProblems(body: unknown, schemaProblems: FieldProblem[], validate: ValidatePatch = validateInProcess): Promise<FieldProblem[]> {
  if (!isPlainObject(body)) return schemaProblems;
  // Only the product's fields: whatever else the body holds, the schema has reported.
  const rest: Record<string, unknown> = {};
  for (const key of FIELD_NAMES) if (Object.hasOwn(body, key)) rest[key] = body[key];
  for (const { field } of schemaProblems) {
    const [top, sub] = field.split('.') as [string, string | undefined];
    const value = rest[top];
    if (sub !== undefined && isPlainObject(value)) {
      const { [sub]: _dropped, ...kept } = value;
      rest[top] = kept;
    } else delete rest[top];
  }
  const checked = await validate(rest as ProductPatch);
  const reported = new Set(schemaProblems.map((p) => p.field));
  return [...schemaProblems, ...(checked.ok ? [] : checked.errors.filter((e) => !reported.has(e.field)))];
}

/** The fields after applying a validated patch to the current ones; `at` stamps changed label notices. */
export function applyPatch(current: ProductFields, patch: ValidatedPatch, at = new Date().toISOString()): ProductFields {
  const next: ProductFields = { ...current, ...patch.set };
  for (const key of patch.unset) {
    if (key !== 'name') delete next[key];
  }
  if (patch.labels) {
    const labels = mergeLabelNotices(next.labels, patch.labels, at);
    if (labels) next.labels = labels;
    else delete next.labels;
  }
  return next;
}

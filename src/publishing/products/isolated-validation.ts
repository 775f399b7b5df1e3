/**
 * Checks PATCH bodies in a worker thread (infra/kept-worker.ts) under a wall-time and a memory
 * limit: parsing a changelog or FAQ at its size limit, or sanitizing an SVG icon, is work that
 * grows with vendor input and must not hold the serving event loop. What the worker posts is
 * checked before anything is stored from it.
 */
import { type FieldProblem, ServiceUnavailableError, ValidationError } from '../../infra/errors.js';
import { keptWorker } from '../../infra/kept-worker.js';
import { workerEntry } from '../../infra/module-worker.js';
import { FIELD_NAMES, type FieldName, MARKDOWN_FIELDS } from '../model/fields.js';
import type { ProductPatch } from './patch-schema.js';
import type { PatchCheck, ValidatedPatch } from './patch-validation.js';
import type { ValidateJob, ValidateReply } from './validate-worker.js';
import { isLabelsPatch } from '../notices/notices.js';

export interface ValidationLimits {
  /** Wall time one check may take, ms. */
  timeoutMs: number;
  maxMemoryMb?: number;
  /** Checks allowed to wait behind the running one; more are refused with a 503. */
  maxQueued?: number;
  idleMs?: number;
  /** Tests only: a check in the worker counts itself in cell 1, then waits while cell 0 is 0. */
  hold?: Int32Array;
}

export interface PatchValidator {
  validate(patch: ProductPatch): Promise<PatchCheck>;
  close(): Promise<void>;
}

const RETRY_AFTER_SECONDS = 10;
/** Lower than serving, higher than page renders: a check is small and a vendor waits for it. */
const VALIDATE_NICE = 5;

/** The worker is broken or replied nonsense: a 503, and the worker is not reused. */
class CheckFailed extends Error {}
/** The check hit a limit: the body is too complex. */
class TooComplex extends Error {}

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStr = (v: unknown): v is string => typeof v === 'string';
const isField = (v: unknown): v is FieldName => FIELD_NAMES.includes(v as FieldName);
const isProblem = (v: unknown): v is FieldProblem =>
  isRec(v) && isStr(v.field) && isStr(v.message) && (v.line === undefined || Number.isInteger(v.line));
const isStrings = (v: unknown, keys: string[]) => isRec(v) && Object.entries(v).every(([k, x]) => keys.includes(k) && isStr(x));

function isSetValue(field: FieldName, v: unknown): boolean {
  if (field === 'contact') return isStrings(v, ['name', 'email']);
  if (field === 'style') return isStrings(v, ['color1', 'color2', 'backgroundImageUrl', 'badgeColor']);
  return isStr(v);
}

/** The check's result, or null when `v` is not what `validatePatch` returns. */
export function checkPatchCheck(v: unknown): PatchCheck | null {
  if (!isRec(v)) return null;
  if (v.ok === false) return Array.isArray(v.errors) && v.errors.length > 0 && v.errors.every(isProblem) ? (v as unknown as PatchCheck) : null;
  if (v.ok !== true || !isRec(v.value)) return null;
  const { set, unset, changed, warnings, labels } = v.value as Rec;
  const ok =
    isRec(set) &&
    Object.entries(set).every(([k, x]) => isField(k) && isSetValue(k, x)) &&
    Array.isArray(unset) &&
    unset.every(isField) &&
    Array.isArray(changed) &&
    changed.every(isField) &&
    Array.isArray(warnings) &&
    warnings.every(isProblem) &&
    (labels === undefined || isLabelsPatch(labels));
  return ok ? { ok: true, value: v.value as unknown as ValidatedPatch } : null;
}

export function isolatedValidator(limits: ValidationLimits): PatchValidator {
  const seconds = Math.round(limits.timeoutMs / 1000);
  const worker = keptWorker<ValidateJob>({
    entry: workerEntry('validate-worker', import.meta.url),
    maxMemoryMb: limits.maxMemoryMb ?? 256,
    timeoutMs: limits.timeoutMs,
    idleMs: limits.idleMs ?? 60_000,
    maxQueued: limits.maxQueued ?? 16,
    nice: VALIDATE_NICE,
    failed: (f) => (f.kind === 'timeout' || f.kind === 'memory' ? new TooComplex(f.message) : new CheckFailed(f.message)),
    busy: (reason) =>
      new ServiceUnavailableError(reason === 'closed' ? 'The server is shutting down.' : 'Too many changes are being checked; try again shortly.', RETRY_AFTER_SECONDS),
  });

  function accept(reply: unknown): PatchCheck {
    const r = reply as ValidateReply;
    if (!isRec(r) || r.ok !== true) throw new CheckFailed(isRec(r) && r.ok === false ? String(r.message) : 'unexpected reply');
    const checked = checkPatchCheck(r.result);
    if (!checked) throw new CheckFailed('the check worker replied with something other than a check result');
    return checked;
  }

  return {
    async validate(patch) {
      try {
        return await worker.run({ patch, hold: limits.hold }, accept, (e) => e instanceof CheckFailed);
      } catch (e) {
        // Past a limit, the body is what made it so: a 400 naming the fields that take work.
        if (e instanceof TooComplex) {
          const heavy = [...MARKDOWN_FIELDS, 'icon' as const].filter((f) => typeof patch[f] === 'string');
          const message = `could not be checked within ${seconds} s and the memory limit; make it shorter or simpler`;
          const errors = (heavy.length ? heavy : ['(body)']).map((field) => ({ field, message }));
          throw new ValidationError(`${errors.length} field(s) too complex to check; first: ${errors[0]?.field}`, errors, 'too_complex');
        }
        if (e instanceof CheckFailed) throw new ServiceUnavailableError('The change could not be checked; try again shortly.', RETRY_AFTER_SECONDS);
        throw e;
      }
    },
    close: () => worker.close(),
  };
}

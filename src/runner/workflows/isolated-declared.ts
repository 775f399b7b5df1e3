/**
 * Reads the parameters an uploaded workflow version declares without holding the serving event
 * loop: a kept worker thread (infra/kept-worker.ts), under a wall-time and a memory limit, reads
 * the archive's `settings.xml` files, picks those of configuration nodes with a check linear in
 * their length and parses them (settings-entries.ts, declared-parameters.ts, all bounded in
 * bytes). The serving thread does not open the archive at all (its directory is the uploader's
 * too, thousands of entries read one by one). What the worker posts is checked before it is
 * stored.
 */
import { ServiceUnavailableError } from '../../infra/errors.js';
import { keptWorker } from '../../infra/kept-worker.js';
import { workerEntry } from '../../infra/module-worker.js';
import { type DeclaredParameter, MAX_PARAMETERS } from './declared-parameters.js';
import type { DeclaredJob, DeclaredReply } from './declared-worker.js';

export interface DeclaredLimits {
  /** Wall time the parse of one version's settings may take, ms. */
  timeoutMs?: number;
  maxMemoryMb?: number;
  /** Parses allowed to wait behind the running one; more are refused with a 503. */
  maxQueued?: number;
  idleMs?: number;
  /** Tests only: a parse in the worker counts itself in cell 1, then waits while cell 0 is 0. */
  hold?: Int32Array;
}

export interface DeclaredParametersReader {
  /** The parameters the archive at `file` declares, by name (the first node wins a repeated name). */
  read(file: string): Promise<DeclaredParameter[]>;
  close(): Promise<void>;
}

/** Reading and parsing the bounded settings takes a few seconds at most; past this it is hostile. */
export const DECLARED_TIMEOUT_MS = 20_000;
const RETRY_AFTER_SECONDS = 10;
/** Well below serving: the uploader waits for it, other users do not (as page renders). */
const DECLARED_NICE = 10;

/** The parse hit a limit: the settings are built to be slow, and declare nothing. */
class TooComplex extends Error {}
/** The worker is broken or replied nonsense: a 503, and the worker is not reused. */
class ParseFailed extends Error {}

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const TYPES = { string: 'string', integer: 'number', number: 'number', boolean: 'boolean' } as const;

/** Whether `v` is what `parameterOfSettings` returns for a configuration node. */
export function isDeclaredParameter(v: unknown): v is DeclaredParameter {
  if (!isRec(v) || typeof v.name !== 'string' || v.name === '' || typeof v.label !== 'string' || typeof v.description !== 'string') return false;
  if (typeof v.type !== 'string' || !Object.hasOwn(TYPES, v.type)) return false;
  if (v.default !== null && typeof v.default !== TYPES[v.type as keyof typeof TYPES]) return false;
  if (v.choices !== undefined && !(Array.isArray(v.choices) && v.choices.every((c) => typeof c === 'string'))) return false;
  // A range only on numbers, both ends finite and in order, and a default within it.
  const ranged = v.minimum !== undefined || v.maximum !== undefined;
  if (ranged) {
    if (v.type !== 'integer' && v.type !== 'number') return false;
    if (!Number.isFinite(v.minimum) || !Number.isFinite(v.maximum) || (v.minimum as number) > (v.maximum as number)) return false;
    if (typeof v.default === 'number' && (v.default < (v.minimum as number) || v.default > (v.maximum as number))) return false;
  }
  return Object.keys(v).every((k) => ['name', 'type', 'default', 'label', 'description', 'choices', 'minimum', 'maximum'].includes(k));
}

export function isolatedDeclaredReader(limits: DeclaredLimits = {}): DeclaredParametersReader {
  const worker = keptWorker<DeclaredJob>({
    entry: workerEntry('declared-worker', import.meta.url),
    maxMemoryMb: limits.maxMemoryMb ?? 256,
    timeoutMs: limits.timeoutMs ?? DECLARED_TIMEOUT_MS,
    idleMs: limits.idleMs ?? 60_000,
    maxQueued: limits.maxQueued ?? 16,
    nice: DECLARED_NICE,
    failed: (f) => (f.kind === 'timeout' || f.kind === 'memory' ? new TooComplex(f.message) : new ParseFailed(f.message)),
    busy: (reason) =>
      new ServiceUnavailableError(reason === 'closed' ? 'The server is shutting down.' : 'Too many workflow uploads are being read; try again shortly.', RETRY_AFTER_SECONDS),
  });

  const accept = (reply: unknown): (DeclaredParameter | null)[] => {
    const r = reply as DeclaredReply;
    if (!isRec(r) || r.ok !== true) throw new ParseFailed(isRec(r) && r.ok === false ? String(r.message) : 'unexpected reply');
    if (!Array.isArray(r.parameters) || !r.parameters.every((p) => p === null || isDeclaredParameter(p))) {
      throw new ParseFailed('the worker replied with something other than declared parameters');
    }
    return r.parameters;
  };

  return {
    async read(file) {
      let parsed: (DeclaredParameter | null)[];
      try {
        parsed = await worker.run({ file, hold: limits.hold }, accept, (e) => e instanceof ParseFailed);
      } catch (e) {
        // Settings built to be slow or big declare nothing; the upload itself goes through.
        if (e instanceof TooComplex) return [];
        if (e instanceof ParseFailed) throw new ServiceUnavailableError('The workflow archive could not be read; try again shortly.', RETRY_AFTER_SECONDS);
        throw e;
      }
      const found = new Map<string, DeclaredParameter>();
      for (const p of parsed) {
        if (found.size >= MAX_PARAMETERS) break;
        if (p && !found.has(p.name)) found.set(p.name, p);
      }
      return [...found.values()].sort((a, b) => a.name.localeCompare(b.name));
    },
    close: () => worker.close(),
  };
}

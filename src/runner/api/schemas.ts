import { UNSHOWN } from '../../infra/unshown.js';
import { type Static, type TSchema, Type } from 'typebox';
import { MAX_OUTPUT_NAME_BYTES } from '../runs/output-storage.js';
// RFC 9457 problem details: the schema the publishing app's document uses too.
import { Problem } from '../../infra/openapi.js';

export { Problem };

/*
 * Response schemas avoid `anyOf`: fast-json-stringify validates every anyOf branch with ajv on
 * each response it writes (date-time formats included), which cost more than authentication
 * (bench/runner-auth.ts). Fixed strings are an `enum`, nullable values a `type` array.
 */

/**
 * The serializer of a list page whose presenter builds exactly the documented shape (every
 * property, nothing more: tests compare it with the schema's own serializer). JSON.stringify
 * writes one flat string; fast-json-stringify joins a piece per property, which for a page of
 * 100 runs makes some three times the answer's size in intermediate strings, and list pages are
 * what a client loops over.
 */
export function plainJson() {
  return (data: unknown) => JSON.stringify(data);
}

/** One of fixed strings, as a JSON Schema `enum`. */
export function StringEnum<const T extends readonly string[]>(values: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

/** The schema's value or null, as `type: [T, "null"]`. */
export function Nullable<T extends TSchema>(schema: T, options: Record<string, unknown> = {}) {
  const json = schema as unknown as Record<string, unknown>;
  return Type.Unsafe<Static<T> | null>({ ...json, type: [json.type, 'null'], ...options });
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request (problem+json with per-field errors)',
  401: 'Missing or invalid credentials; the response carries `WWW-Authenticate: ApiKey realm="runner", Bearer realm="runner"`',
  403: 'Valid credentials that do not grant this operation',
  404: 'Not found (or not visible to the caller)',
  409: 'Conflict with the current state',
  413: 'Payload too large',
  415: 'Unsupported media type',
  429: 'Too many requests; see `Retry-After`',
};

function problem(status: number) {
  return {
    description: ERROR_DESCRIPTIONS[status] ?? 'Error',
    content: { 'application/problem+json': { schema: Problem } },
  };
}

/** Problem responses for the given statuses. Protected routes always include 401 and 403. */
export function errors(...statuses: number[]): Record<number, ReturnType<typeof problem>> {
  const out: Record<number, ReturnType<typeof problem>> = {};
  for (const s of statuses) out[s] = problem(s);
  return out;
}

/** Every protected route: bad input, missing/invalid credentials, not granted, and 429 once an
 * address has presented too many rejected credentials (auth/guard.ts). */
export const PROTECTED = [400, 401, 403, 429] as const;

export const NoContent = Type.Null({ description: 'No content' });

/**
 * Bounds of integers in requests. Counters (log sequence, workflow version, attempt) live in
 * 32-bit `integer` columns on PostgreSQL; a larger value would fail in the database (500) rather
 * than validation (400), so every integer a client sends is bounded to fit its column. Nine
 * digits keep query-string patterns simple. Sizes are `bigint`, bounded to JSON's exact range.
 */
export const MAX_COUNTER = 999_999_999;
export const INT32_MIN = -2_147_483_648;
export const INT32_MAX = 2_147_483_647;
export const MAX_SIZE = Number.MAX_SAFE_INTEGER;
/** A counter as a query-string value (0 to MAX_COUNTER). */
export const CounterString = (description: string) => Type.String({ pattern: '^(0|[1-9][0-9]{0,8})$', description });

const ID_RULE = { minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' };
export const Id = Type.String(ID_RULE);
/** An id with a description of what it names. */
export const IdOf = (description: string) => Type.String({ ...ID_RULE, description });
export const IdParams = Type.Object({ id: Id });
export const Timestamp = Type.String({ format: 'date-time' });
export const NullableTimestamp = Nullable(Timestamp);

export const Email = Type.String({ format: 'email', minLength: 3, maxLength: 254 });
export const Password = Type.String({ minLength: 10, maxLength: 1024, description: 'at least 10 characters' });
/** The characters a name shown to people may not hold (infra/unshown.ts). */
export { UNSHOWN };
/**
 * A display name: not blank, none of UNSHOWN. Leading blanks, the first
 * other character, the rest: each split is unique, so matching is linear (ajv checks the pattern
 * even of a string over maxLength).
 */
export const Name = Type.String({ minLength: 1, maxLength: 200, pattern: `^[^\\S${UNSHOWN}]*[^\\s${UNSHOWN}][^${UNSHOWN}]*$` });
/** A free-text description (projects, workflows); line breaks are welcome. */
export const Description = Type.String({ maxLength: 10_000 });

/**
 * The path parameters of one output file. The service checks the name's rule (outputNameProblem:
 * at most MAX_OUTPUT_NAME_BYTES of UTF-8, no separators…); code points never outnumber bytes, so
 * this bound lets every name the upload accepts through (the router's limit is the same, see
 * runner/service.ts).
 */
export const OutputParams = Type.Object({
  id: Id,
  name: Type.String({
    minLength: 1,
    maxLength: MAX_OUTPUT_NAME_BYTES,
    description: `file name, percent-encoded: at most ${MAX_OUTPUT_NAME_BYTES} bytes of UTF-8, no / or \\, not . or .., no control characters`,
  }),
});

export function items<T extends TSchema>(schema: T) {
  return Type.Object({ items: Type.Array(schema) });
}

export function page<T extends TSchema>(schema: T) {
  return Type.Object({
    items: Type.Array(schema),
    nextCursor: Nullable(Type.String(), { description: 'pass as `cursor` for the next page; null at the end' }),
  });
}

export const User = Type.Object({
  id: Type.String(),
  email: Type.String(),
  name: Type.String(),
  role: StringEnum(['admin', 'member']),
  disabled: Type.Boolean({ description: 'an administrator disabled the account: none of its credentials works' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const Session = Type.Object({
  token: Type.String({ description: 'JWT for `Authorization: Bearer`' }),
  expiresAt: Timestamp,
});

/** An executor label: what executors offer and runs or schedules require. */
export const Label = Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$', description: 'letters, digits, `.`, `_`, `-`; at most 63' });
/** Labels a run needs; an executor claims it only if it has every one. */
export const RequiredLabels = Type.Array(Label, { maxItems: 16, uniqueItems: true });

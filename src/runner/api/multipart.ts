import multipart, { type Multipart } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import { AppError, MalformedBodyError, PayloadTooLargeError, UnsupportedMediaTypeError } from '../../infra/errors.js';
import type { HttpApp } from '../../infra/http.js';
import { nulCheckedParts } from '../../infra/nul.js';
import type { PartLimits, PartSource } from '../workflows/upload.js';

/**
 * RFC 2046 §5.1.1: `boundary := 0*69<bchars> bcharsnospace`, at most 70 characters of a small
 * set, not ending in a space. The parser would accept longer ones (and throw, not answer, past
 * 252), so the rule is checked here, before any part is read.
 */
const BOUNDARY = /^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/;

/** The boundary parameter of a multipart Content-Type (RFC 2045 §5.1: a token or a quoted string). */
export function boundaryOf(contentType: string): string | null {
  const m = /;\s*boundary\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType);
  if (!m) return null;
  return m[1] ?? m[2] ?? null;
}

/** Why a Content-Type cannot start a multipart body, or null when its boundary is fine. */
export function boundaryProblem(contentType: string): string | null {
  const boundary = boundaryOf(contentType);
  if (boundary === null) return 'has no boundary parameter';
  if (!BOUNDARY.test(boundary)) return 'has an invalid boundary (RFC 2046: 1-70 characters of letters, digits and \'()+_,-./:=? )';
  return null;
}

/** Codes of @fastify/multipart's errors that mean the client sent a broken body. */
const MALFORMED_CODES = new Set(['FST_MP_PREMATURE_CLOSE', 'FST_PROTO_VIOLATION', 'FST_INVALID_JSON_FIELD_ERROR']);

/** Registers the multipart parser for the runner's upload routes (file size limits are errors). */
export async function registerMultipart(app: HttpApp): Promise<void> {
  await app.register(multipart, { throwFileSizeLimit: true });
}

/**
 * Hands the request's parts to `consume` (a service reading the upload) and turns every failure of
 * the multipart parser into a 400 problem: no boundary, a body cut short, broken part headers.
 * Errors come from the parser two ways, as the rejection of the next part or as an `error` of a
 * file part's stream; both are recorded, so an error from anywhere else (storage, database) keeps
 * its meaning. Limits (file size, part counts) stay errors of their own for the service to name.
 */
export async function withMultipart<T>(req: FastifyRequest, expected: string, consume: (parts: PartSource) => Promise<T>): Promise<T> {
  if (!req.isMultipart()) throw new UnsupportedMediaTypeError(`send the body as multipart/form-data: ${expected}`);
  const problem = boundaryProblem(req.headers['content-type'] ?? '');
  if (problem) throw new MalformedBodyError(`the multipart Content-Type ${problem}`, [{ field: 'content-type', message: problem }]);
  const fromParser = new WeakSet<object>();
  // The NUL rule of every request value holds for field names, values and file names too.
  const parts: PartSource = (limits) => {
    refuseLongerThan(req, limits);
    return nulCheckedParts(observed(req, limits, fromParser));
  };
  try {
    return await consume(parts);
  } catch (e) {
    if (e instanceof AppError || typeof e !== 'object' || e === null) throw e;
    const code = (e as { code?: unknown }).code;
    if (fromParser.has(e) || (typeof code === 'string' && MALFORMED_CODES.has(code))) {
      const message = (e as Error).message || 'is not valid multipart/form-data';
      throw new MalformedBodyError(`the multipart body is malformed: ${message}`, [{ field: '(body)', message }]);
    }
    throw e;
  }
}

/** Room in a multipart body for each part's boundary and headers (RFC 7578 §4): far above what clients send. */
const PART_OVERHEAD = 16 * 1024;

/**
 * 413 from the Content-Length alone when no body within `limits` can be that long, before any of
 * it is read: a client that sent `Expect: 100-continue` then gets the 413 instead of a 100 and
 * never sends the body (RFC 9110 §10.1.1; infra/expect-continue.ts).
 */
function refuseLongerThan(req: FastifyRequest, limits: PartLimits): void {
  const length = Number(req.headers['content-length']);
  const most = limits.files * (limits.fileSize + PART_OVERHEAD) + limits.fields * (limits.fieldSize + PART_OVERHEAD) + PART_OVERHEAD;
  if (Number.isFinite(length) && length > most) {
    throw new PayloadTooLargeError(`the body is ${length} bytes; at most ${most} fit ${limits.files} file(s) of ${limits.fileSize} bytes and ${limits.fields} field(s)`, [
      { field: '(body)', message: `is larger than ${most} bytes` },
    ]);
  }
}

/**
 * Checks text fields read from a multipart body against `schema` with the validator of the JSON
 * bodies, so a rule such as Name is one rule, and a broken field gets the same 400 problem.
 */
export function checkFields(req: FastifyRequest, schema: TSchema, fields: object): void {
  const validate = req.compileValidationSchema(schema, 'body');
  if (validate(fields)) return;
  // The shape of fastify's own validation errors: the error handler presents both alike.
  throw Object.assign(new Error('invalid multipart fields'), { statusCode: 400, validation: validate.errors ?? [], validationContext: 'body' });
}

/** The parts of `req`, recording every error the parser raises in `fromParser`. */
async function* observed(req: FastifyRequest, limits: PartLimits, fromParser: WeakSet<object>): AsyncGenerator<Multipart> {
  const note = (e: unknown) => {
    if (typeof e === 'object' && e !== null) fromParser.add(e);
    return e;
  };
  let iterator: AsyncIterator<Multipart>;
  try {
    iterator = req.parts({ limits })[Symbol.asyncIterator]();
  } catch (e) {
    throw note(e);
  }
  try {
    for (;;) {
      let next: IteratorResult<Multipart>;
      try {
        next = await iterator.next();
      } catch (e) {
        throw note(e);
      }
      if (next.done) return;
      if (next.value.type === 'file') {
        // The parser may have failed the stream already, before this part was asked for.
        const file = next.value.file;
        if (file.errored) note(file.errored);
        file.on('error', note);
      }
      yield next.value;
    }
  } finally {
    // A consumer that stops early (a refused part) ends the parser's iteration too.
    await iterator.return?.();
  }
}

/**
 * The catalogue of named errors. Every error a route or module raises on purpose is one of
 * these; the HTTP layer turns them into RFC 9457 problem+json with a stable `code`.
 */
export interface FieldProblem {
  /** Dotted path of the offending field ("style.color1"); "(body)" for the body as a whole. */
  field: string;
  message: string;
  /** 1-based line inside a multi-line field or the raw body, when known. */
  line?: number;
}

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly title: string,
    detail: string,
    readonly errors: FieldProblem[] = [],
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'AppError';
  }
}

export class ValidationError extends AppError {
  constructor(detail: string, errors: FieldProblem[] = [], code = 'invalid_field') {
    super(400, code, 'Invalid request', detail, errors);
    this.name = 'ValidationError';
  }
}

export class MalformedBodyError extends AppError {
  constructor(detail: string, errors: FieldProblem[] = []) {
    super(400, 'malformed_body', 'Malformed request body', detail, errors);
    this.name = 'MalformedBodyError';
  }
}

export class UnauthorizedError extends AppError {
  constructor(detail: string, challenge: string) {
    super(401, 'unauthorized', 'Unauthorized', detail, [], { 'www-authenticate': challenge });
    this.name = 'UnauthorizedError';
  }
}

export class ForbiddenError extends AppError {
  constructor(detail: string, code = 'forbidden') {
    super(403, code, 'Forbidden', detail);
    this.name = 'ForbiddenError';
  }
}

export class NotFoundError extends AppError {
  constructor(detail: string) {
    super(404, 'not_found', 'Not found', detail);
    this.name = 'NotFoundError';
  }
}

export class ConflictError extends AppError {
  constructor(detail: string, code = 'conflict', headers: Record<string, string> = {}) {
    super(409, code, 'Conflict', detail, [], headers);
    this.name = 'ConflictError';
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(detail: string, errors: FieldProblem[] = []) {
    super(413, 'payload_too_large', 'Payload too large', detail, errors);
    this.name = 'PayloadTooLargeError';
  }
}

export class UnsupportedMediaTypeError extends AppError {
  constructor(detail: string) {
    super(415, 'unsupported_media_type', 'Unsupported media type', detail);
    this.name = 'UnsupportedMediaTypeError';
  }
}

export class TooManyRequestsError extends AppError {
  constructor(detail: string, retryAfterSeconds: number) {
    super(429, 'too_many_requests', 'Too many requests', detail, [], {
      'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))),
    });
    this.name = 'TooManyRequestsError';
  }
}

/** Errors of the command line and of domain modules that are not about HTTP input. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export class ServiceUnavailableError extends AppError {
  constructor(detail: string, retryAfterSeconds: number) {
    super(503, 'unavailable', 'Service unavailable', detail, [], {
      'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))),
    });
    this.name = 'ServiceUnavailableError';
  }
}

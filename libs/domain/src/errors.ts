/**
 * Operational errors: expected outcomes a caller can act on. The api maps each kind to one
 * status code (docs/api.md, Errors) and shows its message; anything else is a bug and is hidden.
 */
export abstract class AppError extends Error {
  abstract readonly status: number;
  /** When set, the answer carries `Retry-After` with it: when the caller may try again. */
  readonly retryAfterSeconds?: number;
  constructor(message: string, retryAfterSeconds?: number) {
    super(message);
    this.name = new.target.name;
    if (retryAfterSeconds != null) this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** 400: a business rule refused the request. The message says what and why. */
export class BadRequestError extends AppError {
  readonly status = 400;
}

/** 401: missing or invalid credentials. */
export class UnauthorizedError extends AppError {
  readonly status = 401;
  constructor(message = 'Invalid or missing API key.') {
    super(message);
  }
}

/** 403: authenticated, but not allowed to do this. */
export class ForbiddenError extends AppError {
  readonly status = 403;
}

/** 404: missing, or outside the caller's tenant (never distinguish the two). */
export class NotFoundError extends AppError {
  readonly status = 404;
  /** `NotFoundError.of('Listener', id)` → "Listener ID <id> not found." */
  static of(kind: string, id: string): NotFoundError {
    return new NotFoundError(`${kind} ID ${id} not found.`);
  }
}

/** 413: a body, or a part of one, is larger than a limit. Nothing was written. */
export class PayloadTooLargeError extends AppError {
  readonly status = 413;
}

/** 415: not a content type or encoding the endpoint reads. */
export class UnsupportedMediaTypeError extends AppError {
  readonly status = 415;
}

/** 422: a body that parsed but holds something unusable (a business-level validation the schemas cannot express). */
export class UnprocessableError extends AppError {
  readonly status = 422;
}

/** 409: a uniqueness clash. */
export class ConflictError extends AppError {
  readonly status = 409;
}

/**
 * 503: a dependency (Postgres, Redis, the built-in registry) is unreachable; nothing was
 * half-written. With `retryAfterSeconds`, the answer carries `Retry-After`.
 */
export class UnavailableError extends AppError {
  readonly status = 503;
}

/** 502: an upstream host (GitHub, Gitea, a local repository root) failed; the message says what it answered. */
export class BadGatewayError extends AppError {
  readonly status = 502;
}

/** 504: an upstream host (a deployed app) did not answer in time. */
export class GatewayTimeoutError extends AppError {
  readonly status = 504;
}

/** 429: a request budget is spent; the caller may retry after `retryAfterSeconds` (`Retry-After`). */
export class TooManyRequestsError extends AppError {
  readonly status = 429;
  declare readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number) {
    super(message, retryAfterSeconds);
  }
}

// Errors the runtime raises, shaped after the API server's metav1.Status so a
// caller can branch on the HTTP code and the Status reason.

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/** A non-2xx answer from the API server. */
export class ApiError extends Error {
  readonly statusCode: number;
  /** metav1.Status reason, e.g. NotFound, AlreadyExists, Conflict, TooManyRequests, Invalid. */
  readonly reason: string | undefined;
  readonly causes: StatusCause[];
  /** Seconds the server asked us to wait (Retry-After), if any. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    statusCode: number,
    message: string,
    opts: { reason?: string; causes?: StatusCause[]; retryAfterSeconds?: number } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.statusCode = statusCode;
    this.reason = opts.reason;
    this.causes = opts.causes ?? [];
    this.retryAfterSeconds = opts.retryAfterSeconds;
  }
}

function code(err: unknown): number | undefined {
  return err instanceof ApiError ? err.statusCode : undefined;
}

export const isNotFound = (err: unknown): boolean => code(err) === 404;
export const isConflict = (err: unknown): boolean =>
  code(err) === 409 && (err as ApiError).reason !== 'AlreadyExists';
export const isAlreadyExists = (err: unknown): boolean =>
  code(err) === 409 && (err as ApiError).reason === 'AlreadyExists';
export const isGone = (err: unknown): boolean => code(err) === 410;
export const isTooManyRequests = (err: unknown): boolean => code(err) === 429;
export const isForbidden = (err: unknown): boolean => code(err) === 403;
export const isInvalid = (err: unknown): boolean => code(err) === 422;

/**
 * A 404 for the resource itself, not for one object of it: the API server
 * serves no such kind (its CRD is not installed). It answers an unknown group
 * with a bare "404 page not found" and an unknown resource of a known group
 * with a Status saying it "could not find the requested resource".
 */
export const isUnknownResource = (err: unknown): boolean =>
  code(err) === 404 &&
  /404 page not found|the server could not find the requested resource/i.test((err as Error).message);

/**
 * An error a reconciler returns when retrying cannot help (bad spec, missing
 * permission the user must grant): logged and recorded, never requeued.
 */
export class TerminalError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

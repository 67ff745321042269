/** A Kubernetes API answer other than 2xx, with the apiserver's own reason and message. */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;
  readonly reason: string;
  readonly retryAfterSeconds: number | undefined;

  /** `note`: what the gateway adds to the apiserver's message (whom a write was made as, say). */
  constructor(
    method: string,
    path: string,
    status: number,
    body: unknown,
    retryAfterSeconds?: number,
    note?: string,
  ) {
    const statusBody = isStatus(body) ? body : undefined;
    const reason = statusBody?.reason ?? 'Unknown';
    const detail = statusBody?.message ?? (typeof body === 'string' ? body.slice(0, 500) : '');
    super(
      `${method} ${path} failed: ${status} ${reason}${detail ? `: ${detail}` : ''}${note ? `; ${note}` : ''}`,
    );
    this.status = status;
    this.reason = reason;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

function isStatus(body: unknown): body is { kind: 'Status'; reason?: string; message?: string } {
  return typeof body === 'object' && body !== null && (body as { kind?: unknown }).kind === 'Status';
}

/**
 * A connection to the API server that fell silent without closing, and was closed for it
 * (kube/liveness.ts): what was under way on it fails with this, and is tried again on a new one.
 */
export class SilentConnection extends Error {
  override name = 'SilentConnection';
}

/** Errors worth another try: throttling, server trouble, or a connection that broke. */
export function isTransient(error: unknown): boolean {
  if (error instanceof ApiError) return isTransientStatus(error.status);
  return error instanceof Error && error.name !== 'AbortError';
}

/** An answer that says to ask again later: throttled (429), or the server in trouble or not ready yet (5xx). */
export function isTransientStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

export function isNotFound(error: unknown): boolean {
  return error instanceof ApiError && error.status === 404;
}

/** The result, or undefined when the API says the object is not there (controller-runtime's IgnoreNotFound). */
export async function ignoreNotFound<T>(request: Promise<T>): Promise<T | undefined> {
  try {
    return await request;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/**
 * A JSON Patch whose `test` failed: the object changed since it was read. The apiserver says only
 * "422 Invalid: the server rejected our request due to an error in our request", with no detail, so
 * the sender of a patch with a `test` names it (kube/patcher.ts).
 */
export class StaleWrite extends Error {
  override name = 'StaleWrite';
}

/**
 * A guarded write that met a newer object: a JSON Patch whose `test` failed (StaleWrite), or a write
 * carrying a resourceVersion the object no longer has (409, "the object has been modified": a guarded
 * merge patch, a child applied over the version read). The object is looked at again, not the write
 * retried blindly. Not a field manager's conflict (409 too), which reading again does not resolve.
 */
export function isStaleWrite(error: unknown): boolean {
  if (error instanceof StaleWrite) return true;
  return (
    error instanceof ApiError && error.status === 409 && /the object has been modified/.test(error.message)
  );
}

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
 * A guarded write that met a newer object: a JSON Patch whose `test` of the resourceVersion failed
 * (the apiserver answers 422, or 409). The object is looked at again, not the write retried blindly.
 */
export function isStaleWrite(error: unknown): boolean {
  return (
    error instanceof ApiError && (error.status === 409 || error.status === 422) && /test/i.test(error.message)
  );
}

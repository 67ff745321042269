/** A Kubernetes API answer other than 2xx, with the apiserver's own reason and message. */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;
  readonly reason: string;
  readonly retryAfterSeconds: number | undefined;

  constructor(method: string, path: string, status: number, body: unknown, retryAfterSeconds?: number) {
    const statusBody = isStatus(body) ? body : undefined;
    const reason = statusBody?.reason ?? 'Unknown';
    const detail = statusBody?.message ?? (typeof body === 'string' ? body.slice(0, 500) : '');
    super(`${method} ${path} failed: ${status} ${reason}${detail ? `: ${detail}` : ''}`);
    this.status = status;
    this.reason = reason;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

function isStatus(body: unknown): body is { kind: 'Status'; reason?: string; message?: string } {
  return typeof body === 'object' && body !== null && (body as { kind?: unknown }).kind === 'Status';
}

/** Errors worth another try: throttling, server trouble, or a connection that broke. */
export function isTransient(error: unknown): boolean {
  if (error instanceof ApiError) return error.status === 429 || error.status >= 500;
  return error instanceof Error && error.name !== 'AbortError';
}

import type { MiddlewareHandler } from 'hono';
import {
  type RefusalReason,
  type ReplayStore,
  SESSION_HEADER,
  type ServiceObserver,
  TrustError,
  type VerificationKeys,
  verifyBody,
  verifyToken,
} from '../../../protocol/index.ts';
import { errorResponse } from '../../error-response.ts';

export interface VerifyOptions {
  /** The service's name: tokens for any other audience are refused. */
  audience: string;
  /** Called per request with the runtime's `env`; throws when nothing to verify with is configured. */
  keys: (env: unknown) => VerificationKeys;
  /** Bodies over this many bytes are refused (413) unread. */
  maxBodyBytes: number;
  /** The token ids seen, shared by the service's replicas where it has several. */
  replays: ReplayStore;
  /** Told of each request refused, when someone listens (`causeway serve`'s metrics). */
  observer?: () => ServiceObserver | undefined;
}

/** Downstream handlers read the body from here: the exact bytes whose digest was verified. */
export type Verified = { Variables: { body: Uint8Array } };

/**
 * Refuses every request the gateway did not sign for this service, this route and this body (itself,
 * or in a session it signed), or that was seen before. In that order: the size as declared, the token, then the body read up to the limit.
 */
export function verify({
  audience,
  keys,
  maxBodyBytes,
  replays,
  observer,
}: VerifyOptions): MiddlewareHandler<Verified> {
  const tooLarge = `the body is larger than ${maxBodyBytes} bytes`;
  const refused = (reason: RefusalReason) => observer?.()?.refused(reason);
  return async (c, next) => {
    let key: VerificationKeys;
    try {
      key = keys(c.env);
    } catch (error) {
      return errorResponse(c, 500, (error as Error).message);
    }
    if (Number(c.req.header('content-length') ?? 0) > maxBodyBytes) {
      refused('too-large');
      return errorResponse(c, 413, tooLarge);
    }
    const route = { audience, method: c.req.method, path: c.req.path };
    try {
      const session = c.req.header(SESSION_HEADER);
      const claims = await verifyToken(key, c.req.header('authorization'), route, session);
      const body = await readUpTo(c.req.raw, maxBodyBytes);
      if (!body) {
        refused('too-large');
        return errorResponse(c, 413, tooLarge);
      }
      await verifyBody(claims, body, replays);
      c.set('body', body);
    } catch (error) {
      if (error instanceof TrustError) {
        refused(error.reason ?? 'malformed');
        return errorResponse(c, 401, error.message);
      }
      throw error;
    }
    await next();
  };
}

/**
 * The body, or undefined as soon as it grows over `limit` bytes (what a length header does not say).
 * A body of a declared length (already held to the limit) is read whole: HTTP's framing gives no more
 * than that, and a server may read it without a stream (Node's adapter does, for less CPU).
 */
async function readUpTo(request: Request, limit: number): Promise<Uint8Array | undefined> {
  if (request.headers.has('content-length')) return new Uint8Array(await request.arrayBuffer());
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

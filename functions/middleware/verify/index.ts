import type { MiddlewareHandler } from 'hono';
import { ReplayGuard, TrustError, verifyRequest } from '../../../protocol/index.ts';
import { errorResponse } from '../../error-response.ts';

export interface VerifyOptions {
  /** The service's name: tokens for any other audience are refused. */
  audience: string;
  /** Called per request with the runtime's `env`; throws when no secret is configured. */
  secret: (env: unknown) => Uint8Array;
}

/** Downstream handlers read the body from here: the exact bytes whose digest was verified. */
export type Verified = { Variables: { body: Uint8Array } };

/** Refuses every request the gateway did not sign for this service, this route and this body, or that was seen before. */
export function verify({ audience, secret }: VerifyOptions): MiddlewareHandler<Verified> {
  const replays = new ReplayGuard();
  return async (c, next) => {
    let key: Uint8Array;
    try {
      key = secret(c.env);
    } catch (error) {
      return errorResponse(c, 500, (error as Error).message);
    }
    const body = new Uint8Array(await c.req.arrayBuffer());
    const request = { audience, method: c.req.method, path: c.req.path, body };
    try {
      await verifyRequest(key, c.req.header('authorization'), request, replays);
    } catch (error) {
      if (error instanceof TrustError) return errorResponse(c, 401, error.message);
      throw error;
    }
    c.set('body', body);
    await next();
  };
}

/** Builds what a gateway would send, for the tests of this folder. */
import {
  type ActivityInvocation,
  type DueHandler,
  type InvocationBatch,
  type InvocationRequest,
  PATHS,
  PROTOCOL,
  type ResolvedResource,
  signRequest,
} from '../protocol/index.ts';

export const SECRET = 'a test secret that is long enough for HS256';

/** Kopf's example resource, as a gateway resolves it. */
export const KOPF_EXAMPLES: ResolvedResource = {
  group: 'kopf.dev',
  version: 'v1',
  plural: 'kopfexamples',
  kind: 'KopfExample',
  namespaced: true,
};

export interface Call {
  audience: string;
  path: string;
  /** Sent as is; GET when absent. */
  body?: string;
  secret?: string;
}

export async function signed({ audience, path, body, secret = SECRET }: Call): Promise<Request> {
  const method = body === undefined ? 'GET' : 'POST';
  const bytes = new TextEncoder().encode(body ?? '');
  const token = await signRequest(new TextEncoder().encode(secret), { audience, method, path, body: bytes });
  return new Request(`http://functions.test${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body,
  });
}

export function signedManifest(audience: string, secret?: string): Promise<Request> {
  return signed({ audience, path: PATHS.manifest, secret });
}

export function signedInvoke(
  audience: string,
  request: InvocationRequest | ActivityInvocation | InvocationBatch,
  secret?: string,
): Promise<Request> {
  return signed({ audience, path: PATHS.invoke, body: JSON.stringify(request), secret });
}

/**
 * A create call for a namespaced `KopfExample` named `kex-1`, with every given handler due on its first
 * attempt; `request` replaces parts of the request (the reason, the memo, ...).
 */
export function invocation(
  ids: string[],
  due: Partial<DueHandler> = {},
  request: Partial<InvocationRequest> = {},
): InvocationRequest {
  return {
    protocol: PROTOCOL,
    reason: 'create',
    resource: KOPF_EXAMPLES,
    body: {
      apiVersion: 'kopf.dev/v1',
      kind: 'KopfExample',
      metadata: { name: 'kex-1', namespace: 'default', uid: 'uid-1', labels: { app: 'demo' } },
      spec: { field: 'value', items: ['a', 'b'] },
    },
    handlers: ids.map((id) => ({
      id,
      retry: 0,
      started: new Date().toISOString(),
      idempotencyKey: `key-${id}`,
      ...due,
    })),
    deadline: new Date(Date.now() + 30_000).toISOString(),
    ...request,
  };
}

/**
 * Calls an operator's handlers in-process with a synthetic cause, no cluster needed: the request is
 * built, signed and answered exactly as it would be for the gateway, so it works with any operator
 * made with causeway/functions. Needs Node (it shares the secret through the process environment).
 */
import { ensureProcessSecret } from '../gateway/index.ts';
import {
  type ActivityInvocation,
  type ActivityKind,
  type DueHandler,
  type IndexContents,
  type InvocationResponse,
  type KubernetesObject,
  kindsFor,
  type Manifest,
  PATHS,
  PROTOCOL,
  type Reason,
  type ResolvedResource,
  signRequest,
} from '../protocol/index.ts';

export interface HandlerCall {
  reason: Reason;
  /** The object as the handlers should see it. */
  body: KubernetesObject;
  /** Which handlers to call, by id; defaults to every handler of the operator that `reason` calls. */
  handlers?: string[];
  /** Defaults to what the body's apiVersion and kind suggest (plural: the lowercase kind + "s"). */
  resource?: ResolvedResource;
  /** Per handler: the attempt (0 first) and when the first attempt started. */
  retry?: number;
  started?: Date;
  /** The indexes the handlers read, by id, as the gateway would send them: each key with its values. */
  indexes?: Record<string, IndexContents>;
  /** The operator's secret, if it was given one explicitly; else $CAUSEWAY_SECRET, set if missing. */
  secret?: string;
}

interface Service {
  fetch(request: Request): Promise<Response> | Response;
}

const encoder = new TextEncoder();

export async function callHandlers(operator: Service, call: HandlerCall): Promise<InvocationResponse> {
  const secret = call.secret === undefined ? ensureProcessSecret() : encoder.encode(call.secret);
  const health = (await (await operator.fetch(new Request(`http://operator${PATHS.health}`))).json()) as {
    name: string;
  };
  const ids = call.handlers ?? (await declaredFor(operator, health.name, secret, call.reason));
  const started = (call.started ?? new Date()).toISOString();
  const handlers: DueHandler[] = ids.map((id) => ({
    id,
    retry: call.retry ?? 0,
    started,
    idempotencyKey: `test:${call.body.metadata.uid}:${id}`,
  }));
  const body = JSON.stringify({
    protocol: PROTOCOL,
    reason: call.reason,
    resource: call.resource ?? resourceOf(call.body),
    body: call.body,
    handlers,
    deadline: new Date(Date.now() + 30_000).toISOString(),
    ...(call.indexes ? { indexes: call.indexes } : {}),
  });
  const response = await send(operator, health.name, secret, 'POST', PATHS.invoke, body);
  return (await response.json()) as InvocationResponse;
}

export interface ActivityCall {
  activity: ActivityKind;
  /** Which handlers to call, by id; defaults to every handler of the operator for the activity. */
  handlers?: string[];
  /** Per handler: the attempt (0 first) and when the first attempt started. */
  retry?: number;
  started?: Date;
  /** The operator's memo, as the gateway keeps it between activity calls. */
  memo?: Record<string, unknown>;
  /** Probes: the indexes they read, by id, as the gateway would send them. */
  indexes?: Record<string, IndexContents>;
  /** The operator's secret, if it was given one explicitly; else $CAUSEWAY_SECRET, set if missing. */
  secret?: string;
}

/** Calls an operator's activity handlers (startup, cleanup, probe, login) in-process, as the gateway does. */
export async function callActivities(operator: Service, call: ActivityCall): Promise<InvocationResponse> {
  const secret = call.secret === undefined ? ensureProcessSecret() : encoder.encode(call.secret);
  const health = (await (await operator.fetch(new Request(`http://operator${PATHS.health}`))).json()) as {
    name: string;
  };
  const ids =
    call.handlers ??
    (await manifestOf(operator, health.name, secret)).activities
      ?.filter((activity) => activity.kind === call.activity)
      .map((activity) => activity.id) ??
    [];
  const started = (call.started ?? new Date()).toISOString();
  const request: ActivityInvocation = {
    protocol: PROTOCOL,
    reason: call.activity,
    handlers: ids.map((id) => ({ id, retry: call.retry ?? 0, started })),
    deadline: new Date(Date.now() + 30_000).toISOString(),
    ...(call.memo ? { memo: call.memo } : {}),
    ...(call.indexes ? { indexes: call.indexes } : {}),
  };
  const response = await send(operator, health.name, secret, 'POST', PATHS.invoke, JSON.stringify(request));
  return (await response.json()) as InvocationResponse;
}

async function manifestOf(operator: Service, audience: string, secret: Uint8Array): Promise<Manifest> {
  return (await (await send(operator, audience, secret, 'GET', PATHS.manifest, '')).json()) as Manifest;
}

async function declaredFor(
  operator: Service,
  audience: string,
  secret: Uint8Array,
  reason: Reason,
): Promise<string[]> {
  const manifest = await manifestOf(operator, audience, secret);
  // A declarative index is the gateway's to compute: never called.
  return manifest.handlers
    .filter((handler) => kindsFor(reason).includes(handler.kind) && !handler.index)
    .map((handler) => handler.id);
}

async function send(
  operator: Service,
  audience: string,
  secret: Uint8Array,
  method: 'GET' | 'POST',
  path: string,
  body: string,
) {
  const token = await signRequest(secret, { audience, method, path, body: encoder.encode(body) });
  const response = await operator.fetch(
    new Request(`http://operator${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(method === 'POST' ? { body } : {}),
    }),
  );
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response;
}

function resourceOf(body: KubernetesObject): ResolvedResource {
  const [group, version] = body.apiVersion.includes('/') ? body.apiVersion.split('/') : ['', body.apiVersion];
  return {
    group: group as string,
    version: version as string,
    kind: body.kind,
    plural: `${body.kind.toLowerCase()}s`,
    namespaced: body.metadata.namespace !== undefined,
  };
}

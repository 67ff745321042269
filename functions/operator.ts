import { Hono } from 'hono';
import type { JSONWebKeySet } from 'jose';
import {
  type ActivityInvocation,
  type Health,
  IN_PROCESS,
  type InProcessCalls,
  type InvocationBatch,
  type InvocationRequest,
  isActivityInvocation,
  type Manifest,
  type MissingIndexes,
  OBSERVED,
  PATHS,
  PROTOCOL,
  ReplayGuard,
  type ReplayStore,
  type ServiceObserver,
  type ServiceScope,
} from '../protocol/index.ts';
import { MANIFEST } from '../protocol/schema/checks.ts';
import { type ActivityOn, activitySpecOf, createActivities, invokeActivities } from './activities.ts';
import { RunningDaemons } from './daemons.ts';
import { errorResponse } from './error-response.ts';
import { checkIndexesDeclared, KeptIndexes } from './indexes.ts';
import { BadRequest, checkBatch, checkCall, parseInvocation } from './invocation.ts';
import { invoke, invokeBatch } from './invoke.ts';
import { keySource } from './keys.ts';
import { verify } from './middleware/verify/index.ts';
import { createRegistry, type On, specOf } from './registry.ts';

export interface OperatorOptions {
  /** The service's name: gateways sign every request for it as the audience. */
  name: string;
  /**
   * The gateway's public keys (a JWKS), or the URL that serves them. Unless given (or `secret`), they
   * are looked up per request: `CAUSEWAY_JWKS`, `CAUSEWAY_JWKS_URL`, then `CAUSEWAY_SECRET`, from the
   * Workers `env`, then from the process environment.
   */
  keys?: JSONWebKeySet | URL;
  /** A secret shared with the gateway instead (HS256): at least 32 bytes. */
  secret?: string | Uint8Array;
  /**
   * What the service needs the gateway to reach for it: the resources its handlers watch, those its
   * admission handlers review, the kinds of children it applies. Published in its manifest, for the
   * deployment's RBAC and the gateway's pin; a gateway refuses a service whose declared scope goes
   * beyond what its operator granted. `causeway run` takes it as the pin.
   */
  scope?: ServiceScope;
  /**
   * Requests with a bigger body are refused (413) before it is read: 16 MiB unless given, room for
   * an object, its old and new states and their diff, each up to etcd's 1.5 MiB.
   */
  maxBodyBytes?: number;
  /**
   * Where the ids of the tokens admitted are kept until they expire: this process's memory unless
   * given. A service with several replicas gives them one shared store (see ReplayStore).
   */
  replays?: ReplayStore;
}

export interface Operator {
  readonly name: string;
  /**
   * `op.on.<kind>(resource, options?, handler)`, one per kind of cause; `op.on.<activity>(options?,
   * handler)` for the operator's activities (startup, cleanup, probe, login).
   */
  readonly on: On & ActivityOn;
  /** Kopf's `@kopf.index`: the same as `op.on.index`. */
  readonly index: On['index'];
  /** A fetch handler for any runtime; `env` is where Workers pass their bindings. */
  readonly fetch: (request: Request, env?: unknown) => Promise<Response>;
  /** For a gateway in the same process: the same answers, without HTTP, JSON or signatures. */
  readonly [IN_PROCESS]: InProcessCalls;
  /** Where whoever serves it in its process (`causeway serve`) listens to what it does. */
  readonly [OBSERVED]: (observer: ServiceObserver) => void;
}

const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

export function operator(options: OperatorOptions): Operator {
  const name = options?.name;
  // A DNS-1123 label, as the gateway takes it: the name is also used in URLs, Kubernetes objects and
  // token audiences.
  if (!MANIFEST.name.test(name)) {
    throw new TypeError(`operator name ${JSON.stringify(name)} must be ${MANIFEST.name.expected}`);
  }
  const { on: onResources, handlers } = createRegistry();
  const { on: onActivities, activities } = createActivities();
  const on = { ...onResources, ...onActivities };
  const daemons = new RunningDaemons();
  const keptIndexes = new KeptIndexes((id) => handlers.get(id)?.kind === 'index');
  let observer: ServiceObserver | undefined;
  const signed = verify({
    observer: () => observer,
    audience: name,
    keys: keySource({ keys: options.keys, secret: options.secret }),
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    replays: options.replays ?? new ReplayGuard(),
  });

  const health = (): Health => ({ status: 'ok', protocol: PROTOCOL, name });
  const manifest = (): Manifest => {
    const indexIds = new Set(
      [...handlers.values()].filter(({ kind }) => kind === 'index').map(({ id }) => id),
    );
    checkIndexesDeclared([...handlers.values(), ...activities.values()], indexIds);
    return {
      protocol: PROTOCOL,
      name,
      handlers: [...handlers.values()].map(specOf),
      ...(activities.size > 0 ? { activities: [...activities.values()].map(activitySpecOf) } : {}),
      ...(options.scope ? { scope: options.scope } : {}),
      sessions: true,
      indexVersions: true,
      batches: true,
    };
  };
  const app = new Hono()
    .get(PATHS.health, (c) => c.json(health()))
    .get(PATHS.manifest, signed, (c) => c.json(manifest()))
    .post(PATHS.invoke, signed, async (c) => {
      let request: InvocationRequest | ActivityInvocation | InvocationBatch;
      try {
        request = parseInvocation(c.get('body'), handlers, activities);
      } catch (error) {
        if (error instanceof BadRequest) return errorResponse(c, 400, error.message, error.missingHandlers);
        throw error;
      }
      const scope = { daemons, cut: c.req.raw.signal, observer };
      if ('batch' in request) return c.json(await invokeBatch(request, handlers, scope, keptIndexes));
      const call = keptIndexes.fill(request);
      if ('missing' in call) {
        return c.json({ protocol: PROTOCOL, missingIndexes: call.missing } satisfies MissingIndexes);
      }
      if (isActivityInvocation(call)) return c.json(await invokeActivities(call, activities));
      return c.json(await invoke(call, handlers, scope));
    });
  app.notFound((c) => errorResponse(c, 404, `no route for ${c.req.method} ${c.req.path}`));
  app.onError((error, c) => errorResponse(c, 500, `internal error: ${error.message}`));

  return {
    name,
    on,
    index: on.index,
    fetch: async (request, env) => app.fetch(request, env ?? {}),
    [OBSERVED]: (given) => {
      observer = given;
    },
    [IN_PROCESS]: {
      health,
      manifest,
      invoke: async (given) => {
        const request = checkCall(given, handlers, activities);
        if (isActivityInvocation(request)) return invokeActivities(request, activities);
        return invoke(request, handlers, { daemons });
      },
      invokeBatch: async (given) => invokeBatch(checkBatch(given, handlers), handlers, { daemons }),
    },
  };
}

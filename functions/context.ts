import type {
  AdmissionOperation,
  DiffItem,
  DueHandler,
  InvocationRequest,
  KubernetesEvent,
  KubernetesObject,
  ObjectToApply,
  Reason,
  ResolvedResource,
  UserInfo,
} from '../protocol/index.ts';
import { type Events, postingEvents } from './events.ts';
import type { Index } from './indexes.ts';
import type { Logger } from './logger.ts';

export type Fields = Record<string, unknown>;

/**
 * What a JSON merge patch of a `T` may hold: any key left out, `null` to remove one; arrays are
 * replaced whole, objects merged key by key.
 */
export type MergePatch<T> = {
  [Key in keyof T]?:
    | (T[Key] extends readonly unknown[] ? T[Key] : T[Key] extends object ? MergePatch<T[Key]> : T[Key])
    | null;
};

/**
 * A JSON merge patch for the object being handled, filled by the handler and applied by the gateway
 * after the call, whatever its outcome: `null` removes a key.
 */
export interface Patch<Spec extends object = Fields, Status extends object = Fields> {
  metadata?: {
    labels?: Record<string, string | null>;
    annotations?: Record<string, string | null>;
    [key: string]: unknown;
  };
  spec?: MergePatch<Spec>;
  status?: MergePatch<Status>;
  [key: string]: unknown;
}

/** What a handler receives, as Kopf's keyword arguments. `body` and everything under it is frozen. */
export interface HandlerContext<Spec extends object = Fields, Status extends object = Fields> {
  body: Readonly<KubernetesObject>;
  spec: Readonly<Spec>;
  meta: Readonly<KubernetesObject['metadata']>;
  status: Readonly<Status>;
  uid: string;
  name: string;
  /** Undefined for cluster-scoped objects. */
  namespace: string | undefined;
  labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
  resource: ResolvedResource;
  reason: Reason;
  /** 0 on the first attempt. */
  retry: number;
  /** When the first attempt started. */
  started: Date;
  /** Milliseconds since `started`. */
  runtime: number;
  /** The same for every attempt at the same change. */
  idempotencyKey: string;
  logger: Logger;
  /**
   * The gateway's trace of this call (W3C trace context), which it logs these handlers' lines with:
   * start your own spans as its children to follow a cause across both. Undefined when not traced.
   */
  trace: { traceparent: string; traceId: string; spanId: string } | undefined;
  /**
   * Creates and updates: the object's essence (or, with a `field`, the field's value) before and after
   * the change, and their difference. Undefined when the gateway sent none (e.g. `old` on a creation).
   */
  old: unknown;
  new: unknown;
  diff: readonly DiffItem[] | undefined;
  /** The `param` option the handler was registered with. */
  param: unknown;
  /**
   * Kept for this object between calls (in the gateway's memory, so lost when it restarts). Set or delete
   * keys; values must be JSON. Shared by the handlers of one call, in order.
   */
  memo: Record<string, unknown>;
  /** Fill it to have the gateway merge-patch the object, e.g. `patch.metadata = { labels: { a: 'b' } }`. */
  patch: Patch<Spec, Status>;
  events: Events;
  /**
   * Have the gateway create or update these objects (server-side apply), e.g. children made with
   * `adopt`. A namespaced object without a namespace goes to the handled object's namespace.
   */
  apply: (...objects: ObjectToApply[]) => void;
  /**
   * Runs sub-handlers, each with its own progress and retries (Kopf's `execute`): the ones that
   * succeeded in an earlier attempt are skipped. Returns when all have succeeded; throws a
   * TemporaryError while some are still to be retried, a PermanentError when one failed for good.
   */
  execute: (subhandlers: Record<string, Handler>) => Promise<void>;
  /** Event handlers: the type of the watch event. */
  event: 'ADDED' | 'MODIFIED' | 'DELETED' | undefined;
  /**
   * Daemons: aborted when the daemon is to stop, its `reason` saying why (a DaemonStopReason): return
   * soon after. `round-ended` means the gateway calls it again at once. Undefined for other handlers.
   */
  stopped: AbortSignal | undefined;
  /** Admission handlers: the operation under review; undefined for the others. */
  operation: AdmissionOperation | undefined;
  /** Admission handlers: a server-side dry run, which stores nothing: act on nothing outside. */
  dryRun: boolean;
  /** Admission handlers: who asked for the operation. */
  userInfo: Readonly<UserInfo> | undefined;
  /** Admission handlers: the subresource under review (`status`, `scale`), undefined for the object. */
  subresource: string | undefined;
  /** Admission handlers: append warnings for the client that made the request (kubectl prints them). */
  warnings: string[];
  /** The indexes named in the handler's `indexes` option, by id, complete (see `op.index`). */
  indexes: Readonly<Record<string, Index>>;
}

/**
 * A handler: what it returns (JSON) is its result, stored under `status.<id>`. `Spec` and `Status`
 * type what it reads and patches, `Result` what it must return; none is checked at run time.
 */
export type Handler<Spec extends object = Fields, Status extends object = Fields, Result = unknown> = (
  context: HandlerContext<Spec, Status>,
) => Result | Promise<Result>;

/** A daemon: its `stopped` signal is always there (see HandlerContext.stopped). */
export type DaemonHandler<Spec extends object = Fields, Status extends object = Fields, Result = unknown> = (
  context: HandlerContext<Spec, Status> & { stopped: AbortSignal },
) => Result | Promise<Result>;

/** The parts of a context that are not read from the request. */
export interface Extras {
  memo: Record<string, unknown>;
  patch: Patch;
  warnings: string[];
  events: KubernetesEvent[];
  apply: ObjectToApply[];
  param: unknown;
  execute: HandlerContext['execute'];
  stopped?: AbortSignal;
  indexes: Record<string, Index>;
}

const EMPTY = Object.freeze({});

function traceOf(traceparent: string | undefined): HandlerContext['trace'] {
  if (!traceparent) return undefined;
  const [, traceId = '', spanId = ''] = traceparent.split('-');
  return { traceparent, traceId, spanId };
}

export function handlerContext(
  request: InvocationRequest,
  due: DueHandler,
  logger: Logger,
  extras: Extras,
): HandlerContext {
  const { body } = request;
  const { metadata } = body;
  const started = new Date(due.started);
  return {
    body,
    spec: body.spec ?? EMPTY,
    meta: metadata,
    status: body.status ?? EMPTY,
    uid: metadata.uid,
    name: metadata.name,
    namespace: metadata.namespace,
    labels: metadata.labels ?? EMPTY,
    annotations: metadata.annotations ?? EMPTY,
    resource: request.resource,
    reason: request.reason,
    retry: due.retry,
    started,
    runtime: Date.now() - started.getTime(),
    idempotencyKey: due.idempotencyKey,
    logger,
    trace: traceOf(request.traceparent),
    old: due.old,
    new: due.new,
    diff: due.diff,
    param: extras.param,
    memo: extras.memo,
    patch: extras.patch,
    events: postingEvents(extras.events),
    apply: (...objects) => {
      extras.apply.push(...objects);
    },
    execute: extras.execute,
    event: request.event,
    stopped: extras.stopped,
    operation: request.admission?.operation,
    dryRun: request.admission?.dryRun ?? false,
    userInfo: request.admission?.userInfo,
    subresource: request.admission?.subresource,
    warnings: extras.warnings,
    indexes: extras.indexes,
  };
}

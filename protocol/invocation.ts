import type { ActivityKind } from './kinds.ts';
import type { Health, Manifest } from './manifest.ts';
import type { PROTOCOL } from './version.ts';

/** A resource as the gateway resolved it through API discovery. */
export interface ResolvedResource {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

export interface KubernetesObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    uid: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    deletionTimestamp?: string;
    [key: string]: unknown;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [key: string]: unknown;
}

/**
 * An object for the gateway to create or update: as a manifest, without what the API server assigns.
 * It has a `name`, or a `generateName` that the gateway completes with a suffix of its own that stays
 * the same for the same object, handler and position, so a retry updates it rather than making another.
 */
export interface ObjectToApply {
  apiVersion: string;
  kind: string;
  metadata: { name?: string; generateName?: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** Why handlers are called: the cause the gateway detected, a raw watch event, or a reconciliation. */

export type Reason =
  | 'create'
  | 'update'
  | 'delete'
  | 'resume'
  | 'event'
  | 'reconcile'
  | 'timer'
  | 'daemon'
  | 'admission'
  | 'index';

/**
 * Why a daemon is asked to stop (its `stopped` signal's reason): its object is being deleted, no longer
 * matches the daemon's filters, the gateway exits, or the call's round ends (the gateway calls it again
 * at once; see `roundEnded`). `cancelled` when the call was cut off without a word.
 */
export type DaemonStopReason =
  | 'resource-deleted'
  | 'filters-mismatch'
  | 'operator-exiting'
  | 'round-ended'
  | 'cancelled';

export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/** Who asked the apiserver for the operation under review, as the AdmissionReview says. */
export interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/**
 * Admission handlers: what the review is about. The object under review is the request's `body` (the
 * old object for a DELETE); for an UPDATE, each handler's `old`, `new` and `diff` compare the objects.
 */
export interface AdmissionRequest {
  /** The review's uid. */
  uid: string;
  operation: AdmissionOperation;
  /** The subresource under review (`status`, `scale`), absent for the main resource. */
  subresource?: string;
  /** A server-side dry run: nothing will be stored, so the handlers must not act outside the cluster. */
  dryRun: boolean;
  userInfo: UserInfo;
}

export type DiffOperation = 'add' | 'change' | 'remove';

/** One difference, as Kopf gives it: operation, path (keys from the top), old value, new value. */
export type DiffItem = [operation: DiffOperation, path: string[], old: unknown, new: unknown];

/** One handler that is due in this call, with the progress the gateway keeps for it. */
export interface DueHandler {
  id: string;
  /** 0 on the first attempt. */
  retry: number;
  /** ISO 8601 time of the first attempt. */
  started: string;
  /** The same for every attempt at the same change: lets handlers make external side effects idempotent. */
  idempotencyKey: string;
  /**
   * Creates and updates: the object's essence before and after (absent before a creation), and their
   * difference. For a handler with a `field`, all three are relative to that field.
   */
  old?: unknown;
  new?: unknown;
  diff?: DiffItem[];
  /** Sub-handlers this handler ran in earlier attempts (Kopf's `execute`), by their id. */
  subhandlers?: Record<string, { retry: number; done: boolean }>;
}

/** One call carries every handler due for one object in one processing cycle. */
export interface InvocationRequest {
  protocol: typeof PROTOCOL;
  reason: Reason;
  resource: ResolvedResource;
  body: KubernetesObject;
  handlers: DueHandler[];
  /** ISO 8601: the gateway stops waiting for the answer then. */
  deadline: string;
  /** What the handlers kept for this object in earlier calls (kept in the gateway's memory only). */
  memo?: Record<string, unknown>;
  /** Event handlers: the type of the raw watch event. */
  event?: 'ADDED' | 'MODIFIED' | 'DELETED';
  /** Admission handlers: the review. */
  admission?: AdmissionRequest;
  /**
   * Daemons: a call of its own asking the daemons of these handlers (by idempotency key), if they run
   * in the process that takes it, to stop for this reason; answered at once, `success` for each daemon
   * told, `skipped` for one not running there. Their own calls then end as the handlers return.
   */
  stop?: DaemonStopReason;
  /**
   * Daemons: a last call of a daemon asked to stop between two of its calls (or as its round ended):
   * its `stopped` signal is aborted with this reason from the start, so it finishes as it would have.
   */
  stopped?: DaemonStopReason;
  /**
   * The indexes the due handlers declare (`indexes` option), by id, complete; to a service that keeps
   * indexes (`Manifest.indexVersions`), only those whose version it may not have.
   */
  indexes?: Record<string, IndexContents>;
  /**
   * To a service that keeps indexes: the version of each index the due handlers declare, by id. An
   * index in `indexes` is that version's contents, to keep; one left out is the version kept before,
   * or, if the service does not have it, it answers `MissingIndexes` and is sent the contents.
   */
  indexVersions?: Record<string, string>;
  /**
   * The W3C trace context of the gateway's call (`00-<trace id>-<span id>-01`), also sent as the
   * `traceparent` header: here it is signed, and reaches a service in the gateway's process too.
   */
  traceparent?: string;
}

/**
 * An index as handlers receive it: each key with the values indexed under it, in the order their
 * objects were indexed. Keys with no values are left out.
 */
export type IndexContents = [key: string | null, values: unknown[]][];

/**
 * What an index handler returns for one object, as its outcome's `result`: the object's values by key
 * (its earlier ones replaced). No result keeps the values it had; an empty list removes them.
 */
export type IndexEntries = [key: string | null, value: unknown][];

/**
 * Several calls in one request, answered in one BatchResponse in the same order: the gateway sends
 * the calls of a service's indexes (reason `index`, one per object) this way; and, to a service that
 * declares `batches` (Manifest), the calls about objects it makes together, each one on its own.
 */
export interface InvocationBatch {
  protocol: typeof PROTOCOL;
  batch: InvocationRequest[];
}

/**
 * One answer per call, in order: a MissingIndexes only for a call that named an index by a version
 * the service does not have (the gateway then sends that call again alone, with the indexes whole).
 */
export interface BatchResponse {
  protocol: typeof PROTOCOL;
  batch: (InvocationResponse | MissingIndexes)[];
}

/**
 * Another object an event is about, as Kubernetes' `involvedObject` names it. `namespace` is absent for
 * a cluster-scoped object. Without a `uid`, the gateway takes the uid (and the namespace, when absent)
 * of the object of this apiVersion, kind and name it applied for the same call (`apply`), if any.
 */
export interface ObjectReference {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
}

export interface KubernetesEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  /** The object the event is about when it is not the object handled (Kopf's `kopf.event(objs, …)`). */
  about?: ObjectReference;
}

/** What a handler asks the gateway to do besides storing its result; applied whatever the outcome. */
export interface Effects {
  /** A JSON merge patch for the object (`status` included). */
  patch?: Record<string, unknown>;
  /** Kubernetes events to post about the object, or about the object each names in `about`. */
  events?: KubernetesEvent[];
  /** Reconcile handlers: call again after this many seconds even if nothing changes. */
  requeueAfter?: number;
  /**
   * Objects to create or update (server-side apply, as the gateway's field manager): children, for
   * instance, with owner references set. A namespaced one without a namespace goes to the handled
   * object's namespace.
   */
  apply?: ObjectToApply[];
  /** How the sub-handlers run in this call went (their effects are the handler's own). */
  subhandlers?: Record<string, Outcome>;
  /** Admission handlers: warnings for the client that made the request (kubectl prints them). */
  warnings?: string[];
  /** Daemons: the handler returned because its call's round ended; the gateway calls it again at once. */
  roundEnded?: boolean;
}

export type Outcome = Effects &
  (
    | /** `result`, when present, is stored under `status.<handler id>`. */ {
        status: 'success';
        result?: unknown;
      }
    | /** Retry after `delay` seconds. */ { status: 'temporary'; message: string; delay: number }
    | /** Do not retry this change. */ { status: 'permanent'; message: string }
    | /** A `when` callback of the service decided the handler does not apply. */ { status: 'skipped' }
    | /** Admission handlers: the request is refused, with this message and HTTP code. */ {
        status: 'denied';
        message: string;
        code: number;
      }
  );

export type LogLevel = 'debug' | 'info' | 'warning' | 'error';

export interface LogLine {
  level: LogLevel;
  message: string;
  /** The handler that logged it, when there was one. */
  handler?: string;
}

/**
 * A service's answer to a call naming versions of indexes it does not keep (any more): no handler
 * ran; the gateway sends the call again with the contents of these.
 */
export interface MissingIndexes {
  protocol: typeof PROTOCOL;
  missingIndexes: string[];
}

export interface InvocationResponse {
  protocol: typeof PROTOCOL;
  /** One outcome per handler of the request, by id. */
  outcomes: Record<string, Outcome>;
  logs: LogLine[];
  /** Keys to set in the object's memo; `null` removes a key. */
  memo?: Record<string, unknown>;
}

/** The body of every non-2xx answer from a function service. */
export interface ErrorResponse {
  protocol: typeof PROTOCOL;
  error: string;
  /**
   * With a 400: the handlers the call named that this service does not have, as when it was redeployed
   * without them while the gateway still knew the manifest before. The gateway reads it again.
   */
  missingHandlers?: string[];
}

/** One activity handler due in an activity's call. */
export interface DueActivity {
  id: string;
  /** 0 on the first attempt. */
  retry: number;
  /** ISO 8601 time of the first attempt. */
  started: string;
}

/**
 * A call of an activity's handlers (startup, cleanup, probe, login), told apart from a resource's
 * call by its reason: about no object, so with no resource and no body. Answered with an
 * InvocationResponse whose outcomes carry no effects.
 */
export interface ActivityInvocation {
  protocol: typeof PROTOCOL;
  reason: ActivityKind;
  handlers: DueActivity[];
  /** ISO 8601: the gateway stops waiting for the answer then. */
  deadline: string;
  /** What the service's activities kept in earlier calls (the operator's memo, in the gateway's memory). */
  memo?: Record<string, unknown>;
  /** Probes: the indexes the due handlers declare, by id, as in InvocationRequest. */
  indexes?: Record<string, IndexContents>;
  /** Probes: their versions, as in InvocationRequest. */
  indexVersions?: Record<string, string>;
  /** As in InvocationRequest: the gateway's trace of the call, also sent as the `traceparent` header. */
  traceparent?: string;
}

/**
 * What a login handler returns: how the gateway reaches the Kubernetes API. PEM texts, not base64;
 * `expiration` (ISO 8601) has the gateway log in again before then.
 */
export interface Credentials {
  /** The API server's URL, e.g. https://10.0.0.1:6443. */
  server: string;
  /** A bearer token. */
  token?: string;
  /** A client certificate and its private key (PEM), together. */
  certificateData?: string;
  keyData?: string;
  /** The CA that signed the server's certificate (PEM); the system's roots otherwise. */
  caData?: string;
  /** Skip verifying the server's certificate (a test cluster only). */
  insecure?: boolean;
  expiration?: string;
}

/** An operator's calls for a gateway in its own process (see IN_PROCESS). */
export interface InProcessCalls {
  health(): Health;
  manifest(): Manifest;
  /** The request is the callee's from then on (it may freeze it). */
  invoke(request: InvocationRequest | ActivityInvocation): Promise<InvocationResponse>;
  /** A batch of calls, answered in order. */
  invokeBatch(request: InvocationBatch): Promise<BatchResponse>;
}

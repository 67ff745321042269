import type { AdmissionOperation } from './invocation.ts';
import type { ActivityKind, HandlerKind } from './kinds.ts';
import type { RefusalReason } from './trust.ts';
import type { PROTOCOL } from './version.ts';

/**
 * The resources a handler is for, which the gateway finds through API discovery: one by name, or
 * several by category (or `*`, every one); `group` and `version` narrow it down.
 */
export type ResourceSelector = ResourceByName | ResourceByCategory;

/**
 * Names a resource the way kubectl accepts it: `name` is a plural, singular, kind or short name,
 * or `plural.group`. `*` (Kopf's EVERYTHING) is every resource that can be listed and watched, in
 * the group and version given if any, Events excepted (name them to handle them).
 */
export interface ResourceByName {
  group?: string;
  version?: string;
  name: string;
  category?: never;
}

/**
 * Every resource in a category (`kubectl get <category>`: `all`, or one a CRD lists in
 * `spec.names.categories`) that can be listed and watched, each in its preferred version unless
 * `version` says; the resources that join it later too.
 */
export interface ResourceByCategory {
  group?: string;
  version?: string;
  category: string;
  name?: never;
}

/** A label or annotation condition: this exact value, or only presence or absence. */
export type MetaMatch = string | { present: true } | { absent: true };

/** A condition on a field: equal to this JSON value, or only presence or absence. */
export type ValueMatch = { equals: unknown } | { present: true } | { absent: true };

/** Checked by the gateway, so an object that does not match costs no call (except `when`). */
export interface HandlerFilters {
  labels?: Record<string, MetaMatch>;
  annotations?: Record<string, MetaMatch>;
  /** Dotted path the handler is about: updates elsewhere do not concern it; old/new/diff are relative to it. */
  field?: string;
  /** The field's current value. */
  value?: ValueMatch;
  /** Updates only: the field's value before, and after, the change. */
  old?: ValueMatch;
  new?: ValueMatch;
  /** The service also decides in code (a `when` callback) and may answer `skipped`. */
  when?: boolean;
  /**
   * The namespaces the object must be in (names, globs, negations): set by the gateway from the
   * service's scope, whatever the service declared.
   */
  namespaces?: string[];
}

export interface HandlerOptions {
  /** Attempts before the handler is given up (as a permanent failure). */
  retries?: number;
  /**
   * Seconds since the first attempt before the handler is given up; for admission handlers, how long
   * the apiserver waits for the webhook (1 to 30, 10 by default).
   */
  timeout?: number;
  /** Seconds before retrying after an unexpected error (the service applies it; default 60). */
  backoff?: number;
  /** Delete handlers: not worth holding the object for, so no finalizer is added for it. */
  optional?: boolean;
  /** Resume handlers: also for objects already being deleted. */
  deleted?: boolean;
  /** Timers: seconds between calls (required). */
  interval?: number;
  /** Timers: called only once the object has not changed for this many seconds. */
  idle?: number;
  /** Timers and daemons: seconds from the first sight of a matching object to the first call. */
  initialDelay?: number;
  /** Timers: the cadence is kept from the first call, whatever each call takes (ticks missed are skipped). */
  sharp?: boolean;
  /**
   * Daemons: seconds a daemon asked to stop has to return before its call is cut off; without it,
   * the gateway waits until the call's round ends.
   */
  cancellationTimeout?: number;
  /** Admission handlers: the operations reviewed; CREATE, UPDATE and DELETE by default. */
  operations?: AdmissionOperation[];
  /** Admission handlers: the subresource reviewed (`status`, `scale`, `*` for all); the object itself by default. */
  subresource?: string;
  /** Admission handlers: the webhook stays configured when the gateway exits. */
  persistent?: boolean;
  /** Admission handlers: acting outside the object (so dry runs must be told apart); false by default. */
  sideEffects?: boolean;
  /** Admission handlers: requests pass when the webhook cannot answer (failurePolicy Ignore); false by default. */
  ignoreFailures?: boolean;
  /**
   * The service's indexes (by id) the handler receives. After a start, its calls wait until each is
   * complete: every object listed, indexed.
   */
  indexes?: string[];
}

/** What a declarative index reads of an object: a field (a dotted path), a label or an annotation. */
export type ObjectPart = { field: string } | { label: string } | { annotation: string };

/** An index the gateway computes itself, with no call: each object's key and value read from it. */
export interface IndexDefinition {
  /**
   * The parts whose values, joined with "/", are the object's key; an object that lacks one is not
   * indexed. Without a key, every object is indexed under the key null.
   */
  key?: ObjectPart[];
  /**
   * One part's value, or a list of the parts' values (null where one is missing). Without a value, the
   * object's name, as "namespace/name" when it has a namespace.
   */
  value?: ObjectPart | ObjectPart[];
}

export interface HandlerSpec {
  /** Unique within the service; the result is stored under `status.<id>`. */
  id: string;
  /**
   * The causes a handler is declared for, as in Kopf, plus `reconcile` (level-based: called with the
   * current state after any change). Gateways skip kinds they do not know, with a warning.
   */
  kind: HandlerKind;
  resource: ResourceSelector;
  filters?: HandlerFilters;
  options?: HandlerOptions;
  /** Index handlers: the gateway computes the index from this definition, without calling the service. */
  index?: IndexDefinition;
}

/** The options an activity takes (see ACTIVITY_KINDS for which): as a handler's, from its first attempt. */
export type ActivityOptions = Pick<HandlerOptions, 'retries' | 'timeout' | 'backoff' | 'indexes'>;

/** An operator activity: a handler about no resource, called at a moment of the gateway's life. */
export interface ActivitySpec {
  /** Unique among the service's activities. */
  id: string;
  /** Gateways skip kinds they do not know, with a warning. */
  kind: ActivityKind;
  options?: ActivityOptions;
}

/**
 * What a function service may reach through the gateway, each resource as kubectl names it with its
 * group (`kopfexamples.kopf.dev`, `deployments.apps`; `configmaps` for the core group). A service
 * declares what it needs; the gateway's operator pins what it grants, and a service is never served
 * beyond its pin.
 */
export interface ServiceScope {
  /** What its handlers may watch, be sent and patch (`*`: every resource). */
  resources: string[];
  /** What its admission handlers may review; none when absent. */
  admission?: string[];
  /** The kinds its `apply` may create or update: children of the handled object, in its namespace. */
  children?: string[];
  /** Narrows the namespaces its handlers see (names, globs `team-*`, negations `!kube-*`). */
  namespaces?: string[];
  /** The ServiceAccount the pods of its children may run as; `default` when absent. */
  serviceAccount?: string;
  /** The Secrets (by name, in the handled object's namespace) the pods of its children may use; none when absent. */
  secrets?: string[];
  /**
   * `<namespace>/<name>`: the ServiceAccount a gateway run with --impersonate writes its children and
   * events as (default: the service's name, in its FunctionService's namespace or the gateway's).
   */
  impersonate?: string;
}

/** What a function service publishes at `PATHS.manifest`: everything the gateway needs to decide what to watch. */
export interface Manifest {
  protocol: typeof PROTOCOL;
  /** The service's name; also the audience every signed request to it must carry. */
  name: string;
  handlers: HandlerSpec[];
  /** Its activities (startup, cleanup, probe, login); absent when it has none. */
  activities?: ActivitySpec[];
  /** What it needs (the deployment's RBAC and the gateway's pin are made from it); absent when undeclared. */
  scope?: ServiceScope;
  /**
   * It takes calls in a session (trust.ts's SessionClaims) where it checks the gateway's public keys:
   * the gateway then proves itself with its Ed25519 key once per session, and signs each call HS256
   * with the session's key. Absent: every call carries a signature of the gateway's own.
   */
  sessions?: boolean;
  /**
   * It keeps the indexes it is sent, by version: a call may then name an index's version without its
   * contents (InvocationRequest.indexVersions), which saves sending and parsing an index whole with
   * every call while it does not change.
   */
  indexVersions?: boolean;
  /**
   * It takes any calls about objects in a batch (InvocationBatch), admission reviews' included and
   * daemons' aside, and runs a batch's calls at once: the gateway may then send the calls it makes together in
   * one request. Absent: it is sent batches of index calls only.
   */
  batches?: boolean;
}

/**
 * What a function service tells whoever serves it in its own process (`causeway serve`'s metrics):
 * set through the operator's OBSERVED.
 */
export interface ServiceObserver {
  /** A request refused before any handler ran: unsigned, forged, replayed, too large… */
  refused(reason: RefusalReason): void;
  /** A handler ran in a call: its id, the call's reason, its outcome, and how long it took. */
  handled(handler: string, cause: string, outcome: string, ms: number): void;
}

/** The unsigned health answer; it names the service so a gateway knows which audience to sign for. */
export interface Health {
  status: 'ok';
  protocol: typeof PROTOCOL;
  name: string;
}

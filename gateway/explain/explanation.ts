/**
 * What `causeway explain -o json` prints: one object as the gateway sees it, and each handler of its
 * resource. The shape is versioned by `apiVersion`; fields are only added within a version. Documented
 * in docs/observability.md ("Explaining an object").
 */
import type { HandlerKind } from '../../protocol/index.ts';
import type { FilterMiss } from '../reactor/filters.ts';
import type { Cause } from '../reactor/model.ts';
import type { StateLocation } from '../state/storage.ts';

export const EXPLANATION_API_VERSION = 'causeway.dev/v1';

export interface Explanation {
  apiVersion: typeof EXPLANATION_API_VERSION;
  kind: 'Explanation';
  object: {
    /** `plural.group`, as kubectl names it (`configmaps` for the core group). */
    resource: string;
    namespace?: string;
    name: string;
    uid: string;
    resourceVersion: string;
    /** It has a deletionTimestamp: only delete handlers (and resume ones with `deleted`) run now. */
    deleting: boolean;
  };
  /** What the gateway would handle now: `none` when the last change is handled and nothing changed since. */
  cause: Cause['reason'];
  /** For an update: the fields changed since the state last handled, as dotted paths. */
  changed: string[];
  state: {
    /** Where the gateway writes the object's state (`--state-in`; it reads both places). */
    in: StateLocation;
    /** A handled state is recorded on the object: it is not new to the gateway. */
    handled: boolean;
  };
  finalizer: {
    name: string;
    /** On the object now. */
    present: boolean;
    /** A handler needs it (a delete handler not optional, or a daemon, that matches the object). */
    needed: boolean;
  };
  /** Which replica handles the object, when gateways of this identity peer through Leases. */
  owner?: {
    /** The replica's id; null when none runs (frozen, or the replicas disagree on sharding). */
    replica: string | null;
    /** The objects are shared among the active replicas (`--sharding`), rather than handled by the leader. */
    sharding: boolean;
    /** The ids of the replicas alive now. */
    members: string[];
  };
  handlers: ExplainedHandler[];
}

/**
 * One word for where a handler stands with the object: `due` (called at the next cycle), `retrying`
 * (failed temporarily, waits for its next attempt), `succeeded`, `failed` (permanently, or out of
 * retries or time), `skipped` (its `when` callback said no), `filtered` (its filters exclude the
 * object), `idle` (the current cause does not call it: done with the last change, or another kind).
 */
export type HandlerStatus = 'due' | 'retrying' | 'succeeded' | 'failed' | 'skipped' | 'filtered' | 'idle';

export interface ExplainedHandler {
  id: string;
  kind: HandlerKind;
  /** The function service that declares it. */
  service: string;
  /**
   * `matched`: its filters pass; `filtered`: one fails (`filter`, `reason`); `callback`: they pass but
   * a `when` callback decides too, in the service, which cannot be evaluated offline.
   */
  match: 'matched' | 'filtered' | 'callback';
  filter?: FilterMiss['filter'];
  /** Why it is filtered out, or why the match is the callback's to decide. */
  reason?: string;
  status: HandlerStatus;
  /** The current cause calls it (whether now or after a delay). */
  concerned: boolean;
  /** It would be called at the next cycle. */
  due: boolean;
  /** Its progress on the current change, as stored on the object. */
  progress?: {
    /** Attempts that failed temporarily. */
    retries: number;
    started: string;
    /** Not called again before then. */
    nextAttempt?: string;
    message?: string;
  };
  /** The gateway's last event about it (HandlerFailed, HandlerRetrying): kept after its progress is not. */
  lastEvent?: { reason: string; message: string; time: string };
  /** Where its result lands (`status.<id>`); absent for kinds whose results are not stored. */
  resultKey?: string;
  /** A result is there now. */
  hasResult: boolean;
  /** It alone would keep the finalizer on the object. */
  holdsFinalizer: boolean;
}

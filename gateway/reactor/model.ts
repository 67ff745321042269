/**
 * The reactor's vocabulary: what happened to an object (a cause), which handlers it may concern
 * (candidates) and which are due now (due calls), everything served for one resource, and what a
 * cycle tells the queue. The modules that build or read these import them from here.
 */
import type { DiffItem, HandlerSpec, KubernetesObject, Reason } from '../../protocol/index.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import type { DiscoveredResource } from '../kube/discovery.ts';
import type { Essence } from '../state/essence.ts';
import type { Progress, StateStorage } from '../state/storage.ts';

export interface Cause {
  reason: Reason | 'none';
  /** The essence last handled (absent before the first creation). */
  old?: Essence;
  new: Essence;
  diff: DiffItem[];
  /** `new`, serialised as it is stored. */
  essence: string;
  /** The first time this gateway process sees the object (resume handlers may be due). */
  firstSight: boolean;
  /** The object existed before the gateway started watching: resume handlers join its create or update. */
  existedAtStart: boolean;
}

/**
 * A service as the reactor knows it: a function service, or its name alone (explain, tests). Its
 * name is what its state on objects is kept by: a service redeployed keeps its state.
 */
export type Named = string | { readonly name: string };

export function nameOf(service: Named): string {
  return typeof service === 'string' ? service : service.name;
}

/** A handler of some service (`S`: the function service, or anything a test puts there). */
export interface Candidate<S> {
  service: S;
  spec: HandlerSpec;
}

/** A handler to call now, with its progress and what it sees of the change. */
export interface DueCall<S> extends Candidate<S> {
  progress: Progress;
  old?: unknown;
  new?: unknown;
  diff?: DiffItem[];
  /** Once called: the call's idempotency key and trace, which its log lines carry. */
  called?: { idempotencyKey: string; traceId?: string };
}

export interface Binding<S = FunctionService> {
  service: S;
  handlers: HandlerSpec[];
}

/** Everything the gateway serves for one resource. `storage` may move to annotations at run time. */
export interface ServedResource<S = FunctionService> {
  resource: DiscoveredResource;
  storage: StateStorage;
  bindings: Binding<S>[];
}

/** Whether the cause is handled: `untouched` when no handler was concerned (so no record is written). */
export type CauseState = 'untouched' | 'in progress' | 'finished';

/** What a cycle tells the queue. */
export interface CycleOutcome {
  /** resourceVersion of the object after the cycle's write, if it wrote. */
  written?: string;
  /** Run again after this long with the newest state, even if nothing changes. */
  retryAfterMs?: number;
  /** Run again with the newest state once this resolves (a function service that was down is back). */
  wakeOn?: Promise<void>;
}

export function candidatesOf<S>(served: ServedResource<S>): Candidate<S>[] {
  return served.bindings.flatMap(({ service, handlers }) => handlers.map((spec) => ({ service, spec })));
}

/** `namespace/name`, or `name` for a cluster-scoped object: how logs name it. */
export function objectName(object: KubernetesObject): string {
  const { namespace, name } = object.metadata;
  return namespace ? `${namespace}/${name}` : name;
}

/**
 * The one table of handler kinds: which causes call each kind, which filters and options it takes,
 * and whether it takes a field as its own argument. The SDK's registry, the gateway's planner, the
 * response validation and the testing kit derive from it, and a test holds the JSON Schemas to it:
 * adding a kind is one entry here plus its behaviour.
 */
import type { ActivityInvocation, AdmissionOperation, InvocationRequest, Reason } from './invocation.ts';
import type { ActivityOptions, HandlerFilters, HandlerOptions } from './manifest.ts';

export interface KindRule {
  /** The causes that call a handler of this kind. */
  reasons: readonly Reason[];
  /** Causes that call it only when the handler sets this option to true. */
  reasonsByOption?: Partial<Record<Reason, keyof HandlerOptions>>;
  /**
   * Causes that call it too for an object that existed before the gateway started watching, in the
   * first cycles the gateway runs for it (Kopf mixes resume handlers into their create/update cycles).
   */
  reasonsAtStart?: readonly Reason[];
  /** What a handler of the kind may declare (not `namespaces`: the gateway's, from the service's scope). */
  filters: readonly Exclude<keyof HandlerFilters, 'namespaces'>[];
  options: readonly (keyof HandlerOptions)[];
  /** Takes the field as an argument of its own before the options, as Kopf's `on.field`. */
  argument?: 'field';
}

/** The operations an admission handler may review (its `operations` option). */
export const ADMISSION_OPERATIONS = [
  'CREATE',
  'UPDATE',
  'DELETE',
  'CONNECT',
] as const satisfies AdmissionOperation[];

const MATCHING = ['labels', 'annotations', 'value', 'when'] as const;
/** Every handler but an index's may receive the service's indexes (see resource/indexes.ts). */
const READING = 'indexes';
const CHANGES = ['old', 'new'] as const;
const RETRYING = ['retries', 'timeout', 'backoff'] as const;
const ADMISSION = [
  'operations',
  'subresource',
  'persistent',
  'sideEffects',
  'ignoreFailures',
  'timeout',
] as const;

/** Event handlers take no retry options: their errors are never retried, as in Kopf. */
export const HANDLER_KINDS = {
  create: { reasons: ['create'], filters: [...MATCHING, 'field'], options: [...RETRYING, READING] },
  update: {
    reasons: ['update'],
    filters: [...MATCHING, 'field', ...CHANGES],
    options: [...RETRYING, READING],
  },
  delete: {
    reasons: ['delete'],
    filters: [...MATCHING, 'field'],
    options: [...RETRYING, 'optional', READING],
  },
  // With `deleted`, objects first seen already being deleted are resumed too, in their deletion's call;
  // objects changed or created while the gateway was down, in their update's or creation's.
  resume: {
    reasons: ['resume'],
    reasonsByOption: { delete: 'deleted' },
    reasonsAtStart: ['create', 'update'],
    filters: [...MATCHING, 'field'],
    options: [...RETRYING, 'deleted', READING],
  },
  // Kopf's on.field: the field changed, appearing included.
  field: {
    reasons: ['create', 'update'],
    filters: [...MATCHING, ...CHANGES],
    options: [...RETRYING, READING],
    argument: 'field',
  },
  event: { reasons: ['event'], filters: [...MATCHING, 'field'], options: [READING] },
  reconcile: { reasons: ['reconcile'], filters: [...MATCHING, 'field'], options: [...RETRYING, READING] },
  // Scheduled by the gateway per matching object while it exists (resource/timers.ts).
  timer: {
    reasons: ['timer'],
    filters: [...MATCHING, 'field'],
    options: [...RETRYING, 'interval', 'idle', 'initialDelay', 'sharp', READING],
  },
  // One long call per matching object while it exists and matches (resource/daemons.ts).
  daemon: {
    reasons: ['daemon'],
    filters: [...MATCHING, 'field'],
    options: [...RETRYING, 'initialDelay', 'cancellationTimeout', READING],
  },
  // Admission: answered while the apiserver waits, so never retried; a failure denies the request.
  validate: { reasons: ['admission'], filters: [...MATCHING, 'field'], options: [...ADMISSION, READING] },
  mutate: { reasons: ['admission'], filters: [...MATCHING, 'field'], options: [...ADMISSION, READING] },
  // Kopf's in-memory indexes: kept by the gateway per key, computed by it (a declarative `index`
  // definition) or by the service in batches of objects (resource/indexes.ts).
  index: { reasons: ['index'], filters: [...MATCHING, 'field'], options: RETRYING },
} as const satisfies Record<string, KindRule>;

export type HandlerKind = keyof typeof HANDLER_KINDS;

export const HANDLER_KIND_NAMES = Object.keys(HANDLER_KINDS) as HandlerKind[];

export function isHandlerKind(value: unknown): value is HandlerKind {
  return typeof value === 'string' && Object.hasOwn(HANDLER_KINDS, value);
}

/** Whether `reason` ever calls a handler of this kind (with its option, or at the start, where needed). */
export function callableFor(kind: HandlerKind, reason: Reason): boolean {
  const rule: KindRule = HANDLER_KINDS[kind];
  return (
    rule.reasons.includes(reason) ||
    rule.reasonsByOption?.[reason] !== undefined ||
    calledAtStart(kind, reason)
  );
}

/** Whether `reason` calls a handler of this kind for an object that existed before the gateway started. */
export function calledAtStart(kind: HandlerKind, reason: Reason): boolean {
  const rule: KindRule = HANDLER_KINDS[kind];
  return rule.reasonsAtStart?.includes(reason) ?? false;
}

/** Whether `reason` calls this handler, given its options. */
export function calledFor(handler: { kind: HandlerKind; options?: HandlerOptions }, reason: Reason): boolean {
  const rule: KindRule = HANDLER_KINDS[handler.kind];
  if (rule.reasons.includes(reason)) return true;
  const option = rule.reasonsByOption?.[reason];
  return option !== undefined && handler.options?.[option] === true;
}

/** Whether the kind answers admission reviews (validate, mutate): called while a request waits. */
export function isAdmissionKind(kind: HandlerKind): boolean {
  return (HANDLER_KINDS[kind].reasons as readonly Reason[]).includes('admission');
}

const kindsByReason = new Map<Reason, readonly HandlerKind[]>();

/** The kinds `reason` always calls; found once per reason, as each cause of each object asks. */
export function kindsFor(reason: Reason): readonly HandlerKind[] {
  let kinds = kindsByReason.get(reason);
  if (kinds === undefined) {
    kinds = Object.freeze(
      HANDLER_KIND_NAMES.filter((kind) =>
        (HANDLER_KINDS[kind].reasons as readonly Reason[]).includes(reason),
      ),
    );
    kindsByReason.set(reason, kinds);
  }
  return kinds;
}

/**
 * Operator activities (Kopf's on.startup, on.cleanup, on.probe and on.login): handlers about no
 * resource, called by the gateway at moments of its own life. The manifest lists them apart
 * (`activities`), and each call has the activity as its reason and no object. Probes are asked once
 * per request to the liveness endpoint, so they are never retried and take only a timeout.
 */
export const ACTIVITY_KINDS = {
  startup: { options: RETRYING },
  cleanup: { options: RETRYING },
  probe: { options: ['timeout', READING] },
  login: { options: RETRYING },
} as const satisfies Record<string, { options: readonly (keyof ActivityOptions)[] }>;

export type ActivityKind = keyof typeof ACTIVITY_KINDS;

export const ACTIVITY_KIND_NAMES = Object.keys(ACTIVITY_KINDS) as ActivityKind[];

export function isActivityKind(value: unknown): value is ActivityKind {
  return typeof value === 'string' && Object.hasOwn(ACTIVITY_KINDS, value);
}

/** Whether a call is an activity's (about no object) rather than a resource's. */
export function isActivityInvocation(
  request: InvocationRequest | ActivityInvocation,
): request is ActivityInvocation {
  return isActivityKind(request.reason);
}

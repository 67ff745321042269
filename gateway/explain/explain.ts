/**
 * `causeway explain`'s judgement, pure: from an object, the state stored on it and its resource's
 * handlers, what the gateway would do with it now and why, with the gateway's own code (detectCause,
 * planCause, filterMiss, the finalizer rule). Reading the cluster and the services is cluster.ts's.
 */
import type {
  HandlerKind,
  HandlerSpec,
  KubernetesObject,
  MetaMatch,
  ValueMatch,
} from '../../protocol/index.ts';
import { valueAt } from '../../protocol/json.ts';
import { withoutOwnNamespace } from '../dispatch/scope.ts';
import type { Identity } from '../identity.ts';
import { detectCause } from '../reactor/causes.ts';
import { type FilterMiss, filterMiss } from '../reactor/filters.ts';
import { hasFinalizer, needsFinalizer } from '../reactor/finalizers.ts';
import type { Candidate } from '../reactor/model.ts';
import { progressOf } from '../reactor/outcomes.ts';
import { describePath, resultAt, resultPath } from '../reactor/places.ts';
import { planCause } from '../reactor/plan.ts';
import { type StateLocation, StateStorage } from '../state/storage.ts';
import {
  EXPLANATION_API_VERSION,
  type ExplainedHandler,
  type Explanation,
  type HandlerStatus,
} from './explanation.ts';

/** An event the gateway posted about the object, as explain reads it. */
export interface ObjectEvent {
  reason: string;
  message: string;
  /** ISO 8601. */
  time: string;
}

export interface ExplainInput {
  object: KubernetesObject;
  /** `plural.group` of the object's resource. */
  resource: string;
  /** The handlers served on its resource, each with its service's name. */
  handlers: readonly Candidate<string>[];
  identity: Identity;
  /** Where the gateway writes the state of the resource's objects. */
  stateIn: StateLocation;
  /** The annotation prefix of a Kopf operator whose state is adopted (`--adopt-kopf-state`). */
  adoptKopf?: string;
  /** The gateway's events about the object. */
  events: readonly ObjectEvent[];
  /** The namespace the gateway runs in, which it serves to no function service (its --serve-own-namespace not given). */
  ownNamespace?: string;
  owner?: Explanation['owner'];
  now: Date;
}

/** The reasons of the events the gateway posts about a handler's attempts (reactor/outcomes.ts). */
const HANDLER_EVENTS = new Set(['HandlerFailed', 'HandlerRetrying']);

/** The kinds whose results the gateway stores under `status.<id>` (delete handlers': the object is going). */
const KINDS_WITH_RESULTS: ReadonlySet<HandlerKind> = new Set([
  'create',
  'update',
  'resume',
  'field',
  'reconcile',
  'timer',
]);

export function explain(input: ExplainInput): Explanation {
  const { object, identity, now } = input;
  const handlers = narrowedByGateway(input.handlers, input.ownNamespace);
  const storage = new StateStorage(input.stateIn, identity, input.adoptKopf);
  const stored = storage.read(
    object,
    handlers.map(({ service, spec }) => ({ service, id: spec.id })),
  );
  // Offline, the object is one the running gateway has seen already: no resumption is due for it.
  const cause = detectCause(object, stored, {
    annotationPrefix: identity.annotationPrefix,
    firstSight: false,
    ...(input.adoptKopf ? { adoptedPrefix: input.adoptKopf } : {}),
  });
  const plan = planCause(object, cause, handlers, stored.progress, now);
  const before = cause.reason === 'update' ? cause.old : undefined;
  const explained = handlers.map((candidate): ExplainedHandler => {
    const { spec, service } = candidate;
    const miss = filterMiss(object, spec.filters, before);
    const record = stored.progress?.[progressOf(candidate)];
    const concerned = plan.concerned.includes(candidate);
    const due = plan.due.some((call) => call.spec === spec);
    const givenUp = plan.givenUp.some((call) => call.spec === spec);
    const lastEvent = latestEventOf(spec.id, input.events);
    const path = resultPath(handlers, service, spec.id, identity.statusKey);
    const resultKey = KINDS_WITH_RESULTS.has(spec.kind) ? describePath(path) : undefined;
    return {
      id: spec.id,
      kind: spec.kind,
      service,
      ...matchOf(object, spec, miss, input.ownNamespace),
      status: statusOf({ filtered: miss !== undefined, record, concerned, due, givenUp }),
      concerned,
      due,
      ...(record
        ? {
            progress: {
              retries: record.retries,
              started: record.started,
              ...(record.delayedUntil ? { nextAttempt: record.delayedUntil } : {}),
              ...(record.message === undefined ? {} : { message: record.message }),
            },
          }
        : {}),
      ...(lastEvent ? { lastEvent } : {}),
      ...(resultKey ? { resultKey } : {}),
      hasResult: resultAt(object.status, path) !== undefined && resultKey !== undefined,
      holdsFinalizer: needsFinalizer(object, [candidate]),
    };
  });
  const { namespace, name, uid, resourceVersion, deletionTimestamp } = object.metadata;
  return {
    apiVersion: EXPLANATION_API_VERSION,
    kind: 'Explanation',
    object: {
      resource: input.resource,
      ...(namespace ? { namespace } : {}),
      name,
      uid: uid ?? '',
      resourceVersion: resourceVersion ?? '',
      deleting: Boolean(deletionTimestamp),
    },
    cause: cause.reason,
    changed: cause.reason === 'update' ? cause.diff.map(([, path]) => path.join('.')) : [],
    state: { in: storage.location, handled: stored.essence !== undefined },
    finalizer: {
      name: identity.finalizer,
      present: hasFinalizer(object, identity.finalizer),
      needed: needsFinalizer(object, handlers),
    },
    ...(input.owner ? { owner: input.owner } : {}),
    handlers: explained,
  };
}

/** The handlers as the gateway narrows them: none sees the namespace it runs in (dispatch/scope.ts's narrowedToScope). */
function narrowedByGateway(
  handlers: readonly Candidate<string>[],
  own: string | undefined,
): readonly Candidate<string>[] {
  if (own === undefined) return handlers;
  return handlers.map((candidate) => {
    const filters = candidate.spec.filters ?? {};
    const namespaces = withoutOwnNamespace(filters.namespaces, own);
    return { ...candidate, spec: { ...candidate.spec, filters: { ...filters, namespaces } } };
  });
}

function statusOf(handler: {
  filtered: boolean;
  record: { success?: true; failure?: true; message?: string } | undefined;
  concerned: boolean;
  due: boolean;
  givenUp: boolean;
}): HandlerStatus {
  const { record } = handler;
  if (handler.filtered) return 'filtered';
  if (record?.failure || handler.givenUp) return 'failed';
  if (record?.success) return record.message === 'skipped' ? 'skipped' : 'succeeded';
  if (handler.due) return 'due';
  return handler.concerned ? 'retrying' : 'idle';
}

function matchOf(
  object: KubernetesObject,
  spec: HandlerSpec,
  miss: FilterMiss | undefined,
  ownNamespace: string | undefined,
): Pick<ExplainedHandler, 'match' | 'filter' | 'reason'> {
  if (miss?.filter === 'namespaces' && object.metadata.namespace === ownNamespace) {
    const reason = `namespace ${ownNamespace} is the gateway's own, which it serves to no function service (unless run with --serve-own-namespace)`;
    return { match: 'filtered', filter: 'namespaces', reason };
  }
  if (miss) return { match: 'filtered', filter: miss.filter, reason: missReason(object, spec, miss) };
  if (spec.filters?.when)
    return {
      match: 'callback',
      reason: 'a when callback decides too, in the function service: it cannot be evaluated offline',
    };
  return { match: 'matched' };
}

/** The failed filter in words: what the handler wants, and what the object has. */
function missReason(object: KubernetesObject, spec: HandlerSpec, miss: FilterMiss): string {
  const filters = spec.filters ?? {};
  switch (miss.filter) {
    case 'namespaces':
      return `namespace ${object.metadata.namespace} is not among ${(filters.namespaces ?? []).join(', ')} (its service's scope)`;
    case 'labels':
    case 'annotations': {
      const singular = miss.filter === 'labels' ? 'label' : 'annotation';
      const wanted = filters[miss.filter]?.[miss.key] as MetaMatch;
      const has = object.metadata[miss.filter]?.[miss.key];
      return `${singular} ${miss.key}: wants ${wantedText(wanted)}, has ${has === undefined ? 'none' : JSON.stringify(has)}`;
    }
    case 'field': {
      // Not its value: a field may hold a secret (a Secret's data), and the report is printed.
      const has = valueAt(object, miss.field) === undefined ? 'none' : 'another value (not shown)';
      return `field ${miss.field}: wants ${wantedText(filters.value as ValueMatch)}, has ${has}`;
    }
  }
}

function wantedText(match: MetaMatch | ValueMatch): string {
  if (typeof match === 'string') return JSON.stringify(match);
  if ('equals' in match) return JSON.stringify(match.equals);
  return 'present' in match ? 'it present' : 'it absent';
}

/** The newest of the gateway's events about handler `id` (their messages start with its id). */
function latestEventOf(id: string, events: readonly ObjectEvent[]): ObjectEvent | undefined {
  let latest: ObjectEvent | undefined;
  for (const event of events) {
    const about = event.message.startsWith(`${id} `) || event.message.startsWith(`${id}:`);
    if (!about || !HANDLER_EVENTS.has(event.reason)) continue;
    if (!latest || event.time >= latest.time) latest = event;
  }
  return latest;
}

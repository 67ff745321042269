/**
 * One processing cycle for one object: detect the cause, plan which handlers are due, call each
 * function service once with all of its due handlers, and write back results, progress, patches and
 * the handled-record in the fewest PATCHes, results first.
 */
import type { HandlerSpec, KubernetesObject, Reason } from '../../protocol/index.ts';
import { callServices } from '../dispatch/calls.ts';
import type { FunctionService } from '../dispatch/function-service.ts';
import type { Identity } from '../identity.ts';
import { applyObject } from '../kube/apply.ts';
import type { KubeClient } from '../kube/client.ts';
import type { DiscoveredResource, DiscoveryCache } from '../kube/discovery.ts';
import { ApiError } from '../kube/errors.ts';
import { postEvents } from '../kube/events.ts';
import {
  addObjectPatch,
  applyChanges,
  applyJsonPatch,
  emptyChanges,
  type ObjectChanges,
} from '../kube/patcher.ts';
import type { Logger } from '../logging.ts';
import { type ProgressMap, StateStorage, type StateUpdate } from '../state/storage.ts';
import { type Cause, detectCause } from './causes.ts';
import { objectMatches } from './filters.ts';
import { addFinalizer, hasFinalizer, removeFinalizer } from './finalizers.ts';
import { type CycleEffects, recordOutcome, subhandlerKey, subhandlerRecord } from './outcomes.ts';
import { type Candidate, type DueCall, planCause } from './plan.ts';
import { type CycleOutcome, describe } from './queue.ts';
import { Reconciliations } from './reconcile.ts';

export interface Binding {
  service: FunctionService;
  handlers: HandlerSpec[];
}

/** Everything the gateway serves for one resource. `storage` may move to annotations at run time. */
export interface ServedResource {
  resource: DiscoveredResource;
  storage: StateStorage;
  bindings: Binding[];
}

export interface ProcessorOptions {
  client: KubeClient;
  /** Resolves the kinds of objects that handlers ask to apply. */
  discovery: DiscoveryCache;
  served: ServedResource;
  identity: Identity;
  logger: Logger;
}

export interface Processor {
  run(object: KubernetesObject): Promise<CycleOutcome>;
  /** Drops what is kept in memory for an object that is gone. */
  forget(uid: string): void;
}

/** After a write lost a race (a guarded patch on a changed object), look again this soon. */
const CONFLICT_RETRY_MS = 100;

export function createProcessor(options: ProcessorOptions): Processor {
  const { client, served, identity, logger } = options;
  const seen = new Set<string>();
  const memos = new Map<string, Record<string, unknown>>();
  const reconciliations = new Reconciliations<FunctionService>();
  /** Progress of deletions whose handlers all ran, until the object is gone. */
  const finishedDeletions = new Map<string, ProgressMap>();
  /** Objects whose deletion we saw without holding them: their optional delete handlers have had their turn. */
  const optionalDeletions = new Set<string>();
  /** Handlers whose results the resource's status drops: said once, not on every object. */
  const droppedResults = new Set<string>();

  const run = async (object: KubernetesObject): Promise<CycleOutcome> => {
    const uid = object.metadata.uid;
    const firstSight = !seen.has(uid);
    seen.add(uid);
    const stored = served.storage.read(object);
    const cause = detectCause(object, stored, { annotationPrefix: identity.annotationPrefix, firstSight });
    const candidates = served.bindings.flatMap(({ service, handlers }) =>
      handlers.map((spec) => ({ service, spec })),
    );
    const log = logger.child(describe(object));

    try {
      let current = object;
      let written: string | undefined;
      // The finalizer goes on before any handler runs, so a deletion can never slip past them.
      if (
        cause.reason !== 'delete' &&
        needsFinalizer(object, candidates) &&
        !hasFinalizer(object, identity.finalizer)
      ) {
        current = await applyJsonPatch(
          client,
          served.resource,
          object,
          addFinalizer(object, identity.finalizer),
          identity.fieldManager,
        );
        written = current.metadata.resourceVersion;
      }

      const now = new Date();
      // Without our finalizer, a deletion's non-optional handlers are not ours to run: we ran them and
      // released the object (another finalizer holds it), or never held it. Optional ones run once.
      const holding = hasFinalizer(current, identity.finalizer);
      const releasedDeletion = cause.reason === 'delete' && !holding;
      const concerned = releasedDeletion
        ? candidates.filter(
            ({ spec }) =>
              spec.kind !== 'delete' || (spec.options?.optional === true && !optionalDeletions.has(uid)),
          )
        : candidates;
      if (releasedDeletion) optionalDeletions.add(uid);
      // A deletion whose handlers all ran keeps its progress here, not on the object (that would cost a
      // write), until the finalizer is off: a retried removal does not call them again.
      const known =
        cause.reason === 'delete' ? { ...stored.progress, ...finishedDeletions.get(uid) } : stored.progress;
      const plan = planCause(current, cause, concerned, known, now);
      // One call per service and cycle: reconciling waits for the next cycle when the cause has calls to
      // make (it then also sees what they changed).
      const reconcileDue = reconciliations.due(current, cause.essence, candidates, now);
      const reconcile = plan.due.length > 0 ? [] : reconcileDue;
      const reconcileDeferred = reconcile.length < reconcileDue.length;
      if (plan.concerned.length === 0 && reconcile.length === 0) {
        // Nothing concerns it: no call, no log. A finalizer of ours that nothing needs any more goes.
        const release = releaseIfUnneeded(current, cause, candidates, identity);
        if (release)
          current = await applyJsonPatch(client, served.resource, current, release, identity.fieldManager);
        const wake = reconciliations.wakeInMs(uid, now);
        return {
          ...(written || release ? { written: current.metadata.resourceVersion } : {}),
          ...(wake === undefined ? {} : { retryAfterMs: wake }),
        };
      }

      const progress: ProgressMap = { ...known };
      const effects: CycleEffects = { changes: emptyChanges(), results: [], events: [], apply: [] };
      for (const given of plan.givenUp) {
        progress[given.spec.id] = { ...given.progress, failure: true, message: given.message };
        log.error(`handler ${given.spec.id} ${given.message}`);
        effects.events.push({
          type: 'Warning',
          reason: 'HandlerFailed',
          message: `${given.spec.id} ${given.message}`,
        });
      }

      const call = (due: DueCall<FunctionService>[], reason: Reason) =>
        callServices(due, reason, current, stored, memos, served.resource, log);
      const [causeOutcomes, reconcileOutcomes] = await Promise.all([
        call(plan.due, cause.reason as Reason),
        call(reconcile, 'reconcile'),
      ]);

      let retryAfterMs = reconcileDeferred ? 0 : plan.wakeInMs;
      for (const [due, outcome] of causeOutcomes) {
        const record = recordOutcome(due, outcome, cause.reason !== 'delete', effects, now, log);
        progress[due.spec.id] = record;
        for (const [sub, subOutcome] of Object.entries(outcome.subhandlers ?? {})) {
          const key = subhandlerKey(due.spec.id, sub);
          const previous = progress[key] ?? { started: now.toISOString(), retries: 0 };
          progress[key] = subhandlerRecord(previous, subOutcome, now);
        }
        if (record.delayedUntil)
          retryAfterMs = Math.min(retryAfterMs ?? Infinity, Date.parse(record.delayedUntil) - now.getTime());
      }
      if (reconcile.length > 0) {
        let requeueInMs: number | undefined;
        let failed = false;
        for (const [due, outcome] of reconcileOutcomes) {
          const record = recordOutcome(due, outcome, true, effects, now, log);
          if (outcome.requeueAfter !== undefined)
            requeueInMs = Math.min(requeueInMs ?? Infinity, outcome.requeueAfter * 1000);
          if (record.delayedUntil) {
            failed = true;
            requeueInMs = Math.min(requeueInMs ?? Infinity, Date.parse(record.delayedUntil) - now.getTime());
          }
        }
        const started = reconcile[0]?.progress.started ?? now.toISOString();
        reconciliations.record(
          uid,
          cause.essence,
          started,
          { ...(requeueInMs === undefined ? {} : { requeueInMs }), failed },
          now,
        );
        if (requeueInMs !== undefined) retryAfterMs = Math.min(retryAfterMs ?? Infinity, requeueInMs);
      }

      // Handlers whose `when` said no count as not concerned: if none other was, the object stays untouched
      // (no record), so it is handled as new if it matches later, as Kopf's filters behave.
      const allSkipped = plan.concerned.every(({ spec }) => progress[spec.id]?.message === 'skipped');
      const state =
        plan.concerned.length === 0 || allSkipped
          ? 'untouched'
          : plan.concerned.every(({ spec }) => progress[spec.id]?.success || progress[spec.id]?.failure)
            ? 'finished'
            : 'in progress';
      // Objects the handlers asked for go first: if one fails, no success is recorded and the handler
      // runs again (applying is idempotent), rather than a success recorded for something never made.
      for (const child of effects.apply) {
        const [group, version] = child.apiVersion.includes('/')
          ? child.apiVersion.split('/')
          : ['', child.apiVersion];
        const kind = await options.discovery.resolve({
          group: group as string,
          version: version as string,
          name: child.kind,
        });
        await applyObject(client, kind, child, identity.fieldManager, current.metadata.namespace);
      }
      if (cause.reason === 'delete' && state === 'finished') finishedDeletions.set(uid, progress);
      const last = await writeBack(
        current,
        cause,
        state,
        progress,
        Object.keys(stored.progress ?? {}).length > 0,
        effects.changes,
        options,
        log,
      );
      if (last) current = last;
      for (const id of effects.results) {
        if (last && last.status?.[id] === undefined && !droppedResults.has(id)) {
          droppedResults.add(id);
          log.warning(
            `the status of ${served.resource.plural} does not keep status.${id}: the result of handler ${id} was dropped ` +
              '(store it elsewhere with patch)',
          );
        }
      }
      written = last?.metadata.resourceVersion ?? written;
      if (effects.events.length > 0) await postEvents(client, current, effects.events, log);
      return {
        ...(written ? { written } : {}),
        ...(retryAfterMs === undefined ? {} : { retryAfterMs: Math.max(0, retryAfterMs) }),
      };
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return {}; // gone meanwhile: nothing to record
      if (
        error instanceof ApiError &&
        (error.status === 409 || error.status === 422) &&
        /test/i.test(error.message)
      ) {
        return { retryAfterMs: CONFLICT_RETRY_MS }; // a guarded patch met a newer object: look again
      }
      throw error;
    }
  };

  return {
    run,
    forget: (uid) => {
      seen.delete(uid);
      memos.delete(uid);
      reconciliations.forget(uid);
      optionalDeletions.delete(uid);
      finishedDeletions.delete(uid);
    },
  };
}

function needsFinalizer<S>(object: KubernetesObject, candidates: readonly Candidate<S>[]): boolean {
  return candidates.some(
    ({ spec }) => spec.kind === 'delete' && !spec.options?.optional && objectMatches(object, spec.filters),
  );
}

function releaseIfUnneeded<S>(
  object: KubernetesObject,
  cause: Cause,
  candidates: readonly Candidate<S>[],
  identity: Identity,
) {
  if (!hasFinalizer(object, identity.finalizer)) return undefined;
  if (cause.reason !== 'delete' && needsFinalizer(object, candidates)) return undefined;
  return removeFinalizer(object, identity.finalizer);
}

/**
 * Writes what the cycle produced. When the cause is fully handled: the new handled-record, progress
 * purged (or, for a deletion, the finalizer removed and nothing else). Otherwise: the progress.
 */
async function writeBack(
  object: KubernetesObject,
  cause: Cause,
  state: 'untouched' | 'in progress' | 'finished',
  progress: ProgressMap,
  /** Whether progress is stored on the object now (to be purged when the change is handled). */
  storedProgress: boolean,
  changes: ObjectChanges,
  { client, served, identity }: ProcessorOptions,
  log: Logger,
): Promise<KubernetesObject | undefined> {
  const deleting = cause.reason === 'delete';
  const finished = state === 'finished';
  let update: StateUpdate = {};
  if (state === 'in progress') update = { progress };
  else if (finished && !deleting) {
    update = {
      essence: cause.essence,
      ...(storedProgress ? { progress: null } : {}),
    };
  }
  const patch = served.storage.write(update);
  if (patch.status) addObjectPatch(changes, { status: patch.status });
  if (patch.object) addObjectPatch(changes, patch.object);

  let written = await applyChanges(client, served.resource, object, changes, identity.fieldManager);
  if (update.essence && written && !served.storage.kept(written, cause.essence)) {
    written = await moveStateToAnnotations(client, served, identity, written, cause.essence, log);
  }
  if (deleting && finished && hasFinalizer(written ?? object, identity.finalizer)) {
    const target = written ?? object;
    written = await applyJsonPatch(
      client,
      served.resource,
      target,
      removeFinalizer(target, identity.finalizer),
      identity.fieldManager,
    );
  }
  return written;
}

/** The status dropped our record (a structural schema pruned it): keep state in annotations from now on. */
async function moveStateToAnnotations(
  client: KubeClient,
  served: ServedResource,
  identity: Identity,
  object: KubernetesObject,
  essence: string,
  log: Logger,
): Promise<KubernetesObject | undefined> {
  log.warning(
    `the status of ${served.resource.plural}.${served.resource.group} does not keep status.${identity.statusKey} ` +
      '(its schema prunes unknown fields); keeping state in annotations instead',
  );
  served.storage = new StateStorage('annotations', identity);
  const changes = emptyChanges();
  addObjectPatch(changes, served.storage.write({ essence }).object ?? {});
  return applyChanges(client, served.resource, object, changes, identity.fieldManager);
}

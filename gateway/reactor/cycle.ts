/**
 * One processing cycle for one object, in short named steps: perceive the cause, hold the object with
 * our finalizer, select the due calls, call, fold the outcomes, write back what the write plan says,
 * and tell the queue when to look again. The decisions are pure functions of other modules; this one
 * only sequences them, so every write the cycle makes goes through the small ReactorApi.
 */
import type { Span } from '@opentelemetry/api';
import type { KubernetesObject, Outcome, Reason } from '../../protocol/index.ts';
import { subjectAttributes } from '../../protocol/span-attributes.ts';
import type { RetryDelays } from '../dispatch/calls.ts';
import type { Identity } from '../identity.ts';
import { isNotFound, isStaleWrite } from '../kube/errors.ts';
import type { Logger } from '../logging.ts';
import { addObjectPatch, emptyChanges } from '../state/changes.ts';
import type { StoredState } from '../state/storage.ts';
import { inSpan } from '../tracing/spans.ts';
import { applyEachHandlers, type ReactorApi } from './api.ts';
import type { CallHandlers } from './calls.ts';
import { detectCause } from './causes.ts';
import { finalizerToAdd, finalizerToRelease, hasFinalizer, removeFinalizer } from './finalizers.ts';
import { memoIn, ObjectMemory, type Remembered, rememberMemo } from './memory.ts';
import {
  type Candidate,
  type Cause,
  type CycleOutcome,
  candidatesOf,
  type DueCall,
  type Named,
  nameOf,
  objectName,
  type ServedResource,
} from './model.ts';
import { afterChildren, childrenOf, foldOutcomes } from './outcomes.ts';
import { describePath, othersResultKeys, type ResultPath, resultAt, resultPath } from './places.ts';
import { type Plan, planCause } from './plan.ts';
import { dueReconciles, reconciled, reconcileWakeInMs } from './reconcile.ts';
import { planWrites, type WritePlan } from './write-plan.ts';

export interface ReactorOptions<S extends Named> {
  served: ServedResource<S>;
  api: ReactorApi;
  call: CallHandlers<S>;
  identity: Identity;
  logger: Logger;
  /** Seconds before calling a handler again whose children could not be applied, by retry (as a failed call). */
  retryDelaysS: RetryDelays;
  /** After a write lost a race (a guarded patch on a changed object), look again this soon. */
  conflictRetryMs: number;
  /** What is remembered of objects between cycles; shared with the engines beside the reactor. */
  memory?: ObjectMemory;
  /** What a deletion waits for before its handlers run and our finalizer goes (daemons ending). */
  beforeDeletion?: (uid: string) => Promise<void> | undefined;
}

interface Selection<S> {
  plan: Plan<S>;
  /** Progress the cycle starts from. */
  known: StoredState['progress'];
  reconcile: DueCall<S>[];
  /** Reconciling was due but waits for the next cycle, which also sees what this one's calls changed. */
  reconcileDeferred: boolean;
}

/** Runs the cycles of one served resource's objects, and remembers what they need between cycles. */
export class ResourceReactor<S extends Named> {
  readonly #options: ReactorOptions<S>;
  readonly #memory: ObjectMemory;
  /** Handlers whose results the resource's status drops: said once, not on every object. */
  readonly #droppedResults = new Set<string>();
  /** Objects listed at the start whose first cycle has not run yet. */
  readonly #listedAtStart = new Set<string>();

  constructor(options: ReactorOptions<S>) {
    this.#options = options;
    this.#memory = options.memory ?? new ObjectMemory();
  }

  /** Drops what is kept in memory for an object that is gone. */
  forget(uid: string): void {
    this.#memory.forget(uid);
    this.#listedAtStart.delete(uid);
  }

  /** The object was listed when the gateway started watching (see Cause.existedAtStart). */
  listedAtStart(uid: string): void {
    this.#listedAtStart.add(uid);
  }

  /** One cycle, in a span that the spans of its calls and writes are children of. */
  run(object: KubernetesObject): Promise<CycleOutcome> {
    const { resource } = this.#options.served;
    const attributes = subjectAttributes(resource, object);
    return inSpan(`cycle ${attributes['causeway.resource']}`, { attributes }, (span) =>
      this.#cycle(object, span),
    );
  }

  async #cycle(object: KubernetesObject, span: Span): Promise<CycleOutcome> {
    const { served, identity } = this.#options;
    const { remembered, firstSight } = this.#memory.recall(object.metadata.uid);
    if (firstSight && this.#listedAtStart.delete(object.metadata.uid)) remembered.existedAtStart = true;
    const candidates = candidatesOf(served);
    const handlers = candidates.map(({ service, spec }) => ({ service: nameOf(service), id: spec.id }));
    const stored = served.storage.read(object, handlers);
    const cause = detectCause(object, stored, {
      annotationPrefix: identity.annotationPrefix,
      firstSight,
      existedAtStart: remembered.existedAtStart === true,
      ...(served.storage.adoptKopf === undefined ? {} : { adoptedPrefix: served.storage.adoptKopf }),
    });
    span.setAttribute('causeway.cause', cause.reason);
    const log = this.#options.logger.child({ object: objectName(object), cause: cause.reason });
    try {
      const ending =
        cause.reason === 'delete' ? this.#options.beforeDeletion?.(object.metadata.uid) : undefined;
      if (ending) return { wakeOn: ending };
      // The finalizer goes on before any handler runs, so a deletion can never slip past them.
      const held = await this.#hold(object, cause, candidates);
      let current = held ?? object;
      const now = new Date();
      const selection = this.#select(current, cause, candidates, stored, remembered, now);
      const { plan, reconcile } = selection;
      if (plan.concerned.length === 0 && reconcile.length === 0 && !plan.awaitsChanges) {
        // Nothing concerns it: no call, no log. A finalizer of ours that nothing needs any more goes.
        const release = finalizerToRelease(current, cause, candidates, identity.finalizer);
        if (release) current = await this.#options.api.jsonPatch(current, release);
        const wake = reconcileWakeInMs(remembered.reconciled, now);
        return {
          ...(held || release ? { written: current.metadata.resourceVersion } : {}),
          ...(wake === undefined ? {} : { retryAfterMs: wake }),
        };
      }

      const { folded, down, called, applied } = await this.#call(
        current,
        cause,
        stored,
        selection,
        remembered,
        now,
        log,
      );
      if (down && !called) {
        // Every call waits for a service that is down: nothing to record, so nothing is written.
        log.debug('waiting for a function service that is down');
        return { ...(held ? { written: held.metadata.resourceVersion } : {}), wakeOn: down };
      }
      if (folded.reconciliation) {
        const { started, ...outcome } = folded.reconciliation;
        remembered.reconciled = reconciled(remembered.reconciled, cause.essence, started, outcome, now);
      }
      if (cause.reason === 'delete' && folded.state === 'finished')
        remembered.finishedDeletion = folded.progress;
      if (folded.state !== 'in progress') remembered.existedAtStart = undefined;
      const writes = planWrites(cause, folded, stored, served.storage);
      const written = await this.#writeBack(current, writes, applied, log);
      return {
        ...((written ?? held) ? { written: (written ?? held)?.metadata.resourceVersion } : {}),
        ...(folded.retryAfterMs === undefined ? {} : { retryAfterMs: folded.retryAfterMs }),
        ...(down ? { wakeOn: down } : {}),
      };
    } catch (error) {
      if (isNotFound(error)) return {}; // gone meanwhile: nothing to record
      if (isStaleWrite(error)) return { retryAfterMs: this.#options.conflictRetryMs }; // look again at the newer object
      throw error;
    }
  }

  /** Puts our finalizer on when the object needs it; the object as written, or undefined if no write. */
  async #hold(
    object: KubernetesObject,
    cause: Cause,
    candidates: readonly Candidate<S>[],
  ): Promise<KubernetesObject | undefined> {
    const patch = finalizerToAdd(object, cause, candidates, this.#options.identity.finalizer);
    return patch ? this.#options.api.jsonPatch(object, patch) : undefined;
  }

  #select(
    object: KubernetesObject,
    cause: Cause,
    candidates: readonly Candidate<S>[],
    stored: StoredState,
    remembered: Remembered,
    now: Date,
  ): Selection<S> {
    // Without our finalizer, a deletion's non-optional handlers are not ours to run: we ran them and
    // released the object (another finalizer holds it), or never held it. Optional ones run once.
    const releasedDeletion =
      cause.reason === 'delete' && !hasFinalizer(object, this.#options.identity.finalizer);
    const concerned = releasedDeletion
      ? candidates.filter(
          ({ spec }) =>
            spec.kind !== 'delete' || (spec.options?.optional === true && !remembered.optionalDeletionSeen),
        )
      : candidates;
    if (releasedDeletion) remembered.optionalDeletionSeen = true;
    const known =
      cause.reason === 'delete' ? { ...stored.progress, ...remembered.finishedDeletion } : stored.progress;
    const plan = planCause(object, cause, concerned, known, now);
    // One call per service and cycle: reconciling waits for the next cycle when the cause has calls to
    // make (it then also sees what they changed).
    const reconcileDue = dueReconciles(object, cause.essence, candidates, remembered.reconciled, now);
    const reconcile = plan.due.length > 0 ? [] : reconcileDue;
    return { plan, known, reconcile, reconcileDeferred: reconcile.length < reconcileDue.length };
  }

  async #call(
    object: KubernetesObject,
    cause: Cause,
    stored: StoredState,
    { plan, known, reconcile, reconcileDeferred }: Selection<S>,
    remembered: Remembered,
    now: Date,
    log: Logger,
  ) {
    const { served, call } = this.#options;
    const candidates = candidatesOf(served);
    const subject = (reason: Reason) => ({
      reason,
      resource: served.resource,
      object,
      stored,
      memoOf: (service: string) => memoIn(remembered, service) ?? {},
      othersResults: (service: string) => othersResultKeys(candidates, service),
    });
    const [forCause, forReconcile] = await Promise.all([
      call(plan.due, subject(cause.reason as Reason), log),
      call(reconcile, subject('reconcile'), log),
    ]);
    for (const { service, updates } of [...forCause.memoUpdates, ...forReconcile.memoUpdates])
      rememberMemo(remembered, service, updates);
    const down = forCause.down ?? forReconcile.down;
    const called = forCause.outcomes.length + forReconcile.outcomes.length > 0;
    const { outcomes, applied } = await this.#applyChildren(object, [
      ...forCause.outcomes,
      ...forReconcile.outcomes,
    ]);
    const causeOutcomes = outcomes.slice(0, forCause.outcomes.length);
    const reconcileOutcomes = outcomes.slice(forCause.outcomes.length);
    const folded = foldOutcomes(
      {
        owner: object.metadata.uid,
        plan,
        known,
        causeOutcomes,
        storeResults: cause.reason !== 'delete',
        // Placed by the handlers bound now: a service that came during the call shares the id already.
        resultPath: ({ service, spec }) =>
          resultPath(candidatesOf(served), service, spec.id, this.#options.identity.statusKey),
        reconcile,
        reconcileOutcomes,
        reconcileDeferred,
        now,
      },
      log,
    );
    return { folded, called, applied, ...(down ? { down } : {}) };
  }

  /**
   * Applies each handler's children as soon as the calls return, before folding: a child that cannot be
   * applied then fails its own handler (a temporary outcome, as a failed call) while every other
   * handler's outcome, of its service or another, is still recorded in this cycle. Applied after the
   * calls rather than in the write plan, so that no success is recorded for a child never made, and
   * still before the object's patch. A stale child throws, and the whole cycle looks again.
   */
  async #applyChildren(
    object: KubernetesObject,
    outcomes: ReadonlyArray<[DueCall<S>, Outcome]>,
  ): Promise<{ outcomes: Array<[DueCall<S>, Outcome]>; applied: KubernetesObject[] }> {
    if (!outcomes.some(([, outcome]) => outcome.apply?.length))
      return { outcomes: [...outcomes], applied: [] };
    const { uid, namespace } = object.metadata;
    const groups = outcomes.map(([due, outcome]) => childrenOf(uid, due.spec.id, outcome));
    const results = await applyEachHandlers(this.#options.api, groups, namespace);
    return {
      outcomes: outcomes.map(([due, outcome], index) => {
        const result = results[index];
        const failed = result && 'failed' in result ? result.failed : undefined;
        return [due, afterChildren(outcome, failed, due.progress.retries, this.#options.retryDelaysS)];
      }),
      applied: results.flatMap((result) => ('applied' in result ? result.applied : [])),
    };
  }

  /** Carries out the write plan; the object as last written, or undefined when nothing was. */
  async #writeBack(
    object: KubernetesObject,
    writes: WritePlan,
    /** The children the handlers' calls made (#applyChildren), for events about them. */
    applied: readonly KubernetesObject[],
    log: Logger,
  ): Promise<KubernetesObject | undefined> {
    const { api, served, identity } = this.#options;
    let written = await api.applyChanges(object, writes.changes);
    if (writes.recorded && written && !served.storage.kept(written, writes.recorded)) {
      written = await this.#moveStateToAnnotations(written, writes.recorded, log);
    }
    const target = written ?? object;
    if (writes.releaseFinalizer && hasFinalizer(target, identity.finalizer)) {
      written = await api.jsonPatch(target, removeFinalizer(target, identity.finalizer));
    }
    this.#warnDroppedResults(written, writes.results, log);
    if (writes.events.length > 0) await api.postEvents(written ?? object, writes.events, log, applied);
    return written;
  }

  /** The status dropped our record (a structural schema pruned it): keep state in annotations from now on. */
  async #moveStateToAnnotations(
    object: KubernetesObject,
    essence: string,
    log: Logger,
  ): Promise<KubernetesObject | undefined> {
    const { served, identity } = this.#options;
    log.warning(
      "the status's schema prunes unknown fields: keeping state in annotations instead (add x-kubernetes-preserve-unknown-fields to status to save a write per change)",
      { statusKey: identity.statusKey },
    );
    served.storage = served.storage.inAnnotations();
    const changes = emptyChanges();
    addObjectPatch(changes, served.storage.write({ essence }).object ?? {});
    return this.#options.api.applyChanges(object, changes);
  }

  #warnDroppedResults(written: KubernetesObject | undefined, results: ResultPath[], log: Logger): void {
    if (!written) return;
    for (const path of results) {
      const place = describePath(path);
      if (resultAt(written.status, path) !== undefined || this.#droppedResults.has(place)) continue;
      this.#droppedResults.add(place);
      log.warning(
        "the status's schema does not keep the handler's result: dropped (store it elsewhere with patch)",
        { handler: path[path.length - 1], at: place },
      );
    }
  }
}

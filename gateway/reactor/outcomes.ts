/**
 * What a handler's outcome means for its progress record, and what it adds to the cycle's writes
 * (result, patch, events, objects to apply). Pure: tested without a cluster.
 */
import { createHash } from 'node:crypto';
import {
  type KubernetesEvent,
  MAX_DELAY_SECONDS,
  type ObjectToApply,
  type Outcome,
} from '../../protocol/index.ts';
import type { RetryDelays } from '../dispatch/calls.ts';
import type { LogFields, Logger } from '../logging.ts';
import { addObjectPatch, emptyChanges, type ObjectChanges } from '../state/changes.ts';
import { type Progress, type ProgressMap, progressKey } from '../state/storage.ts';
import { backoffDelay } from '../timing.ts';
import { type Candidate, type CauseState, type DueCall, type Named, nameOf } from './model.ts';
import { placeResult, type ResultPath } from './places.ts';
import type { Plan } from './plan.ts';

export interface CycleEffects {
  changes: ObjectChanges;
  /** Where the results in `changes.status` are (places.ts). */
  results: ResultPath[];
  events: KubernetesEvent[];
  apply: NamedObject[];
}

/** An object to apply, named: server-side apply needs the name. */
export type NamedObject = ObjectToApply & { metadata: { name: string } };

/** Kubernetes' alphabet for generated names: no vowels, no look-alikes. */
const SUFFIX_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/**
 * Names the objects that have only a `generateName`, as Kubernetes would (the prefix cut to 58
 * characters, then 5 more), but with a suffix derived from `seed` rather than random: applying them
 * again (a retry, a restart) updates the objects made the first time instead of making more.
 */
export function nameGenerated(objects: readonly ObjectToApply[], seed: string): NamedObject[] {
  return objects.map((object, index) => {
    if (typeof object.metadata.name === 'string') return object as NamedObject;
    const { generateName, ...metadata } = object.metadata;
    const digest = createHash('sha256').update(`${seed}/${index}`).digest();
    const suffix = [...digest.subarray(0, 5)].map((byte) => SUFFIX_ALPHABET[byte % SUFFIX_ALPHABET.length]);
    return {
      ...object,
      metadata: { ...metadata, name: `${(generateName ?? '').slice(0, 58)}${suffix.join('')}` },
    };
  });
}

/** The objects an outcome asks to apply, named as collectEffects names them. */
export function childrenOf(owner: string, id: string, outcome: Outcome): NamedObject[] {
  return outcome.apply ? nameGenerated(outcome.apply, `${owner}/${id}`) : [];
}

/**
 * A handler's outcome once its children were tried: the same without them (they are made), or, when
 * one could not be, a temporary failure saying why, retried after the backoff a failed call waits (the
 * apiserver's Retry-After if later). Nothing else of the answer is kept, as for a failed call: no result
 * is recorded, no patch made, for children that do not exist.
 */
export function afterChildren(
  outcome: Outcome,
  /** Why they could not be applied (reactor/api.ts applyEachHandlers); undefined when they were. */
  failed: { message: string; retryAfterSeconds?: number } | undefined,
  retries: number,
  retryDelaysS: RetryDelays,
): Outcome {
  if (!failed) {
    const { apply: _made, ...rest } = outcome;
    return rest;
  }
  const said = failed.retryAfterSeconds ?? 0;
  const delay = Math.min(Math.max(backoffDelay({ delays: retryDelaysS }, retries), said), MAX_DELAY_SECONDS);
  return { status: 'temporary', message: `its children could not be applied: ${failed.message}`, delay };
}

/**
 * Turns one handler's outcome into its new progress record, collecting its result (at `resultPath`,
 * none where undefined) and effects.
 */
export function recordOutcome<S extends Named>(
  owner: string,
  due: DueCall<S>,
  outcome: Outcome,
  resultPath: ResultPath | undefined,
  effects: CycleEffects,
  now: Date,
  log: Logger,
): Progress {
  const id = due.spec.id;
  const record: Progress = { ...due.progress };
  collectEffects(effects, outcome, `${owner}/${id}`);
  switch (outcome.status) {
    case 'success':
      record.success = true;
      delete record.delayedUntil;
      if (resultPath && outcome.result !== undefined && outcome.result !== null) {
        placeResult(effects.changes.status, resultPath, outcome.result);
        effects.results.push(resultPath);
      }
      log.info('handler succeeded', handlerFields(due));
      break;
    case 'skipped':
      record.success = true;
      record.message = 'skipped';
      break;
    case 'permanent':
    case 'denied': // only admission handlers deny; the validation refuses it from others
      record.failure = true;
      record.message = outcome.message;
      log.error('handler failed permanently', { ...handlerFields(due), err: outcome.message });
      effects.events.push({
        type: 'Warning',
        reason: 'HandlerFailed',
        message: `${id} failed permanently: ${outcome.message}`,
      });
      break;
    case 'temporary':
      record.retries += 1;
      record.message = outcome.message;
      record.delayedUntil = new Date(now.getTime() + outcome.delay * 1000).toISOString();
      log.warning('handler failed temporarily', {
        ...handlerFields(due),
        delaySeconds: outcome.delay,
        err: outcome.message,
      });
      effects.events.push({
        type: 'Warning',
        reason: 'HandlerRetrying',
        message: `${id}: ${outcome.message}`,
      });
      break;
  }
  return record;
}

/**
 * How a handler's lines name it (and its service: two may have a handler of one id), its retry and,
 * once called, the call's keys.
 */
function handlerFields(due: DueCall<Named>): LogFields {
  return { handler: due.spec.id, service: nameOf(due.service), retry: due.progress.retries, ...due.called };
}

/**
 * Adds what an outcome asks to write (its patch, events, objects to apply) to the effects; `origin`
 * (the object's uid and the handler's id) names the objects given only a `generateName`.
 */
export function collectEffects(effects: CycleEffects, outcome: Outcome, origin: string): void {
  if (outcome.patch) addObjectPatch(effects.changes, outcome.patch);
  if (outcome.events) effects.events.push(...outcome.events);
  if (outcome.apply) effects.apply.push(...nameGenerated(outcome.apply, origin));
}

/** Sub-handlers keep their progress next to their parent's, under `<parent>#<sub>`. */
export function subhandlerKey(parent: string, sub: string): string {
  return `${parent}#${sub}`;
}

/** Where a handler keeps its progress in the cycle's ProgressMap: by its service, then its id. */
export function progressOf(candidate: Candidate<Named>, key = candidate.spec.id): string {
  return progressKey(nameOf(candidate.service), key);
}

/** A sub-handler's new progress record (Kopf's `execute`), kept next to its parent's. */
export function subhandlerRecord(previous: Progress, outcome: Outcome, now: Date): Progress {
  switch (outcome.status) {
    case 'success':
    case 'skipped':
      return { started: previous.started, retries: previous.retries, success: true };
    case 'permanent':
    case 'denied':
      return {
        started: previous.started,
        retries: previous.retries,
        failure: true,
        message: outcome.message,
      };
    case 'temporary':
      return {
        started: previous.started,
        retries: previous.retries + 1,
        message: outcome.message,
        delayedUntil: new Date(now.getTime() + outcome.delay * 1000).toISOString(),
      };
  }
}

export function emptyEffects(): CycleEffects {
  return { changes: emptyChanges(), results: [], events: [], apply: [] };
}

export interface FoldInput<S> {
  /** The uid of the object handled. */
  owner: string;
  plan: Plan<S>;
  /** Progress before this cycle's calls. */
  known: ProgressMap | undefined;
  causeOutcomes: ReadonlyArray<[DueCall<S>, Outcome]>;
  /** Results are stored for every cause but a deletion (the object is going). */
  storeResults: boolean;
  /** Where each handler's result lands (places.ts resultPath). */
  resultPath: (candidate: Candidate<S>) => ResultPath;
  reconcile: readonly DueCall<S>[];
  reconcileOutcomes: ReadonlyArray<[DueCall<S>, Outcome]>;
  /** Reconciling was due but waits for the next cycle (this one had calls for the cause). */
  reconcileDeferred: boolean;
  now: Date;
}

export interface Folded {
  progress: ProgressMap;
  effects: CycleEffects;
  state: CauseState;
  /** When to run the object again even if nothing changes. */
  retryAfterMs?: number;
  /** How the reconciliation went, when there was one. */
  reconciliation?: { started: string; requeueInMs?: number; failed: boolean };
}

/** Folds a cycle's outcomes into progress, effects, the cause's state and when to look again: pure. */
export function foldOutcomes<S extends Named>(input: FoldInput<S>, log: Logger): Folded {
  const { plan, now } = input;
  const progress: ProgressMap = { ...input.known };
  const effects = emptyEffects();
  for (const given of plan.givenUp) {
    progress[progressOf(given)] = { ...given.progress, failure: true, message: given.message };
    log.error('handler given up', { ...handlerFields(given), err: given.message });
    effects.events.push({
      type: 'Warning',
      reason: 'HandlerFailed',
      message: `${given.spec.id} ${given.message}`,
    });
  }

  let retryAfterMs = input.reconcileDeferred ? 0 : plan.wakeInMs;
  const sooner = (ms: number) => {
    retryAfterMs = Math.min(retryAfterMs ?? Number.POSITIVE_INFINITY, ms);
  };
  for (const [due, outcome] of input.causeOutcomes) {
    const resultPath = input.storeResults ? input.resultPath(due) : undefined;
    const record = recordOutcome(input.owner, due, outcome, resultPath, effects, now, log);
    progress[progressOf(due)] = record;
    for (const [sub, subOutcome] of Object.entries(outcome.subhandlers ?? {})) {
      const key = progressOf(due, subhandlerKey(due.spec.id, sub));
      const previous = progress[key] ?? { started: now.toISOString(), retries: 0 };
      progress[key] = subhandlerRecord(previous, subOutcome, now);
    }
    if (record.delayedUntil) sooner(Date.parse(record.delayedUntil) - now.getTime());
  }

  let reconciliation: Folded['reconciliation'];
  if (input.reconcile.length > 0) {
    let requeueInMs: number | undefined;
    let failed = false;
    for (const [due, outcome] of input.reconcileOutcomes) {
      const record = recordOutcome(input.owner, due, outcome, input.resultPath(due), effects, now, log);
      if (outcome.requeueAfter !== undefined)
        requeueInMs = Math.min(requeueInMs ?? Number.POSITIVE_INFINITY, outcome.requeueAfter * 1000);
      if (record.delayedUntil) {
        failed = true;
        requeueInMs = Math.min(
          requeueInMs ?? Number.POSITIVE_INFINITY,
          Date.parse(record.delayedUntil) - now.getTime(),
        );
      }
    }
    const started = input.reconcile[0]?.progress.started ?? now.toISOString();
    reconciliation = { started, failed, ...(requeueInMs === undefined ? {} : { requeueInMs }) };
    if (requeueInMs !== undefined) sooner(requeueInMs);
  }

  return {
    progress,
    effects,
    state: causeState(plan, progress),
    ...(retryAfterMs === undefined ? {} : { retryAfterMs: Math.max(0, retryAfterMs) }),
    ...(reconciliation ? { reconciliation } : {}),
  };
}

/**
 * Handlers whose `when` said no count as not concerned: if none other was, the object stays untouched
 * (no record), so it is handled as new if it matches later, as Kopf's filters behave; unless a handler
 * of its later changes awaits them.
 */
function causeState<S extends Named>(plan: Plan<S>, progress: ProgressMap): CauseState {
  const records = plan.concerned.map((candidate) => progress[progressOf(candidate)]);
  const allSkipped = records.every((record) => record?.message === 'skipped');
  if (plan.concerned.length === 0 || allSkipped) return plan.awaitsChanges ? 'finished' : 'untouched';
  return records.every((record) => record?.success || record?.failure) ? 'finished' : 'in progress';
}

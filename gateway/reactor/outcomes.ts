/**
 * What a handler's outcome means for its progress record, and what it adds to the cycle's writes
 * (result, patch, events, objects to apply). Pure: tested without a cluster.
 */
import type { KubernetesEvent, ObjectToApply, Outcome } from '../../protocol/index.ts';
import { addObjectPatch, type ObjectChanges } from '../kube/patcher.ts';
import type { Logger } from '../logging.ts';
import type { Progress } from '../state/storage.ts';
import type { DueCall } from './plan.ts';

export interface CycleEffects {
  changes: ObjectChanges;
  /** Handlers whose results are in `changes.status`. */
  results: string[];
  events: KubernetesEvent[];
  apply: ObjectToApply[];
}

/** Turns one handler's outcome into its new progress record, collecting its result and effects. */
export function recordOutcome<S>(
  due: DueCall<S>,
  outcome: Outcome,
  storeResult: boolean,
  effects: CycleEffects,
  now: Date,
  log: Logger,
): Progress {
  const id = due.spec.id;
  const record: Progress = { ...due.progress };
  if (outcome.patch) addObjectPatch(effects.changes, outcome.patch);
  if (outcome.events) effects.events.push(...outcome.events);
  if (outcome.apply) effects.apply.push(...outcome.apply);
  switch (outcome.status) {
    case 'success':
      record.success = true;
      delete record.delayedUntil;
      if (storeResult && outcome.result !== undefined && outcome.result !== null) {
        effects.changes.status[id] = outcome.result;
        effects.results.push(id);
      }
      log.info(`handler ${id} succeeded`);
      break;
    case 'skipped':
      record.success = true;
      record.message = 'skipped';
      break;
    case 'permanent':
      record.failure = true;
      record.message = outcome.message;
      log.error(`handler ${id} failed permanently: ${outcome.message}`);
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
      log.warning(`handler ${id} failed temporarily, retrying in ${outcome.delay}s: ${outcome.message}`);
      effects.events.push({
        type: 'Warning',
        reason: 'HandlerRetrying',
        message: `${id}: ${outcome.message}`,
      });
      break;
  }
  return record;
}

/** Sub-handlers keep their progress next to their parent's, under `<parent>#<sub>`. */
export function subhandlerKey(parent: string, sub: string): string {
  return `${parent}#${sub}`;
}

/**
 * The idempotency key depends on the object, the handler, the cause and the state the change started
 * from, which stay the same until the change is handled: across retries, restarts and crashes alike.
 */

export function subhandlerRecord(previous: Progress, outcome: Outcome, now: Date): Progress {
  switch (outcome.status) {
    case 'success':
    case 'skipped':
      return { started: previous.started, retries: previous.retries, success: true };
    case 'permanent':
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

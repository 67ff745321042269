/**
 * Level-based handlers (`on.reconcile`): called with the object as it is now, after any change of its
 * essence, the first time this gateway sees it, and again when a call asked to be requeued. Kept in
 * memory only (in the object's memory): after a restart every object is reconciled once anyway.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import { objectMatches } from './filters.ts';
import type { Candidate, DueCall } from './model.ts';

export interface Reconciled {
  essence: string;
  /** When to call again even without a change (epoch ms). */
  dueAt?: number;
  retries: number;
  started: string;
}

/** The reconcile handlers due for `object` now, or none, given how it was last reconciled. */
export function dueReconciles<S>(
  object: KubernetesObject,
  essence: string,
  candidates: readonly Candidate<S>[],
  last: Reconciled | undefined,
  now: Date,
): DueCall<S>[] {
  if (object.metadata.deletionTimestamp) return [];
  const handlers = candidates.filter(
    ({ spec }) => spec.kind === 'reconcile' && objectMatches(object, spec.filters),
  );
  if (handlers.length === 0) return [];
  const changed = last === undefined || last.essence !== essence;
  const requeued = last?.dueAt !== undefined && last.dueAt <= now.getTime();
  if (!changed && !requeued) return [];
  const progress = {
    started: changed || !last ? now.toISOString() : last.started,
    retries: changed || !last ? 0 : last.retries,
  };
  return handlers.map((candidate) => ({ ...candidate, progress }));
}

/** How a reconciliation went, as the next one needs to know it. */
export function reconciled(
  previous: Reconciled | undefined,
  essence: string,
  started: string,
  outcome: { requeueInMs?: number; failed: boolean },
  now: Date,
): Reconciled {
  const retries = outcome.failed ? (previous?.essence === essence ? previous.retries : 0) + 1 : 0;
  const dueAt = outcome.requeueInMs === undefined ? undefined : now.getTime() + outcome.requeueInMs;
  return { essence, retries, started, ...(dueAt === undefined ? {} : { dueAt }) };
}

/** Time until the next requeue, if one is pending. */
export function reconcileWakeInMs(last: Reconciled | undefined, now: Date): number | undefined {
  return last?.dueAt === undefined ? undefined : Math.max(0, last.dueAt - now.getTime());
}

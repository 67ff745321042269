/**
 * Level-based handlers (`on.reconcile`): called with the object as it is now, after any change of its
 * essence, the first time this gateway sees it, and again when a call asked to be requeued. Kept in
 * memory only: after a restart every object is reconciled once anyway.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import { objectMatches } from './filters.ts';
import type { Candidate, DueCall } from './plan.ts';

interface Reconciled {
  essence: string;
  /** When to call again even without a change (epoch ms). */
  dueAt?: number;
  retries: number;
  started: string;
}

export class Reconciliations<S> {
  readonly #objects = new Map<string, Reconciled>();

  /** The reconcile handlers due for `object` now, or none. */
  due(
    object: KubernetesObject,
    essence: string,
    candidates: readonly Candidate<S>[],
    now: Date,
  ): DueCall<S>[] {
    if (object.metadata.deletionTimestamp) return [];
    const handlers = candidates.filter(
      ({ spec }) => spec.kind === 'reconcile' && objectMatches(object, spec.filters),
    );
    if (handlers.length === 0) return [];
    const last = this.#objects.get(object.metadata.uid);
    const changed = last === undefined || last.essence !== essence;
    const requeued = last?.dueAt !== undefined && last.dueAt <= now.getTime();
    if (!changed && !requeued) return [];
    const progress = {
      started: changed || !last ? now.toISOString() : last.started,
      retries: changed || !last ? 0 : last.retries,
    };
    return handlers.map((candidate) => ({ ...candidate, progress }));
  }

  /** Records how a reconciliation went; returns ms until it is due again, if it asked or failed. */
  record(
    uid: string,
    essence: string,
    started: string,
    outcome: { requeueInMs?: number; failed?: boolean },
    now: Date,
  ) {
    const previous = this.#objects.get(uid);
    const retries = outcome.failed ? (previous?.essence === essence ? previous.retries : 0) + 1 : 0;
    const dueAt = outcome.requeueInMs === undefined ? undefined : now.getTime() + outcome.requeueInMs;
    this.#objects.set(uid, { essence, retries, started, ...(dueAt === undefined ? {} : { dueAt }) });
    return outcome.requeueInMs;
  }

  /** Time until the next requeue of an object, if one is pending. */
  wakeInMs(uid: string, now: Date): number | undefined {
    const dueAt = this.#objects.get(uid)?.dueAt;
    return dueAt === undefined ? undefined : Math.max(0, dueAt - now.getTime());
  }

  forget(uid: string): void {
    this.#objects.delete(uid);
  }
}

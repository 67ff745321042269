/**
 * What the reactor remembers of each object between its cycles, in this process only: one entry per
 * object, dropped with one `forget` when the object is gone.
 */
import { bareRecord } from '../../protocol/json.ts';
import { updatedMemo } from '../dispatch/memo.ts';
import type { ProgressMap } from '../state/storage.ts';
import type { Reconciled } from './reconcile.ts';

/** One per object: fields are cleared with undefined, not deleted (V8 would keep it as a hash table). */
export interface Remembered {
  /** What each service's handlers kept for the object (the memo of the protocol), by service name. */
  memos?: Record<string, Record<string, unknown>>;
  reconciled?: Reconciled;
  /**
   * Progress of a deletion whose handlers all ran, until the object is gone: kept here, not on the
   * object (that would cost a write), so a retried removal of the finalizer does not call them again.
   */
  finishedDeletion?: ProgressMap;
  /** Its deletion was seen without our finalizer on it: optional delete handlers have had their turn. */
  optionalDeletionSeen?: true;
  /** Listed when the gateway started: resume handlers join its create or update until that finishes. */
  existedAtStart?: true;
}

export class ObjectMemory {
  readonly #objects = new Map<string, Remembered>();

  /** The object's memory, and whether this is the first time this process sees it. */
  recall(uid: string): { remembered: Remembered; firstSight: boolean } {
    const known = this.#objects.get(uid);
    if (known) return { remembered: known, firstSight: false };
    const remembered: Remembered = {};
    this.#objects.set(uid, remembered);
    return { remembered, firstSight: true };
  }

  forget(uid: string): void {
    this.#objects.delete(uid);
  }

  /**
   * A service's memo of an object a cycle has seen; engines beside the reactor (timers) read it
   * without recalling.
   */
  memoOf(uid: string, service: string): Record<string, unknown> | undefined {
    return memoIn(this.#objects.get(uid), service);
  }

  /** Applies a service's memo updates to an object a cycle has seen (one not seen yet keeps no memory for it). */
  updateMemo(uid: string, service: string, updates: Record<string, unknown>): void {
    const remembered = this.#objects.get(uid);
    if (remembered) rememberMemo(remembered, service, updates);
  }
}

/** A service's memo in what is remembered of an object: none of another's. */
export function memoIn(
  remembered: Remembered | undefined,
  service: string,
): Record<string, unknown> | undefined {
  const memos = remembered?.memos;
  return memos && Object.hasOwn(memos, service) ? memos[service] : undefined;
}

/** Applies a service's memo updates to its own memo of the object (`null` removes a key). */
export function rememberMemo(
  remembered: Remembered,
  service: string,
  updates: Record<string, unknown>,
): void {
  // Bare: a service's name is only ever a key here.
  remembered.memos ??= bareRecord() as Record<string, Record<string, unknown>>;
  remembered.memos[service] = updatedMemo(memoIn(remembered, service), updates);
}

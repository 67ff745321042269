/**
 * What the reactor remembers of each object between its cycles, in this process only: one entry per
 * object, dropped with one `forget` when the object is gone.
 */
import { bareRecord } from '../../protocol/json.ts';
import type { ProgressMap } from '../state/storage.ts';
import type { Reconciled } from './reconcile.ts';

/** One per object: fields are cleared with undefined, not deleted (V8 would keep it as a hash table). */
export interface Remembered {
  /** What the handlers kept for the object (the memo of the protocol). */
  memo?: Record<string, unknown>;
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

  /** The memo of an object a cycle has seen; engines beside the reactor (timers) read it without recalling. */
  memoOf(uid: string): Record<string, unknown> | undefined {
    return this.#objects.get(uid)?.memo;
  }

  /** Changes the memo of an object a cycle has seen (one not seen yet keeps no memory for it). */
  updateMemo(
    uid: string,
    update: (memo: Record<string, unknown> | undefined) => Record<string, unknown>,
  ): void {
    const remembered = this.#objects.get(uid);
    if (remembered) remembered.memo = update(remembered.memo);
  }
}

/** Applies a service's memo updates: `null` removes a key. A bare record: its keys reach no prototype. */
export function updatedMemo(
  memo: Record<string, unknown> | undefined,
  updates: Record<string, unknown>,
): Record<string, unknown> {
  const updated = bareRecord(memo);
  for (const key of Object.keys(updates)) {
    const value = updates[key];
    if (value === null) delete updated[key];
    else updated[key] = value;
  }
  return updated;
}

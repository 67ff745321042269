/**
 * What a cycle writes to the object, computed as data before anything is written (the children the
 * handlers asked for are made before, each handler's on its own: cycle.ts #applyChildren): the merge patches (handlers' patches, results, the gateway's state), whether our finalizer comes off,
 * and the events. Pure: tested without a cluster.
 */
import type { KubernetesEvent } from '../../protocol/index.ts';
import { addObjectPatch, copiedChanges, type ObjectChanges } from '../state/changes.ts';
import type { StateStorage, StateUpdate, StoredState } from '../state/storage.ts';
import type { Cause } from './model.ts';
import type { Folded } from './outcomes.ts';
import type { ResultPath } from './places.ts';

export interface WritePlan {
  /** Merge patches of the object and of its status: one write each at most, status first. */
  changes: ObjectChanges;
  /** Where the results in the status patch are (places.ts). */
  results: ResultPath[];
  /** The essence the handled-record now says: the write is checked for it (a pruning status drops it). */
  recorded?: string;
  /** A deletion fully handled: our finalizer comes off after the changes. */
  releaseFinalizer: boolean;
  events: KubernetesEvent[];
}

/**
 * When the cause is fully handled: the new handled-record, progress purged (or, for a deletion, the
 * finalizer removed and nothing else). Otherwise: the progress.
 */
export function planWrites(
  cause: Cause,
  folded: Folded,
  /** The state as the cycle read it: progress stored on the object is purged when the change is handled. */
  stored: StoredState,
  storage: StateStorage,
): WritePlan {
  const storedProgress = Object.keys(stored.progress ?? {}).length > 0 || stored.legacy !== undefined;
  const deleting = cause.reason === 'delete';
  const finished = folded.state === 'finished';
  let update: StateUpdate = {};
  if (folded.state === 'in progress') update = { progress: folded.progress };
  else if (finished && !deleting) {
    update = { essence: cause.essence, ...(storedProgress ? { progress: null } : {}) };
  }
  const changes = copiedChanges(folded.effects.changes);
  const state = storage.write(update, stored);
  if (state.status) addObjectPatch(changes, { status: state.status });
  if (state.object) addObjectPatch(changes, state.object);
  return {
    changes,
    results: folded.effects.results,
    ...(update.essence ? { recorded: update.essence } : {}),
    releaseFinalizer: deleting && finished,
    events: folded.effects.events,
  };
}

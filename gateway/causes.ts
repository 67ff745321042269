/**
 * Decides what happened to an object since it was last handled: pure logic on the object and the
 * state stored on it, so it is tested without a cluster.
 */
import type { KubernetesObject, Reason } from '../protocol/index.ts';
import type { StoredState } from './state/storage.ts';

export type Cause = { reason: Reason } | { reason: 'none' };

export function detectCause(object: KubernetesObject, stored: StoredState): Cause {
  // An object already on its way out is not created; deletion handling arrives with delete handlers.
  if (object.metadata.deletionTimestamp) return { reason: 'none' };
  if (stored.essence === undefined) return { reason: 'create' };
  return { reason: 'none' };
}

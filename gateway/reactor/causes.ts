/**
 * Decides what happened to an object since it was last handled, by comparing its essence with the one
 * stored on it (Kopf's diff-base): pure logic, tested without a cluster.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import { diff } from '../state/diff.ts';
import { type Essence, essenceOf, serializeEssence } from '../state/essence.ts';
import type { StoredState } from '../state/storage.ts';
import type { Cause } from './model.ts';

export interface CauseContext {
  annotationPrefix: string;
  /** True the first time this gateway process sees the object: existing objects are resumed. */
  firstSight: boolean;
  /** The object was listed when the gateway started, and its create or update is not finished yet. */
  existedAtStart?: boolean;
  /** The prefix of the Kopf operator whose state is adopted: its annotations are not part of the essence. */
  adoptedPrefix?: string;
}

export function detectCause(object: KubernetesObject, stored: StoredState, context: CauseContext): Cause {
  const current = essenceOf(object, context.annotationPrefix, context.adoptedPrefix);
  const essence = serializeEssence(current);
  const old = stored.essence === undefined ? undefined : parseEssence(stored.essence);
  const changes = old === undefined ? [] : diff(old, current);
  const cause = (reason: Cause['reason']): Cause => ({
    reason,
    ...(old === undefined ? {} : { old }),
    new: current,
    diff: reason === 'create' ? diff(undefined, current) : changes,
    essence,
    firstSight: context.firstSight,
    existedAtStart: context.existedAtStart ?? false,
  });
  if (object.metadata.deletionTimestamp) return cause('delete');
  if (old === undefined) return cause('create');
  if (changes.length > 0) return cause('update');
  return cause(context.firstSight ? 'resume' : 'none');
}

function parseEssence(text: string): Essence | undefined {
  try {
    return JSON.parse(text) as Essence;
  } catch {
    return undefined; // a damaged record: handle the object as new rather than never
  }
}

/**
 * Where the record "this object was handled, in this state" lives on the object. In the status when
 * the resource's status keeps it (one write per handled change, together with the results); in an
 * annotation otherwise. A tool that replaces the whole status would erase a status-kept record: the
 * object would then be handled again as new, which is why annotations remain available.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import type { Identity } from '../identity.ts';

export type StateLocation = 'status' | 'annotations';

export interface StoredState {
  /** Serialised essence of the last handled state; absent when the object was never handled. */
  essence?: string;
}

export interface StatePatch {
  /** Merge patch for the object itself (metadata), or undefined. */
  object?: Record<string, unknown>;
  /** Merge patch for the status, or undefined. */
  status?: Record<string, unknown>;
}

export class StateStorage {
  readonly location: StateLocation;
  readonly #identity: Identity;

  constructor(location: StateLocation, identity: Identity) {
    this.location = location;
    this.#identity = identity;
  }

  get #annotation(): string {
    return `${this.#identity.annotationPrefix}/last-handled`;
  }

  /** Reads from both places, so switching location never makes a handled object look new. */
  read(object: KubernetesObject): StoredState {
    const inStatus = object.status?.[this.#identity.statusKey] as { essence?: unknown } | undefined;
    if (typeof inStatus?.essence === 'string') return { essence: inStatus.essence };
    const inAnnotation = object.metadata.annotations?.[this.#annotation];
    return inAnnotation === undefined ? {} : { essence: inAnnotation };
  }

  write(state: Required<StoredState>): StatePatch {
    if (this.location === 'status')
      return { status: { [this.#identity.statusKey]: { essence: state.essence } } };
    return { object: { metadata: { annotations: { [this.#annotation]: state.essence } } } };
  }

  /** True when the object as the API returned it after our write still holds what we wrote. */
  kept(object: KubernetesObject, state: Required<StoredState>): boolean {
    return this.read(object).essence === state.essence;
  }
}

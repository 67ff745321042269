/**
 * Where the gateway's state lives on the object: the essence of the last handled state (the
 * handled-record) and the progress of handlers still at work on a change. In the status when the
 * resource's status keeps it (one write per cycle, together with the results); in annotations
 * otherwise. A tool that replaces the whole status would erase a status-kept record: the object would
 * then be handled again as new, which is why annotations remain available.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import { isObject } from '../../protocol/json.ts';
import type { Identity } from '../identity.ts';

export type StateLocation = 'status' | 'annotations';

/** One handler's progress on the current change. Times are ISO 8601. */
export interface Progress {
  started: string;
  /** Attempts that failed temporarily so far. */
  retries: number;
  /** Not to be called again before then. */
  delayedUntil?: string;
  success?: true;
  failure?: true;
  message?: string;
}

export type ProgressMap = Record<string, Progress>;

export interface StoredState {
  /** Serialised essence of the last handled state; absent when the object was never handled. */
  essence?: string;
  progress?: ProgressMap;
}

/** What to change: `undefined` keeps a part as it is, `null` removes it. */
export interface StateUpdate {
  essence?: string | null;
  progress?: ProgressMap | null;
}

export interface StatePatch {
  /** Merge patch for the object outside the status (metadata). */
  object?: Record<string, unknown>;
  /** Merge patch for the status. */
  status?: Record<string, unknown>;
}

export class StateStorage {
  readonly location: StateLocation;
  readonly #identity: Identity;

  constructor(location: StateLocation, identity: Identity) {
    this.location = location;
    this.#identity = identity;
  }

  get #essenceAnnotation(): string {
    return `${this.#identity.annotationPrefix}/last-handled`;
  }

  get #progressAnnotation(): string {
    return `${this.#identity.annotationPrefix}/progress`;
  }

  /** Reads from both places, so switching location never makes a handled object look new. */
  read(object: KubernetesObject): StoredState {
    const inStatus = object.status?.[this.#identity.statusKey] as
      | { essence?: unknown; progress?: unknown }
      | undefined;
    const annotations = object.metadata.annotations ?? {};
    const essence =
      typeof inStatus?.essence === 'string' ? inStatus.essence : annotations[this.#essenceAnnotation];
    const progress = isObject(inStatus?.progress)
      ? (inStatus.progress as ProgressMap)
      : parseProgress(annotations[this.#progressAnnotation]);
    return { ...(essence === undefined ? {} : { essence }), ...(progress ? { progress } : {}) };
  }

  write(update: StateUpdate): StatePatch {
    if (update.essence === undefined && update.progress === undefined) return {};
    if (this.location === 'status') {
      const state: Record<string, unknown> = {};
      if (update.essence !== undefined) state.essence = update.essence;
      if (update.progress !== undefined) state.progress = update.progress;
      return { status: { [this.#identity.statusKey]: state } };
    }
    const annotations: Record<string, string | null> = {};
    if (update.essence !== undefined) annotations[this.#essenceAnnotation] = update.essence;
    if (update.progress !== undefined) {
      annotations[this.#progressAnnotation] =
        update.progress === null ? null : JSON.stringify(update.progress);
    }
    return { object: { metadata: { annotations } } };
  }

  /** True when the object as the API returned it after our write still holds the essence we wrote. */
  kept(object: KubernetesObject, essence: string): boolean {
    return this.read(object).essence === essence;
  }
}

function parseProgress(text: string | undefined): ProgressMap | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return isObject(parsed) ? (parsed as ProgressMap) : undefined;
  } catch {
    return undefined; // a damaged record counts as none: the handlers start over
  }
}

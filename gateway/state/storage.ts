/**
 * Where the gateway's state lives on the object: the essence of the last handled state (the
 * handled-record) and the progress of handlers still at work on a change. In the status when the
 * resource's status keeps it (one write per cycle, together with the results); in annotations
 * otherwise. A tool that replaces the whole status would erase a status-kept record: the object would
 * then be handled again as new, which is why annotations remain available.
 *
 * With Kopf's state adopted (`adoptKopf`, the prefix a Kopf operator kept it under), an object that
 * has no record of ours yet is read with Kopf's (kopf.ts): its diff-base as our essence, its handlers'
 * progress as ours. Writes are always of our own record; Kopf's annotations stay as they are.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import { isObject } from '../../protocol/json.ts';
import type { Identity } from '../identity.ts';
import { kopfState } from './kopf.ts';

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
  /** The prefix of the Kopf operator whose state is adopted, if any. */
  readonly adoptKopf: string | undefined;
  readonly #identity: Identity;

  constructor(location: StateLocation, identity: Identity, adoptKopf?: string) {
    this.location = location;
    this.#identity = identity;
    this.adoptKopf = adoptKopf;
  }

  /** The same storage keeping its state in annotations from now on. */
  inAnnotations(): StateStorage {
    return new StateStorage('annotations', this.#identity, this.adoptKopf);
  }

  get #essenceAnnotation(): string {
    return `${this.#identity.annotationPrefix}/last-handled`;
  }

  get #progressAnnotation(): string {
    return `${this.#identity.annotationPrefix}/progress`;
  }

  /**
   * Our record; else, when adopting, Kopf's, with the progress of `handlerIds` (Kopf's records are
   * found by handler id). Once we have recorded an essence, Kopf's state is never read again: its
   * progress annotations, left behind, belong to a change handled since.
   */
  read(object: KubernetesObject, handlerIds: readonly string[] = []): StoredState {
    const own = this.#readOwn(object);
    if (own.essence !== undefined || this.adoptKopf === undefined) return own;
    const kopf = kopfState(object, {
      prefix: this.adoptKopf,
      ownPrefix: this.#identity.annotationPrefix,
      handlerIds,
    });
    return { ...kopf, ...own }; // our progress, when a cycle of ours already wrote some, wins
  }

  /** Reads from both places, so switching location never makes a handled object look new. */
  #readOwn(object: KubernetesObject): StoredState {
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
    return this.#readOwn(object).essence === essence;
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

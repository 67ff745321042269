/**
 * Where the gateway's state lives on the object: the essence of the last handled state (the
 * handled-record) and the progress of handlers still at work on a change. In the status when the
 * resource's status keeps it (one write per cycle, together with the results); in annotations
 * otherwise. A tool that replaces the whole status would erase a status-kept record: the object would
 * then be handled again as new, which is why annotations remain available.
 *
 * Progress is each service's own: kept by service, then by handler (`progress.<service>.<id>`, a
 * sub-handler's at `<id>#<sub>`), so two services' handlers of one id never share a record. A service's
 * name (a DNS label) holds no `/`: in memory, a handler's record is at `<service>/<id>` (progressKey).
 * Records kept by handler id alone (a gateway before this one, or Kopf's) are read as the record of the
 * handler of that id on the resource, and written in the new form with the next write of progress.
 *
 * With Kopf's state adopted (`adoptKopf`, the prefix a Kopf operator kept it under), an object that
 * has no record of ours yet is read with Kopf's (kopf.ts): its diff-base as our essence, its handlers'
 * progress as ours. Writes are always of our own record; Kopf's annotations stay as they are.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import { bareRecord, isObject } from '../../protocol/json.ts';
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

/** Progress records by `progressKey(service, key)`. */
export type ProgressMap = Record<string, Progress>;

/** Where a service's handler (or sub-handler: `key` is then `<id>#<sub>`) keeps its progress in a ProgressMap. */
export function progressKey(service: string, key: string): string {
  return `${service}/${key}`;
}

/** A handler as the storage knows it: the name of its service, and its id. */
export interface HandlerOwner {
  service: string;
  id: string;
}

export interface StoredState {
  /** Serialised essence of the last handled state; absent when the object was never handled. */
  essence?: string;
  progress?: ProgressMap;
  /**
   * Records kept by handler id alone: those read as a service's now (`claimed`, removed with the next
   * write of progress), and those no handler bound now has the id of (`unclaimed`, kept as they are).
   */
  legacy?: { claimed: string[]; unclaimed: ProgressMap };
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
   * Our record; else, when adopting, Kopf's, with the progress of `handlers` (Kopf's records are
   * found by handler id). Once we have recorded an essence, Kopf's state is never read again: its
   * progress annotations, left behind, belong to a change handled since.
   */
  read(object: KubernetesObject, handlers: readonly HandlerOwner[] = []): StoredState {
    const { essence, progress } = this.#readOwn(object);
    const own = { ...(essence === undefined ? {} : { essence }), ...claimed(progress, handlers) };
    if (own.essence !== undefined || this.adoptKopf === undefined) return own;
    const kopf = kopfState(object, {
      prefix: this.adoptKopf,
      ownPrefix: this.#identity.annotationPrefix,
      handlerIds: [...new Set(handlers.map(({ id }) => id))],
    });
    // Kopf's records are by id alone, as ours were; none of them is in our record to remove.
    const adopted = claimed(kopf.progress, handlers);
    const fromKopf = {
      ...(kopf.essence === undefined ? {} : { essence: kopf.essence }),
      ...(adopted.progress ? { progress: adopted.progress } : {}),
    };
    return { ...fromKopf, ...own }; // our progress, when a cycle of ours already wrote some, wins
  }

  /** Reads from both places, so switching location never makes a handled object look new. */
  #readOwn(object: KubernetesObject): { essence?: string; progress?: Record<string, unknown> } {
    const inStatus = object.status?.[this.#identity.statusKey] as
      | { essence?: unknown; progress?: unknown }
      | undefined;
    const annotations = object.metadata.annotations ?? {};
    const essence =
      typeof inStatus?.essence === 'string' ? inStatus.essence : annotations[this.#essenceAnnotation];
    const progress = isObject(inStatus?.progress)
      ? inStatus.progress
      : parseProgress(annotations[this.#progressAnnotation]);
    return { ...(essence === undefined ? {} : { essence }), ...(progress ? { progress } : {}) };
  }

  /**
   * The patch that records `update`; `read`: the state it was read as, whose records kept by id alone
   * are removed once written in the new form (in annotations, those no handler claims are kept).
   */
  write(update: StateUpdate, read: StoredState = {}): StatePatch {
    if (update.essence === undefined && update.progress === undefined) return {};
    const progress = update.progress && byService(update.progress);
    const legacy = read.legacy ?? { claimed: [], unclaimed: {} };
    if (this.location === 'status') {
      const state: Record<string, unknown> = {};
      if (update.essence !== undefined) state.essence = update.essence;
      if (update.progress === null) state.progress = null;
      else if (progress) {
        state.progress = replacingClaimed(progress, legacy);
      }
      return { status: { [this.#identity.statusKey]: state } };
    }
    const annotations: Record<string, string | null> = {};
    if (update.essence !== undefined) annotations[this.#essenceAnnotation] = update.essence;
    if (update.progress === null) annotations[this.#progressAnnotation] = null;
    else if (progress) {
      annotations[this.#progressAnnotation] = JSON.stringify({ ...legacy.unclaimed, ...progress });
    }
    return { object: { metadata: { annotations } } };
  }

  /** True when the object as the API returned it after our write still holds the essence we wrote. */
  kept(object: KubernetesObject, essence: string): boolean {
    return this.#readOwn(object).essence === essence;
  }
}

/**
 * A stored progress record by handler id alone (by a gateway before records were kept by service, or
 * Kopf's): a record has a `started` time, where a service's entry is a map of records.
 */
function isLegacyRecord(value: unknown): value is Progress {
  return isObject(value) && typeof value.started === 'string';
}

/**
 * Stored progress as a ProgressMap: each service's records, and each record kept by id alone read as
 * that of every handler of that id bound now (one service's, but for two services that had the same id
 * before: the record they shared), so no handler runs again after an upgrade.
 */
function claimed(
  stored: Record<string, unknown> | undefined,
  handlers: readonly HandlerOwner[],
): Pick<StoredState, 'progress' | 'legacy'> {
  if (stored === undefined) return {};
  const progress: ProgressMap = {};
  // Bare: an entry of the stored map may be any key, `__proto__` included.
  const legacy = { claimed: [] as string[], unclaimed: bareRecord() as ProgressMap };
  for (const [entry, value] of Object.entries(stored)) {
    if (isLegacyRecord(value)) {
      // A sub-handler's record is `<id>#<sub>`: it goes with its parent, whose id may hold `#` too.
      const owners = handlers.filter(({ id }) => entry === id || entry.startsWith(`${id}#`));
      for (const { service } of owners) progress[progressKey(service, entry)] ??= value;
      if (owners.length > 0) legacy.claimed.push(entry);
      else legacy.unclaimed[entry] = value;
    } else if (isObject(value)) {
      for (const [key, record] of Object.entries(value)) {
        // Written in the new form, it wins over an old record of the same handler.
        if (isLegacyRecord(record)) progress[progressKey(entry, key)] = record;
      }
    }
  }
  const hasLegacy = legacy.claimed.length > 0 || Object.keys(legacy.unclaimed).length > 0;
  return { ...(Object.keys(progress).length > 0 ? { progress } : {}), ...(hasLegacy ? { legacy } : {}) };
}

/** The fields of a progress record (Progress). */
const RECORD_FIELDS = ['started', 'retries', 'delayedUntil', 'success', 'failure', 'message'] as const;

/**
 * Progress by service as a merge patch of the stored map that removes the records it claimed. A
 * service named as the id of a record kept by id alone (a handler `billing` of the service `billing`)
 * merges into that record: its fields are removed, lest they make the service's map read as a record.
 */
function replacingClaimed(
  progress: Record<string, ProgressMap>,
  legacy: NonNullable<StoredState['legacy']>,
): Record<string, unknown> {
  const patch: Record<string, unknown> = Object.fromEntries(legacy.claimed.map((key) => [key, null]));
  for (const [service, records] of Object.entries(progress)) {
    const overRecord = legacy.claimed.includes(service) || Object.hasOwn(legacy.unclaimed, service);
    patch[service] = overRecord
      ? { ...Object.fromEntries(RECORD_FIELDS.map((field) => [field, null])), ...records }
      : records;
  }
  return patch;
}

/** A ProgressMap as it is stored: `{<service>: {<key>: record}}`. */
function byService(progress: ProgressMap): Record<string, ProgressMap> {
  const stored: Record<string, ProgressMap> = {};
  for (const [key, record] of Object.entries(progress)) {
    const slash = key.indexOf('/');
    const service = key.slice(0, slash);
    stored[service] ??= {};
    stored[service][key.slice(slash + 1)] = record;
  }
  return stored;
}

function parseProgress(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return isObject(parsed) ? parsed : undefined;
  } catch {
    return undefined; // a damaged record counts as none: the handlers start over
  }
}

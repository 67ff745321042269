/**
 * Kopf's state on an object, read as Causeway's own handled-record, so that an operator moved from
 * Kopf to Causeway neither handles its objects again as new nor misses what changed in between.
 *
 * Kopf keeps, under its annotation prefix (`kopf.zalando.org` unless configured): the diff-base,
 * `<prefix>/last-handled-configuration`, a JSON of the essence it last handled; and while a change is
 * being handled, one progress record per handler, `<prefix>/<handler id>` (`/` in the id written as
 * `.`), JSON with `started`, `delayed`, `retries`, `success`, `failure`, `message`, `subrefs`. Kopf
 * before 1.44 also wrote the records under `status.kopf.progress`, which Kopf 1.45 still reads.
 * Pure logic, tested with records as Kopf 1.45 writes them.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import { isObject } from '../../protocol/json.ts';
import { essenceOf, serializeEssence } from './essence.ts';
import type { Progress, ProgressMap, StoredState } from './storage.ts';

export const KOPF_PREFIX = 'kopf.zalando.org';
const DIFF_BASE = 'last-handled-configuration';
/** Kopf marks the prefixes of its operators with it, and leaves marked prefixes out of its essence. */
const KOPF_MARKER = 'kopf-managed';
/** Kubernetes limits an annotation's name (after the prefix) to 63 characters. */
const NAME_LIMIT = 63;

export interface KopfContext {
  /** The prefix the Kopf operator kept its state under. */
  prefix: string;
  /** Causeway's own annotation prefix: its essence never holds those. */
  ownPrefix: string;
  /** The handlers whose progress to take over: Kopf's records are found by handler id. */
  handlerIds: readonly string[];
}

/** What Kopf recorded on the object, as Causeway's state; empty when Kopf recorded nothing. */
export function kopfState(object: KubernetesObject, context: KopfContext): StoredState {
  const essence = kopfEssence(object, context);
  const progress = kopfProgress(object, context);
  return { ...(essence === undefined ? {} : { essence }), ...(progress ? { progress } : {}) };
}

/**
 * Kopf's diff-base as Causeway's serialised essence, so that an object unchanged since Kopf handled it
 * compares equal to Causeway's essence of it (with `context.prefix` ignored, as adoption makes it).
 */
export function kopfEssence(object: KubernetesObject, context: KopfContext): string | undefined {
  const key = kopfKey(context.prefix, DIFF_BASE, object);
  const text = key === undefined ? undefined : object.metadata.annotations?.[key];
  const base = text === undefined ? undefined : parseJson(text);
  if (!isObject(base)) return undefined; // none, or damaged: the object is handled as new, as Kopf would
  const { metadata, ...rest } = base;
  const recorded = isObject(metadata) ? metadata : {};
  // The object as Kopf recorded it, its essence made by Causeway's rules: one definition of equal.
  const asRecorded: KubernetesObject = {
    ...rest,
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: {
      ...object.metadata,
      labels: stringsOf(recorded.labels),
      annotations: withKopfOmissions(stringsOf(recorded.annotations), object.metadata.annotations ?? {}),
    },
  };
  return serializeEssence(essenceOf(asRecorded, context.ownPrefix, context.prefix));
}

function stringsOf(value: unknown): Record<string, string> {
  return isObject(value) ? (value as Record<string, string>) : {};
}

/**
 * Kopf leaves out of its diff-base the annotations of every Kopf operator (prefixes it recognises as
 * Kopf's); Causeway keeps the other operators' ones. Taken as they are now, they compare unchanged:
 * Kopf never recorded them, so no change of them can be told.
 */
function withKopfOmissions(
  recorded: Record<string, string>,
  current: Record<string, string>,
): Record<string, string> {
  const kopfPrefixes = kopfMarkedPrefixes(Object.keys(current));
  const omitted = Object.entries(current).filter(
    ([key]) => !(key in recorded) && kopfPrefixes.has(prefixOf(key) ?? ''),
  );
  return { ...recorded, ...Object.fromEntries(omitted) };
}

/** The prefixes Kopf takes for a Kopf operator's: marked, or its default and any under it. */
function kopfMarkedPrefixes(keys: readonly string[]): Set<string> {
  const prefixes = new Set<string>();
  for (const key of keys) {
    const prefix = prefixOf(key);
    if (prefix === undefined) continue;
    const name = key.slice(prefix.length + 1);
    if (name === KOPF_MARKER || prefix === KOPF_PREFIX || prefix.endsWith(`.${KOPF_PREFIX}`))
      prefixes.add(prefix);
  }
  return prefixes;
}

function prefixOf(key: string): string | undefined {
  const slash = key.indexOf('/');
  return slash < 0 ? undefined : key.slice(0, slash);
}

/**
 * The progress of the given handlers (and their sub-handlers) as Kopf left it: in progress with its
 * retries and delay, or finished, so that a change Kopf was half-way through goes on where it was.
 */
export function kopfProgress(object: KubernetesObject, context: KopfContext): ProgressMap | undefined {
  const progress: ProgressMap = {};
  for (const id of context.handlerIds) {
    const record = kopfRecord(object, context.prefix, id);
    const adopted = record && progressOf(record);
    if (!adopted) continue;
    progress[id] = adopted;
    for (const subref of subrefsOf(record, id)) {
      const sub = kopfRecord(object, context.prefix, `${id}/${subref}`);
      const subProgress = sub && progressOf(sub);
      // Causeway keeps a sub-handler's progress under `<parent>#<sub>` (Kopf: `<parent>/<sub>`).
      if (subProgress) progress[`${id}#${subref}`] = subProgress;
    }
  }
  return Object.keys(progress).length > 0 ? progress : undefined;
}

/** One handler's record: from its annotation, else from `status.kopf.progress` (Kopf before 1.44). */
function kopfRecord(
  object: KubernetesObject,
  prefix: string,
  id: string,
): Record<string, unknown> | undefined {
  const key = kopfKey(prefix, id, object);
  const text = key === undefined ? undefined : object.metadata.annotations?.[key];
  const fromAnnotation = text === undefined ? undefined : parseJson(text);
  if (isObject(fromAnnotation)) return fromAnnotation;
  const kopf = object.status?.kopf;
  const inStatus = isObject(kopf) && isObject(kopf.progress) ? kopf.progress[id] : undefined;
  return isObject(inStatus) ? inStatus : undefined;
}

/** Kopf's record as Causeway's; undefined when it is not one Kopf could have written. */
function progressOf(record: Record<string, unknown>): Progress | undefined {
  const started = kopfTime(record.started);
  if (started === undefined) return undefined;
  const retries = typeof record.retries === 'number' ? record.retries : 0;
  const progress: Progress = { started, retries };
  if (record.success === true) return { ...progress, success: true };
  const message = typeof record.message === 'string' ? { message: record.message } : {};
  if (record.failure === true) return { ...progress, failure: true, ...message };
  const delayedUntil = kopfTime(record.delayed);
  return { ...progress, ...(delayedUntil ? { delayedUntil } : {}), ...message };
}

function subrefsOf(record: Record<string, unknown>, parent: string): string[] {
  if (!Array.isArray(record.subrefs)) return [];
  return record.subrefs
    .filter((subref): subref is string => typeof subref === 'string' && subref.startsWith(`${parent}/`))
    .map((subref) => subref.slice(parent.length + 1));
}

/**
 * The annotation Kopf keeps `key` in (its "v2" name, which Kopf always writes): `/` as `.`, `<` and
 * `>` as `_`. Names over 63 characters Kopf shortens with a BLAKE2b digest that Node cannot make:
 * undefined then, and such a handler starts over.
 */
function kopfKey(prefix: string, key: string, object: KubernetesObject): string | undefined {
  const marked = ownedByDeployment(object) ? `${key}-ofDRS` : key;
  if (marked.length > NAME_LIMIT) return undefined;
  return `${prefix}/${marked.replaceAll('/', '.').replace(/[<>]/g, '_')}`;
}

/**
 * Kubernetes copies a Deployment's annotations onto its ReplicaSets, so Kopf names its state on
 * those differently, lest the Deployment's overwrite it.
 */
function ownedByDeployment(object: KubernetesObject): boolean {
  return (
    object.kind === 'ReplicaSet' &&
    Array.isArray(object.metadata.ownerReferences) &&
    object.metadata.ownerReferences.some((owner) => isObject(owner) && owner.kind === 'Deployment')
  );
}

/** Kopf writes UTC times in ISO 8601: with `+00:00` in recent versions, with no zone in older ones. */
function kopfTime(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const zoned = /(Z|[+-]\d\d:?\d\d)$/.test(value) ? value : `${value}Z`;
  const time = Date.parse(zoned);
  return Number.isNaN(time) ? undefined : new Date(time).toISOString();
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

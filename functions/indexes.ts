/**
 * Kopf's in-memory indexes, as the SDK sees them: declared with `op.index` (a function the gateway
 * calls in batches of objects, or a declarative key and value it computes itself), and received by
 * the handlers that name them in their `indexes` option, as read-only maps of key to values.
 */
import type { IndexContents, IndexDefinition, IndexEntries, ObjectPart, Outcome } from '../protocol/index.ts';
import { deepFreeze, isObject } from '../protocol/json.ts';
import { OPTIONS } from '../protocol/schema/checks.ts';
import { asJson } from './json.ts';

/**
 * An index as a handler receives it: each key with the values indexed under it (never an empty list),
 * the key null for the values of functions that return something other than a plain object.
 */
export type Index<Value = unknown> = ReadonlyMap<string | null, readonly Value[]>;

/** Where a declarative index reads: a dotted field path, or a label or annotation by name. */
export type IndexPart = string | ObjectPart;

/** `op.index(resource, { id }, { key, value })`: the declarative form, computed by the gateway without a call. */
export interface IndexDefinitionOptions {
  /** The part, or parts joined with "/", that make an object's key; without one, all go under null. */
  key?: IndexPart | IndexPart[];
  /** The part, or a list of parts, whose values are indexed; the object's "namespace/name" without one. */
  value?: IndexPart | IndexPart[];
}

/**
 * An index's map, which refuses changes: one handler cannot change what another sees, and a gateway
 * in the same process gives every call the same contents until the index changes, made a map once.
 */
class IndexMap extends Map<string | null, readonly unknown[]> {
  constructor(contents: Readonly<IndexContents>) {
    super();
    for (const [key, values] of contents) Map.prototype.set.call(this, key, values);
  }

  override set(): never {
    throw new TypeError('an index is read-only');
  }

  override delete(): never {
    throw new TypeError('an index is read-only');
  }

  override clear(): never {
    throw new TypeError('an index is read-only');
  }
}

const mapsOfContents = new WeakMap<Readonly<IndexContents>, Index>();

type WithIndexes = { indexes?: Record<string, IndexContents>; indexVersions?: Record<string, string> };

/**
 * The indexes a service was sent whole, each at the version the gateway named: a later call that
 * names the same version only is given them, neither sent nor parsed again. One version per index,
 * the last one sent, and only the operator's own indexes (`declared`), so that no call can make it grow.
 */
export class KeptIndexes {
  readonly #declared: (id: string) => boolean;
  readonly #kept = new Map<string, { version: string; contents: Readonly<IndexContents> }>();

  constructor(declared: (id: string) => boolean) {
    this.#declared = declared;
  }

  /** The call with each index it names by version, or the ids of those this service does not have. */
  fill<Call extends WithIndexes>(call: Call): Call | { missing: string[] } {
    const versions = call.indexVersions;
    if (!versions) return call;
    const indexes = { ...call.indexes };
    const missing: string[] = [];
    for (const [id, version] of Object.entries(versions)) {
      const given = call.indexes?.[id];
      if (given) {
        if (this.#declared(id)) this.#kept.set(id, { version, contents: deepFreeze(given) });
      } else {
        const kept = this.#kept.get(id);
        if (kept?.version === version) indexes[id] = kept.contents as IndexContents;
        else missing.push(id);
      }
    }
    return missing.length > 0 ? { missing } : { ...call, indexes };
  }
}

/**
 * The request's indexes as maps, from its frozen contents: the same contents (as a gateway in this
 * process gives) make the same map.
 */
export function indexMaps(
  contents: Readonly<Record<string, Readonly<IndexContents>>> | undefined,
): Record<string, Index> {
  const maps: Record<string, Index> = {};
  for (const [id, entries] of Object.entries(contents ?? {})) {
    let map = mapsOfContents.get(entries);
    if (!map) {
      map = new IndexMap(entries);
      mapsOfContents.set(entries, map);
    }
    maps[id] = map;
  }
  return maps;
}

/** The indexes a handler declared, from those of its request (an index not sent is empty). */
export function declaredIndexes(
  maps: Record<string, Index>,
  declared: readonly string[] | undefined,
): Record<string, Index> {
  return Object.fromEntries((declared ?? []).map((id) => [id, maps[id] ?? new Map()]));
}

/**
 * What an index function returned, as its outcome: a plain object or a Map gives its entries (Kopf's
 * dict), anything else is one value under the key null; undefined and null keep the object's values.
 */
export function indexOutcome(returned: unknown): Outcome {
  if (returned === undefined || returned === null) return { status: 'success' };
  let entries: IndexEntries;
  try {
    if (returned instanceof Map) {
      entries = [...returned].map(([key, value]) => [indexKey(key), asJson(value ?? null)]);
    } else if (isPlainObject(returned)) {
      entries = Object.entries(returned).map(([key, value]) => [key, asJson(value ?? null)]);
    } else {
      entries = [[null, asJson(returned)]];
    }
  } catch (error) {
    return { status: 'permanent', message: `the index value is not JSON: ${(error as Error).message}` };
  }
  return { status: 'success', result: entries };
}

function indexKey(key: unknown): string | null {
  if (key === null || typeof key === 'string') return key;
  throw new TypeError(`a Map returned by an index function has a key that is not a string: ${String(key)}`);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (!isObject(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** The declarative definition, checked. */
export function indexDefinition(where: string, definition: IndexDefinitionOptions): IndexDefinition {
  const unknown = Object.keys(definition).filter((name) => name !== 'key' && name !== 'value');
  if (unknown.length > 0) {
    throw new TypeError(`${where}: an index definition has a key and a value, not "${unknown.join('", "')}"`);
  }
  const { key, value } = definition;
  return {
    ...(key === undefined
      ? {}
      : { key: (Array.isArray(key) ? key : [key]).map((part) => objectPart(where, 'key', part)) }),
    ...(value === undefined
      ? {}
      : {
          value: Array.isArray(value)
            ? value.map((part) => objectPart(where, 'value', part))
            : objectPart(where, 'value', value),
        }),
  };
}

function objectPart(where: string, option: string, part: unknown): ObjectPart {
  if (typeof part === 'string' && part !== '') return { field: part };
  if (isObject(part)) {
    const names = Object.keys(part);
    const [name] = names;
    if (names.length === 1 && (name === 'field' || name === 'label' || name === 'annotation')) {
      const text = part[name];
      if (typeof text === 'string' && text !== '') return { [name]: text } as ObjectPart;
    }
  }
  throw new TypeError(
    `${where}: option "${option}" takes field paths ('spec.nodeName'), { label: 'app' } or ` +
      `{ annotation: 'note' }, or a list of them; got ${JSON.stringify(part)}`,
  );
}

/** Checks the `indexes` option: a list of index ids. */
export function checkIndexesOption(where: string, indexes: unknown): void {
  if (indexes !== undefined && !OPTIONS.indexes.test(indexes)) {
    throw new TypeError(`${where}: option "indexes" must list the ids of this operator's indexes`);
  }
}

/**
 * Every index a handler names must be one of the operator's: said when the manifest is first asked
 * for, since handlers may be registered before the indexes they read.
 */
export function checkIndexesDeclared(
  readers: Iterable<{ id: string; options?: { indexes?: string[] } }>,
  indexIds: ReadonlySet<string>,
): void {
  for (const { id, options } of readers) {
    for (const name of options?.indexes ?? []) {
      if (!indexIds.has(name)) {
        throw new Error(
          `handler "${id}" reads index "${name}", which this operator does not declare ` +
            `(declared: ${[...indexIds].join(', ') || 'none'}); register it with op.index`,
        );
      }
    }
  }
}

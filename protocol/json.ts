/**
 * Helpers for plain JSON values, shared by the SDK and the gateway on every runtime, so that what the
 * SDK filters on and what the gateway filters on can never disagree. Only own properties count: a JSON
 * value has no others, and `constructor` in a field path must not reach the prototype.
 */

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Equality of JSON values: objects key by key, arrays item by item. */
export function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => equal(item, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length &&
      keys.every((key) => Object.hasOwn(b, key) && equal(a[key], b[key]))
    );
  }
  return false;
}

/** The value at a dotted path (`spec.replicas`), or undefined when any part of the way is missing. */
export function valueAt(value: unknown, dotted: string): unknown {
  let current = value;
  for (const key of dotted.split('.')) {
    if (!isObject(current) || !Object.hasOwn(current, key)) return undefined;
    current = current[key];
  }
  return current;
}

/**
 * A record with no prototype holding `from`'s own keys: a key that came over the wire (`__proto__`,
 * `constructor`) is only ever a key of it, and nothing of Object.prototype reads as one of its keys.
 */
export function bareRecord(from?: Record<string, unknown>): Record<string, unknown> {
  const record: Record<string, unknown> = Object.create(null);
  if (from) for (const key of Object.keys(from)) record[key] = from[key];
  return record;
}

/**
 * `target` with a JSON merge patch (RFC 7386) applied: objects merge key by key, `null` removes. The
 * objects it makes are bare records: only own keys are copied, none is assigned to a prototype.
 */
export function mergePatched(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const result = bareRecord(isObject(target) ? target : undefined);
  for (const key of Object.keys(patch)) {
    const value = patch[key];
    if (value === null) delete result[key];
    else result[key] = mergePatched(result[key], value);
  }
  return result;
}

/**
 * A deep copy as the wire would make one (JSON out and in): what a service in the same process is
 * given, as one across a network would be. For such small trees, faster than structuredClone.
 */
export function jsonCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Freezes a tree of plain values in place, and returns it; a frozen node's children are taken as frozen. */
export function deepFreeze<T>(value: T): Readonly<T> {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/** What crosses the wire must be plain JSON: these helpers check it and walk it. */

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** JSON.stringify drops functions and symbols silently; a value that would lose parts must fail loudly instead. */
export function asJson(value: unknown): unknown {
  const text = JSON.stringify(value, (key, item) => {
    const type = typeof item;
    if (type === 'function' || type === 'symbol' || type === 'bigint') {
      throw new TypeError(`${key ? `"${key}" is` : 'it is'} a ${type}, which JSON cannot hold`);
    }
    return item;
  });
  if (text === undefined) throw new TypeError('it has no JSON form');
  return JSON.parse(text);
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

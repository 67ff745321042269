/**
 * Differences between two essences, as Kopf reports them: objects are compared key by key, everything
 * else (arrays included) as whole values.
 */
import type { DiffItem } from '../../protocol/index.ts';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function diff(old: unknown, current: unknown, path: string[] = []): DiffItem[] {
  if (old === undefined && current === undefined) return [];
  if (old === undefined) return [['add', path, undefined, current]];
  if (current === undefined) return [['remove', path, old, undefined]];
  if (isObject(old) && isObject(current)) {
    const keys = [...new Set([...Object.keys(old), ...Object.keys(current)])].sort();
    return keys.flatMap((key) => diff(old[key], current[key], [...path, key]));
  }
  return equal(old, current) ? [] : [['change', path, old, current]];
}

export function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((item, i) => equal(item, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => key in b && equal(a[key], b[key]));
  }
  return false;
}

/** The value at a dotted path (`spec.replicas`), or undefined when any part of the way is missing. */
export function valueAt(value: unknown, dotted: string): unknown {
  let current = value;
  for (const key of dotted.split('.')) {
    if (!isObject(current)) return undefined;
    current = current[key];
  }
  return current;
}

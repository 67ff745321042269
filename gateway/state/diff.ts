/**
 * Differences between two essences, as Kopf reports them: objects are compared key by key, everything
 * else (arrays included) as whole values.
 */
import type { DiffItem } from '../../protocol/index.ts';
import { equal, isObject } from '../../protocol/json.ts';

/** A key's value, own keys only: a spec's `toString` or `__proto__` that one side lacks is absent there. */
function own(value: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(value, key) ? value[key] : undefined;
}

export function diff(old: unknown, current: unknown, path: string[] = []): DiffItem[] {
  if (old === undefined && current === undefined) return [];
  if (old === undefined) return [['add', path, undefined, current]];
  if (current === undefined) return [['remove', path, old, undefined]];
  if (isObject(old) && isObject(current)) {
    const keys = [...new Set([...Object.keys(old), ...Object.keys(current)])].sort();
    return keys.flatMap((key) => diff(own(old, key), own(current, key), [...path, key]));
  }
  return equal(old, current) ? [] : [['change', path, old, current]];
}

/**
 * Differences between two essences, as Kopf reports them: objects are compared key by key, everything
 * else (arrays included) as whole values.
 */
import type { DiffItem } from '../../protocol/index.ts';
import { equal, isObject } from '../../protocol/json.ts';

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

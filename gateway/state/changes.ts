/**
 * What a cycle changes on an object, as data: merge patches of its status and of the rest, gathered
 * from the handlers' results and the gateway's own state, and the JSON Patches the gateway guards
 * finalizers with. kube/patcher.ts writes them.
 */
import { bareRecord, isObject } from '../../protocol/json.ts';

/** RFC 6902 operations, as the gateway uses them. */
export type JsonPatch = Array<{ op: 'add' | 'remove' | 'test' | 'replace'; path: string; value?: unknown }>;

export interface ObjectChanges {
  /** Merge patch for `status`. */
  status: Record<string, unknown>;
  /** Merge patch for the object outside `status`. */
  object: Record<string, unknown>;
}

export function emptyChanges(): ObjectChanges {
  return { status: bareRecord(), object: bareRecord() };
}

/**
 * Merges merge patch `patch` into merge patch `into`: later values win, `null` (removal) is kept. Only
 * own keys are read, and objects are copied as bare records, so that no key of a reply (`__proto__`)
 * reaches a prototype and no later merge changes the patch it came from.
 */
function mergePatches(into: Record<string, unknown>, patch: Record<string, unknown>): void {
  for (const key of Object.keys(patch)) {
    const value = patch[key];
    if (!isObject(value)) {
      into[key] = value;
      continue;
    }
    const existing = Object.hasOwn(into, key) ? into[key] : undefined;
    if (isObject(existing)) mergePatches(existing, value);
    else {
      const copy = bareRecord();
      mergePatches(copy, value);
      into[key] = copy;
    }
  }
}

/** Adds a whole-object merge patch (as handlers return it) to the changes, its `status` apart. */
export function addObjectPatch(changes: ObjectChanges, patch: Record<string, unknown>): void {
  const { status, ...rest } = patch;
  if (isObject(status)) mergePatches(changes.status, status);
  mergePatches(changes.object, rest);
}

/** A copy of the changes, to add to while these stay as they are. */
export function copiedChanges(changes: ObjectChanges): ObjectChanges {
  const copy = emptyChanges();
  mergePatches(copy.status, changes.status);
  mergePatches(copy.object, changes.object);
  return copy;
}

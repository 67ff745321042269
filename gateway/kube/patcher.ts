/**
 * Applies what a cycle produced in the fewest writes: one merge PATCH of `/status` when the status is
 * a subresource, one of the object, either skipped when empty, status first. So results go out
 * before, or with, the record that they were delivered: a crash between two writes can only repeat a
 * call, never lose a result.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import { bareRecord, isObject } from '../../protocol/json.ts';
import type { KubeClient } from './client.ts';
import { type DiscoveredResource, objectPath } from './discovery.ts';

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

/** Returns the object as the API answered the last write, or undefined when nothing was written. */
/**
 * Writes the changes as merge patches, the status first where it is a subresource. `guarded`, each
 * carries the resourceVersion it was computed from (the object's, then the first write's): the
 * apiserver refuses it (409) if anyone wrote the object meanwhile.
 */
export async function applyChanges(
  client: KubeClient,
  resource: DiscoveredResource,
  target: KubernetesObject,
  changes: ObjectChanges,
  fieldManager: string,
  guarded = false,
): Promise<KubernetesObject | undefined> {
  const path = objectPath(resource, target.metadata.name, target.metadata.namespace);
  const query = { fieldManager };
  const hasStatus = Object.keys(changes.status).length > 0;
  const hasObject = Object.keys(changes.object).length > 0;
  let written: KubernetesObject | undefined;
  const guard = <T extends object>(body: T): T => {
    if (!guarded) return body;
    const resourceVersion = (written ?? target).metadata.resourceVersion;
    const metadata = (body as { metadata?: object }).metadata;
    return { ...body, metadata: { ...metadata, resourceVersion } };
  };
  if (resource.subresources.includes('status')) {
    if (hasStatus)
      written = await client.patch(`${path}/status`, 'merge', guard({ status: changes.status }), query);
    if (hasObject) written = await client.patch(path, 'merge', guard(changes.object), query);
  } else if (hasStatus || hasObject) {
    const body = hasStatus ? { ...changes.object, status: changes.status } : changes.object;
    written = await client.patch(path, 'merge', guard(body), query);
  }
  return written;
}

export function applyJsonPatch(
  client: KubeClient,
  resource: DiscoveredResource,
  target: KubernetesObject,
  patch: JsonPatch,
  fieldManager: string,
): Promise<KubernetesObject> {
  const path = objectPath(resource, target.metadata.name, target.metadata.namespace);
  return client.patch(path, 'json', patch, { fieldManager });
}

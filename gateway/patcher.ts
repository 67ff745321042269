/**
 * Applies what a cycle produced in the fewest writes: one merge PATCH of the object, one of its
 * `/status` when the status is a subresource, either skipped when empty. Results go out before (or
 * with) the record that the object was handled, so a crash between the two can only repeat a call,
 * never lose a result.
 */
import type { KubernetesObject } from '../protocol/index.ts';
import type { KubeClient } from './kube/client.ts';
import { type DiscoveredResource, objectPath } from './kube/discovery.ts';

export interface ObjectChanges {
  /** Merge patch for `status` (results, and state kept in the status). */
  status: Record<string, unknown>;
  /** Merge patch for the object outside `status` (state kept in annotations). */
  object: Record<string, unknown>;
}

export function emptyChanges(): ObjectChanges {
  return { status: {}, object: {} };
}

/** Returns the object as the API answered the last write, or undefined when nothing was written. */
export async function applyChanges(
  client: KubeClient,
  resource: DiscoveredResource,
  target: KubernetesObject,
  changes: ObjectChanges,
  fieldManager: string,
): Promise<KubernetesObject | undefined> {
  const path = objectPath(resource, target.metadata.name, target.metadata.namespace);
  const query = { fieldManager };
  const hasStatus = Object.keys(changes.status).length > 0;
  const hasObject = Object.keys(changes.object).length > 0;
  let written: KubernetesObject | undefined;
  if (resource.subresources.includes('status')) {
    if (hasStatus) written = await client.patch(`${path}/status`, 'merge', { status: changes.status }, query);
    if (hasObject) written = await client.patch(path, 'merge', changes.object, query);
  } else if (hasStatus || hasObject) {
    const body = hasStatus ? { ...changes.object, status: changes.status } : changes.object;
    written = await client.patch(path, 'merge', body, query);
  }
  return written;
}

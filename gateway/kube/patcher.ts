/**
 * Applies what a cycle produced in the fewest writes: one merge PATCH of `/status` when the status is
 * a subresource, one of the object, either skipped when empty, status first. So results go out
 * before, or with, the record that they were delivered: a crash between two writes can only repeat a
 * call, never lose a result.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import type { JsonPatch, ObjectChanges } from '../state/changes.ts';
import type { KubeClient } from './client.ts';
import { type DiscoveredResource, objectPath } from './discovery.ts';
import { ApiError, StaleWrite } from './errors.ts';

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

/** A JSON Patch of the object; one whose `test` failed throws StaleWrite. */
export async function applyJsonPatch(
  client: KubeClient,
  resource: DiscoveredResource,
  target: KubernetesObject,
  patch: JsonPatch,
  fieldManager: string,
): Promise<KubernetesObject> {
  const path = objectPath(resource, target.metadata.name, target.metadata.namespace);
  try {
    return await client.patch(path, 'json', patch, { fieldManager });
  } catch (error) {
    throw testFailed(error, patch)
      ? new StaleWrite(`${(error as Error).message} (a test of the patch failed: the object changed)`, {
          cause: error,
        })
      : error;
  }
}

/**
 * Whether a JSON Patch holding a `test` could not be applied to the object as it now is: the
 * apiserver's answer names no cause, only that the patch did not apply (unlike an object the patch
 * would make invalid, whose 422 says what is invalid).
 */
export function testFailed(error: unknown, patch: JsonPatch): boolean {
  return (
    error instanceof ApiError &&
    error.status === 422 &&
    error.message.endsWith(PATCH_NOT_APPLIED) &&
    patch.some((operation) => operation.op === 'test')
  );
}

const PATCH_NOT_APPLIED = 'the server rejected our request due to an error in our request';

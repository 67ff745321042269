/**
 * The gateway's finalizer holds an object back from deletion until its delete handlers have run. It is
 * added and removed with JSON patches guarded by the resourceVersion they were computed from, so a
 * concurrent change (another controller's finalizer, say) makes the patch fail rather than be lost.
 */
import type { KubernetesObject } from '../../protocol/index.ts';

export type JsonPatch = Array<{ op: 'add' | 'remove' | 'test' | 'replace'; path: string; value?: unknown }>;

export function hasFinalizer(object: KubernetesObject, finalizer: string): boolean {
  return object.metadata.finalizers?.includes(finalizer) ?? false;
}

export function addFinalizer(object: KubernetesObject, finalizer: string): JsonPatch {
  const guard = {
    op: 'test' as const,
    path: '/metadata/resourceVersion',
    value: object.metadata.resourceVersion,
  };
  return object.metadata.finalizers
    ? [guard, { op: 'add', path: '/metadata/finalizers/-', value: finalizer }]
    : [guard, { op: 'add', path: '/metadata/finalizers', value: [finalizer] }];
}

export function removeFinalizer(object: KubernetesObject, finalizer: string): JsonPatch {
  const index = object.metadata.finalizers?.indexOf(finalizer) ?? -1;
  if (index < 0) return [];
  return [
    { op: 'test', path: '/metadata/resourceVersion', value: object.metadata.resourceVersion },
    { op: 'test', path: `/metadata/finalizers/${index}`, value: finalizer },
    { op: 'remove', path: `/metadata/finalizers/${index}` },
  ];
}

/**
 * The gateway's finalizer holds an object back from deletion until its delete handlers have run. It is
 * added and removed with JSON patches guarded by the resourceVersion they were computed from, so a
 * concurrent change (another controller's finalizer, say) makes the patch fail rather than be lost.
 */
import type { KubernetesObject } from '../../protocol/index.ts';
import type { JsonPatch } from '../state/changes.ts';
import { objectMatches } from './filters.ts';
import type { Candidate, Cause } from './model.ts';

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

/**
 * The finalizer rule: an object needs ours while a delete handler that is not optional matches it, so a
 * deletion can never slip past the handlers, or a daemon does, so that it ends before the object goes.
 * Admission reuses it for objects it lets in.
 */
export function needsFinalizer<S>(object: KubernetesObject, candidates: readonly Candidate<S>[]): boolean {
  return candidates.some(
    ({ spec }) =>
      ((spec.kind === 'delete' && !spec.options?.optional) || spec.kind === 'daemon') &&
      objectMatches(object, spec.filters),
  );
}

/** The patch that puts our finalizer on before any handler runs, when the object needs it and lacks it. */
export function finalizerToAdd<S>(
  object: KubernetesObject,
  cause: Cause,
  candidates: readonly Candidate<S>[],
  finalizer: string,
): JsonPatch | undefined {
  if (cause.reason === 'delete' || hasFinalizer(object, finalizer) || !needsFinalizer(object, candidates))
    return undefined;
  return addFinalizer(object, finalizer);
}

/** The patch that takes off a finalizer of ours that nothing needs any more. */
export function finalizerToRelease<S>(
  object: KubernetesObject,
  cause: Cause,
  candidates: readonly Candidate<S>[],
  finalizer: string,
): JsonPatch | undefined {
  if (!hasFinalizer(object, finalizer)) return undefined;
  if (cause.reason !== 'delete' && needsFinalizer(object, candidates)) return undefined;
  return removeFinalizer(object, finalizer);
}

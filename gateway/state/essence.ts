/**
 * The "essence" of an object: what a user changes on purpose. Handled changes are detected by
 * comparing it with the essence stored when the object was last handled (Kopf's diff-base).
 * Status, system metadata, our own annotations and kubectl's bookkeeping are not part of it.
 */
import type { KubernetesObject } from '../../protocol/index.ts';

const KUBECTL_LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
const TOP_LEVEL_IGNORED = new Set(['apiVersion', 'kind', 'metadata', 'status']);

export type Essence = Record<string, unknown>;

/**
 * `adoptedPrefix`: the prefix of a Kopf operator whose state is adopted; its annotations are that
 * operator's bookkeeping, never a user's change (Kopf leaves them out of its own essence too).
 */
export function essenceOf(
  object: KubernetesObject,
  annotationPrefix: string,
  adoptedPrefix?: string,
): Essence {
  const essence: Essence = {};
  for (const [key, value] of Object.entries(object)) {
    if (!TOP_LEVEL_IGNORED.has(key)) essence[key] = value;
  }
  const metadata: Record<string, unknown> = {};
  const labels = object.metadata.labels;
  if (labels && Object.keys(labels).length > 0) metadata.labels = labels;
  const ignored = adoptedPrefix === undefined ? [annotationPrefix] : [annotationPrefix, adoptedPrefix];
  const annotations = Object.fromEntries(
    Object.entries(object.metadata.annotations ?? {}).filter(
      ([key]) => key !== KUBECTL_LAST_APPLIED && !ignored.some((prefix) => key.startsWith(`${prefix}/`)),
    ),
  );
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  if (Object.keys(metadata).length > 0) essence.metadata = metadata;
  return essence;
}

/** Serialised with sorted keys, so equal essences are equal strings whatever the key order. */
export function serializeEssence(essence: Essence): string {
  return JSON.stringify(essence, (_key, value: unknown) =>
    value && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : value,
  );
}

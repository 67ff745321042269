/**
 * Predicts whether a CRD's structural schema would prune a field we write under `status`, so the
 * gateway can choose where to keep its state before the first write instead of losing it.
 */

export interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
}

/** True when `status.<key>` (any object under it) survives pruning. */
export function statusKeeps(root: JsonSchema | undefined, key: string): boolean {
  if (!root) return true; // no schema at all: nothing is pruned
  const status = root.properties?.status;
  if (!status) return root['x-kubernetes-preserve-unknown-fields'] === true;
  if (status['x-kubernetes-preserve-unknown-fields'] === true) return true;
  const field = status.properties?.[key] ?? mapValues(status);
  if (!field) return false;
  return field['x-kubernetes-preserve-unknown-fields'] === true || mapValues(field) !== undefined;
}

function mapValues(schema: JsonSchema): JsonSchema | undefined {
  const additional = schema.additionalProperties;
  if (additional === true) return {};
  return typeof additional === 'object' ? additional : undefined;
}

interface CustomResourceDefinition {
  spec: { versions: Array<{ name: string; schema?: { openAPIV3Schema?: JsonSchema } }> };
}

export function versionSchema(crd: CustomResourceDefinition, version: string): JsonSchema | undefined {
  return crd.spec.versions.find((candidate) => candidate.name === version)?.schema?.openAPIV3Schema;
}

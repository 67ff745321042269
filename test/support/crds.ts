/** Test-only CRDs in groups of their own, so tests never change the resources other tests use. */
import { randomBytes } from 'node:crypto';
import type { KubernetesObject } from '../../protocol/index.ts';

export interface TestKind {
  group: string;
  kind: string;
  plural: string;
  /** `Namespaced` unless told otherwise. */
  scope?: 'Namespaced' | 'Cluster';
  /** `spec.names.categories`: none unless given. */
  categories?: string[];
}

/** A fresh group name, e.g. `late1a2b3c4d.causeway.test`. */
export function uniqueGroup(prefix: string): string {
  return `${prefix}${randomBytes(4).toString('hex')}.causeway.test`;
}

const ANYTHING = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };

/**
 * A v1 CRD with a status subresource, namespaced unless `kind.scope` says `Cluster`; the schema keeps
 * anything unless one is given.
 */
export function customResourceDefinition(kind: TestKind, schema: object = ANYTHING): KubernetesObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${kind.plural}.${kind.group}` },
    spec: {
      group: kind.group,
      scope: kind.scope ?? 'Namespaced',
      names: {
        kind: kind.kind,
        plural: kind.plural,
        singular: kind.kind.toLowerCase(),
        ...(kind.categories ? { categories: kind.categories } : {}),
      },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: schema },
        },
      ],
    },
  } as unknown as KubernetesObject;
}

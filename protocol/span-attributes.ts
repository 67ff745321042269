/**
 * What the gateway's spans and the SDK's say of the object a cycle or a call is about, in the same
 * words on both sides of a trace: OpenTelemetry's semantic conventions where they have one
 * (`k8s.namespace.name`), `causeway.*` otherwise.
 */

/** `causeway.resource` (plural.group, the plural alone for the core group), `causeway.object` (ns/name). */
export function subjectAttributes(
  resource: { group: string; plural: string },
  object: { metadata: { name: string; namespace?: string | undefined } } | undefined,
): Record<string, string> {
  const attributes: Record<string, string> = {
    'causeway.resource': resource.group ? `${resource.plural}.${resource.group}` : resource.plural,
  };
  if (!object) return attributes;
  const { namespace, name } = object.metadata;
  attributes['causeway.object'] = namespace ? `${namespace}/${name}` : name;
  if (namespace) attributes['k8s.namespace.name'] = namespace;
  return attributes;
}

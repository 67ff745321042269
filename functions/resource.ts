import type { ResourceSelector } from '../protocol/index.ts';

/** What a handler is declared for: a name as kubectl takes it (`'kopfexamples.kopf.dev'`, `'kex'`, `'KopfExample'`) or a selector. */
export type Resource = string | ResourceSelector;

export function selectResource(resource: Resource): ResourceSelector {
  if (typeof resource === 'string') {
    const dot = resource.indexOf('.');
    // kubectl reads `plural.group`: everything after the first dot is the group.
    const selector =
      dot < 0 ? { name: resource } : { group: resource.slice(dot + 1), name: resource.slice(0, dot) };
    return checked(selector, resource);
  }
  if (typeof resource !== 'object' || resource === null) {
    throw new TypeError(
      `a resource is a name like 'kopfexamples' or { group, version, name }, got ${String(resource)}`,
    );
  }
  const { group, version, name } = resource;
  return checked(
    {
      ...(group === undefined ? {} : { group }),
      ...(version === undefined ? {} : { version }),
      name,
    },
    JSON.stringify(resource),
  );
}

function checked(selector: ResourceSelector, given: string): ResourceSelector {
  for (const [field, value] of Object.entries(selector)) {
    if (typeof value !== 'string' || value === '') {
      throw new TypeError(`resource ${given}: "${field}" must be a non-empty string`);
    }
  }
  return selector;
}

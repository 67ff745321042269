import { type HandlerKind, isAdmissionKind, type ResourceSelector } from '../protocol/index.ts';

/**
 * What a handler is declared for: a name as kubectl takes it (`'kopfexamples.kopf.dev'`, `'kex'`,
 * `'KopfExample'`), EVERYTHING (`'*'`, or `'*.kopf.dev'` for one group), or a selector:
 * `{ group, version, name }`, or `{ category }` for every resource in a category (`'all'`, or one
 * CRDs list in `spec.names.categories`), with `group` and `version` to narrow it.
 */
export type Resource = string | ResourceSelector;

/**
 * Kopf's EVERYTHING: every resource the cluster serves that can be listed and watched, in the group
 * (and version) given if any, as in `on.event(EVERYTHING, …)` or `on.event({ group: 'kopf.dev', name:
 * EVERYTHING }, …)`. Events are excepted (the gateway posts them about what it handles): name them
 * to handle them. Best narrowed with filters, and the gateway needs RBAC to watch all it selects.
 */
export const EVERYTHING = '*';

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
      `a resource is a name like 'kopfexamples', EVERYTHING, { group, version, name } or { group, version, category }, got ${String(resource)}`,
    );
  }
  const { group, version, name, category } = resource;
  const given = JSON.stringify(resource);
  if ((name === undefined) === (category === undefined)) {
    throw new TypeError(
      `resource ${given}: give a "name" or a "category", ${name === undefined ? 'not neither' : 'not both'}`,
    );
  }
  const narrowing = {
    ...(group === undefined ? {} : { group }),
    ...(version === undefined ? {} : { version }),
  };
  // The core group is '' (as in `{ group: '', name: EVERYTHING }`): only the string form cannot say it.
  return checked(
    category === undefined ? { ...narrowing, name } : { ...narrowing, category },
    given,
    group === '',
  );
}

/** The resources a handler of `kind` is for: admission handlers review named ones or a category. */
export function resourceFor(where: string, kind: HandlerKind, resource: Resource): ResourceSelector {
  const selector = selectResource(resource);
  if (isAdmissionKind(kind) && selector.name === EVERYTHING) {
    // Its webhook would stand in front of every write of the cluster (Leases, the control plane's own).
    throw new TypeError(
      `${where}: an admission handler cannot review EVERYTHING: name the resources, or a category`,
    );
  }
  return selector;
}

function checked(selector: ResourceSelector, given: string, coreGroup = false): ResourceSelector {
  for (const [field, value] of Object.entries(selector)) {
    if (field === 'group' && coreGroup) continue;
    if (typeof value !== 'string' || value === '') {
      throw new TypeError(`resource ${given}: "${field}" must be a non-empty string`);
    }
  }
  if (selector.name?.includes(EVERYTHING) && selector.name !== EVERYTHING) {
    throw new TypeError(`resource ${given}: a name is a name or EVERYTHING ('*'), not a pattern`);
  }
  return selector;
}

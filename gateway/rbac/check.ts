/**
 * `causeway rbac --check`'s comparison: the rules `rbacFor` generates, split into single permissions,
 * against the rules the cluster grants in a namespace (a SelfSubjectRulesReview's). Pure: granted.ts
 * asks the cluster.
 */
import type { NamespacedName, PolicyRule, RbacObject } from './rbac.ts';

/** One verb on one resource (`plural` or `plural/subresource`) of one group, maybe by name. */
export interface Permission {
  /** Where a Role grants it; undefined: a ClusterRole, cluster-wide. */
  namespace?: string;
  group: string;
  resource: string;
  verb: string;
  /** The object it is limited to; undefined: every object (and list, watch, create need that). */
  name?: string;
}

/**
 * Every permission the Roles and ClusterRoles among `objects` bound to `account` grant, one per group,
 * resource, verb, name: the gateway's, not those of the services' accounts it impersonates.
 */
export function permissionsOf(objects: readonly RbacObject[], account: NamespacedName): Permission[] {
  const bound = new Set<string>();
  for (const object of objects) {
    if (object.kind !== 'RoleBinding' && object.kind !== 'ClusterRoleBinding') continue;
    const { namespace, name } = account;
    if (!object.subjects.some((subject) => subject.namespace === namespace && subject.name === name))
      continue;
    const where = object.kind === 'RoleBinding' ? object.metadata.namespace : '';
    bound.add(`${object.roleRef.kind}/${where}/${object.roleRef.name}`);
  }
  const permissions: Permission[] = [];
  for (const object of objects) {
    if (object.kind !== 'Role' && object.kind !== 'ClusterRole') continue;
    if (!bound.has(`${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`)) continue;
    const where = object.kind === 'Role' ? { namespace: object.metadata.namespace } : {};
    for (const rule of object.rules) {
      for (const group of rule.apiGroups)
        for (const resource of rule.resources)
          for (const verb of rule.verbs)
            for (const name of rule.resourceNames ?? [undefined])
              permissions.push({ ...where, group, resource, verb, ...(name === undefined ? {} : { name }) });
    }
  }
  return permissions;
}

/** Whether `rule` grants `permission`, as the RBAC authorizer matches: `*` is any group, resource, verb. */
export function grants(rule: PolicyRule, permission: Permission): boolean {
  const names = rule.resourceNames ?? [];
  return (
    matches(rule.apiGroups, permission.group) &&
    rule.resources.some((resource) => resourceMatches(resource, permission.resource)) &&
    matches(rule.verbs, permission.verb) &&
    (names.length === 0 || (permission.name !== undefined && names.includes(permission.name)))
  );
}

const matches = (granted: readonly string[], wanted: string) =>
  granted.includes('*') || granted.includes(wanted);

/** `*` is every resource and subresource; `*∕status` the status of every resource. */
function resourceMatches(granted: string, wanted: string): boolean {
  if (granted === '*' || granted === wanted) return true;
  const subresource = wanted.split('/')[1];
  return subresource !== undefined && granted === `*/${subresource}`;
}

export interface Comparison {
  /** The permissions wanted that no granted rule gives. */
  missing: Permission[];
  /**
   * Information: what granted rules give beyond what is wanted on the same resources, in the same
   * namespaces: another verb, every object where only some are wanted by name, or another name.
   */
  extra: Permission[];
}

/** `wanted` against the rules granted in each of their namespaces; only the namespaced ones are compared. */
export function compare(
  wanted: readonly Permission[],
  grantedIn: ReadonlyMap<string, readonly PolicyRule[]>,
): Comparison {
  const namespaced = wanted.filter(
    (permission): permission is Permission & { namespace: string } => permission.namespace !== undefined,
  );
  const missing = namespaced.filter(
    (permission) => !(grantedIn.get(permission.namespace) ?? []).some((rule) => grants(rule, permission)),
  );
  const extra: Permission[] = [];
  for (const [namespace, rules] of grantedIn) {
    const here = namespaced.filter((permission) => permission.namespace === namespace);
    for (const { group, resource } of unique(here.map(({ group, resource }) => ({ group, resource })))) {
      const onResource = here.filter((each) => each.group === group && each.resource === resource);
      for (const rule of rules) {
        if (
          !matches(rule.apiGroups, group) ||
          !rule.resources.some((each) => resourceMatches(each, resource))
        )
          continue;
        for (const verb of rule.verbs) {
          const wantedVerb = onResource.filter((each) => each.verb === verb);
          for (const name of rule.resourceNames?.length ? rule.resourceNames : [undefined]) {
            // Beyond what is wanted: a verb not wanted, every object where only names are, another name.
            const beyond = !wantedVerb.some((each) => each.name === undefined || each.name === name);
            if (beyond)
              extra.push({ namespace, group, resource, verb, ...(name === undefined ? {} : { name }) });
          }
        }
      }
    }
  }
  return { missing, extra: unique(extra) };
}

function unique<T>(items: readonly T[]): T[] {
  const byKey = new Map(items.map((item) => [JSON.stringify(item), item]));
  return [...byKey.values()];
}

/** `patch kopfexamples.kopf.dev/status in operators`, `get secrets "keys" in operators`, `… cluster-wide`. */
export function describePermission({ namespace, group, resource, verb, name }: Permission): string {
  const [plural, subresource] = resource.split('/');
  const qualified = `${plural}${group ? `.${group}` : ''}${subresource ? `/${subresource}` : ''}`;
  const named = name === undefined ? '' : ` "${name}"`;
  return `${verb} ${qualified}${named} ${namespace === undefined ? 'cluster-wide' : `in ${namespace}`}`;
}

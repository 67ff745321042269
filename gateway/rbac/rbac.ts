/**
 * `causeway rbac`'s rules: the least privilege a gateway needs, computed from what it serves (the
 * resources its services' handlers name, the children their scopes let them apply) and from its flags
 * (namespaces, peering, keys, certificates, admission, FunctionService objects, dev sessions). A pure
 * function: cli/commands/rbac/command.ts reads the services and discovery, this says what the gateway
 * does with them.
 *
 * Each rule follows a call the gateway makes (deploy/examples/01-minimal/gateway/rbac.yaml and objects/rbac.yaml say which):
 * Roles where the calls stay in a namespace, a ClusterRole only for what is cluster-scoped or served
 * in every namespace.
 */

/** A resource as discovery resolved it: enough to say where a rule for it goes. */
export interface RbacResource {
  group: string;
  plural: string;
  namespaced: boolean;
  subresources: readonly string[];
}

export interface NamespacedName {
  namespace: string;
  name: string;
}

/** A function service whose children and events the gateway writes as its ServiceAccount (--impersonate). */
export interface ImpersonatedService {
  /** Its account: made, given a Role for what it writes, and the gateway the right to impersonate it. */
  account: NamespacedName;
  /** The resources its handlers watch: its events are about them, in their namespaces. */
  watched: readonly RbacResource[];
  /** The kinds its scope lets its answers apply. */
  children: readonly RbacResource[];
  /** Its scope's namespaces: exact names narrow where its rules go; undefined: those the gateway serves. */
  namespaces?: readonly string[];
}

export interface RbacRequest {
  /** The gateway's ServiceAccount, bound to every Role and ClusterRole made for it (not its services' accounts'). */
  account: NamespacedName;
  /** The resources the handlers name: watched, read, patched, with their status. */
  watched: readonly RbacResource[];
  /**
   * The kinds the services' scopes let their answers apply (`*`: every namespaced kind discovery
   * knows), which the gateway applies with its own rights; none under --impersonate.
   */
  children: readonly RbacResource[];
  /**
   * Under --impersonate: the services, each written as its account, which gets the Roles for its
   * children and events; the gateway gets the right to impersonate exactly these accounts.
   */
  impersonated?: readonly ImpersonatedService[];
  /** The namespaces served (--namespace): names, globs or negations; undefined: every namespace. */
  namespaces?: readonly string[];
  /** annotations: the gateway never reads a CRD to see whether the status keeps its state. */
  stateIn: 'auto' | 'annotations';
  /** Where its Leases of peering live; undefined when it runs standalone. */
  peeringNamespace?: string;
  /** Its Secret of signing keys, and the ConfigMap of the same name it publishes (--signing-keys). */
  signingKeys?: NamespacedName;
  /** The Secret of the CA of function services' certificates (--function-certificates). */
  functionCertificates?: NamespacedName;
  /** The Secrets it issues services' serving certificates into (--function-tls). */
  functionTls: readonly NamespacedName[];
  /** The namespace of the FunctionService objects it serves (--function-services). */
  functionServices?: string;
  /** The namespace whose Leases hold dev sessions, which it watches (--dev-sessions). */
  devSessions?: string;
  /** Secrets it reads only: the shared secrets FunctionService objects name (`spec.secretRef`). */
  readSecrets?: readonly NamespacedName[];
  /** Set when a handler validates or mutates: the gateway keeps webhook configurations. */
  admission?: {
    /** The configurations' name: the annotation prefix. */
    configurationName: string;
    /** --webhook-certificates: this Secret and its CA's (`<name>-ca`). */
    certificates?: NamespacedName;
    /** --ngrok-authtoken-secret, read. */
    ngrokAuthtoken?: NamespacedName;
  };
}

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  resourceNames?: string[];
  verbs: string[];
}

interface Metadata {
  name: string;
  namespace?: string;
  labels: Record<string, string>;
}

export type RbacObject =
  | { apiVersion: 'v1'; kind: 'ServiceAccount'; metadata: Metadata }
  | { apiVersion: typeof RBAC_VERSION; kind: 'Role' | 'ClusterRole'; metadata: Metadata; rules: PolicyRule[] }
  | {
      apiVersion: typeof RBAC_VERSION;
      kind: 'RoleBinding' | 'ClusterRoleBinding';
      metadata: Metadata;
      roleRef: { apiGroup: 'rbac.authorization.k8s.io'; kind: 'Role' | 'ClusterRole'; name: string };
      subjects: Array<{ kind: 'ServiceAccount'; name: string; namespace: string }>;
    };

const RBAC_VERSION = 'rbac.authorization.k8s.io/v1';
const LABELS = {
  'app.kubernetes.io/name': 'causeway-gateway',
  'app.kubernetes.io/component': 'gateway',
  'app.kubernetes.io/part-of': 'causeway',
};
/** The labels of a function service's account and rules, named after the account. */
const serviceLabels = (account: NamespacedName) => ({
  'app.kubernetes.io/name': account.name,
  'app.kubernetes.io/component': 'function-service',
  'app.kubernetes.io/part-of': 'causeway',
});
/** Where the gateway posts Events about a cluster-scoped object (kube/events.ts). */
const CLUSTER_EVENTS_NAMESPACE = 'default';

/** Rules by where they apply: a namespace, or the cluster (`undefined`). */
class Grants {
  readonly #namespaced = new Map<string, PolicyRule[]>();
  readonly #cluster: PolicyRule[] = [];

  add(where: string | undefined, rule: PolicyRule): void {
    if (where === undefined) {
      this.#cluster.push(rule);
      return;
    }
    const rules = this.#namespaced.get(where) ?? [];
    rules.push(rule);
    this.#namespaced.set(where, rules);
  }

  /** In each namespace served, or once cluster-wide when every namespace (or a pattern of them) is. */
  addServed(served: readonly string[] | undefined, rule: PolicyRule): void {
    if (served === undefined) this.add(undefined, rule);
    else for (const namespace of served) this.add(namespace, rule);
  }

  namespaces(): Array<[string, PolicyRule[]]> {
    return [...this.#namespaced]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([ns, rules]) => [ns, merged(rules)]);
  }

  cluster(): PolicyRule[] {
    return merged(this.#cluster);
  }
}

/** The names of `patterns` when they are all exact; undefined for none or a pattern (which serves namespaces as they come). */
function exactNames(patterns: readonly string[] | undefined): string[] | undefined {
  return patterns?.every((pattern) => !/[*?!]/.test(pattern)) ? [...new Set(patterns)] : undefined;
}

/** The ServiceAccount, Roles, ClusterRole and their bindings, in the order `kubectl apply` wants them. */
export function rbacFor(request: RbacRequest): RbacObject[] {
  const grants = new Grants();
  const served = exactNames(request.namespaces);
  if (request.namespaces && !served) {
    grants.add(undefined, rule('', ['namespaces'], ['list', 'watch']));
  }
  const where = (resource: RbacResource) => (resource.namespaced ? served : undefined);
  const addWhere = (resource: RbacResource, each: PolicyRule) => grants.addServed(where(resource), each);

  for (const resource of request.watched) {
    addWhere(resource, rule(resource.group, [resource.plural], ['get', 'list', 'watch', 'patch']));
    if (resource.subresources.includes('status')) {
      addWhere(resource, rule(resource.group, [`${resource.plural}/status`], ['patch']));
      // binding/pipelines.ts stateLocation: only a custom resource's definition says what its status keeps.
      if (request.stateIn === 'auto' && resource.group.includes('.')) {
        grants.add(undefined, {
          ...rule('apiextensions.k8s.io', ['customresourcedefinitions'], ['get']),
          resourceNames: [`${resource.plural}.${resource.group}`],
        });
      }
    }
  }
  if (request.watched.length > 0) {
    grants.addServed(served, rule('', ['events'], ['create']));
    if (served && request.watched.some((resource) => !resource.namespaced)) {
      grants.add(CLUSTER_EVENTS_NAMESPACE, rule('', ['events'], ['create']));
    }
  }

  // Server-side apply: patch, and create for a child not there yet; get, to apply over an object only
  // if the handled object owns it (dispatch/scope.ts).
  const applied = ['get', 'create', 'patch'];
  for (const child of request.children) addWhere(child, rule(child.group, [child.plural], applied));

  if (request.peeringNamespace !== undefined) {
    grants.add(
      request.peeringNamespace,
      rule('coordination.k8s.io', ['leases'], ['get', 'list', 'create', 'update', 'delete']),
    );
  }

  // Secrets and ConfigMaps it keeps: read and replaced by name, made when missing (RBAC cannot limit
  // a create to a name).
  const kept = (resource: 'secrets' | 'configmaps', { namespace, name }: NamespacedName) => {
    grants.add(namespace, { ...rule('', [resource], ['get', 'update']), resourceNames: [name] });
    grants.add(namespace, rule('', [resource], ['create']));
  };
  if (request.signingKeys) {
    kept('secrets', request.signingKeys);
    kept('configmaps', request.signingKeys);
  }
  if (request.functionCertificates) kept('secrets', request.functionCertificates);
  for (const secret of request.functionTls) kept('secrets', secret);

  if (request.functionServices !== undefined) {
    grants.add(
      request.functionServices,
      rule('causeway.dev', ['functionservices'], ['get', 'list', 'watch']),
    );
    grants.add(request.functionServices, rule('causeway.dev', ['functionservices/status'], ['patch']));
  }

  // services/dev-sessions.ts: a Watcher of the sessions' Leases, which it only reads.
  if (request.devSessions !== undefined) {
    grants.add(request.devSessions, rule('coordination.k8s.io', ['leases'], ['list', 'watch']));
  }

  for (const { namespace, name } of request.readSecrets ?? []) {
    grants.add(namespace, { ...rule('', ['secrets'], ['get']), resourceNames: [name] });
  }

  const { admission } = request;
  if (admission) {
    const configurations = ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations'];
    grants.add(undefined, {
      ...rule('admissionregistration.k8s.io', configurations, ['patch', 'delete']),
      resourceNames: [admission.configurationName],
    });
    grants.add(undefined, rule('admissionregistration.k8s.io', configurations, ['create']));
    if (admission.certificates) {
      kept('secrets', admission.certificates);
      kept('secrets', { ...admission.certificates, name: `${admission.certificates.name}-ca` });
    }
    if (admission.ngrokAuthtoken) {
      const { namespace, name } = admission.ngrokAuthtoken;
      grants.add(namespace, { ...rule('', ['secrets'], ['get']), resourceNames: [name] });
    }
  }

  const accounts = impersonatedAccounts(request, served, grants);
  return [
    ...objectsOf(request.account, grants, roleNames(request.account, false), LABELS),
    ...[...accounts.values()].flatMap(({ account, grants: rules }) =>
      objectsOf(account, rules, roleNames(account, true), serviceLabels(account)),
    ),
  ];
}

/**
 * Under --impersonate, each service's account with the rules of what it writes, where it writes it:
 * create, get and patch of its children kinds (server-side apply creates with a patch, which needs
 * both; get, as a child is read as its account before it is applied, to change only its own) and
 * create of events, in the namespaces both its scope and the gateway serve (in each one
 * named, cluster-wide when either is every namespace or a pattern). The gateway may impersonate each
 * account by name, in its namespace (a Role: a ServiceAccount of the same name elsewhere is not
 * granted), and no group: the apiserver gives an impersonated ServiceAccount its groups itself.
 */
function impersonatedAccounts(
  request: RbacRequest,
  gatewayServed: string[] | undefined,
  gatewayGrants: Grants,
): Map<string, { account: NamespacedName; grants: Grants }> {
  const accounts = new Map<string, { account: NamespacedName; grants: Grants }>();
  for (const service of request.impersonated ?? []) {
    const { account } = service;
    // One that watches nothing and applies nothing (admission only) writes nothing: nothing to impersonate.
    if (service.watched.length === 0 && service.children.length === 0) continue;
    if (account.namespace === request.account.namespace && account.name === request.account.name) {
      throw new Error(
        `a service is to be written as ${account.namespace}/${account.name}, the gateway's own account: impersonating it would lend the service the gateway's rights`,
      );
    }
    const key = `${account.namespace}/${account.name}`;
    let entry = accounts.get(key);
    if (!entry) {
      entry = { account, grants: new Grants() };
      accounts.set(key, entry);
      gatewayGrants.add(account.namespace, {
        ...rule('', ['serviceaccounts'], ['impersonate']),
        resourceNames: [account.name],
      });
    }
    const scoped = exactNames(service.namespaces);
    const served =
      scoped && gatewayServed
        ? scoped.filter((namespace) => gatewayServed.includes(namespace))
        : (scoped ?? gatewayServed);
    const { grants } = entry;
    for (const child of service.children) {
      grants.addServed(served, rule(child.group, [child.plural], ['create', 'get', 'patch']));
    }
    if (service.watched.length > 0) {
      grants.addServed(served, rule('', ['events'], ['create']));
      if (served && service.watched.some((resource) => !resource.namespaced)) {
        grants.add(CLUSTER_EVENTS_NAMESPACE, rule('', ['events'], ['create']));
      }
    }
  }
  return accounts;
}

/**
 * What an account's Roles and ClusterRole are called. Cluster-scoped names are shared by every
 * deployment: the account's namespace tells them apart. So are a service's Roles in the namespaces it
 * writes to, where another gateway's service of the same name may have its own.
 */
function roleNames(account: NamespacedName, service: boolean): { role: string; clusterRole: string } {
  const qualified = `${account.name}-${account.namespace}`;
  return { role: service ? qualified : account.name, clusterRole: qualified };
}

function rule(group: string, resources: string[], verbs: string[]): PolicyRule {
  return { apiGroups: [group], resources, verbs };
}

/** Rules without duplicates; rules of the same resources and verbs by name made one naming them all. */
function merged(rules: readonly PolicyRule[]): PolicyRule[] {
  const byShape = new Map<string, PolicyRule>();
  for (const each of rules) {
    const shape = JSON.stringify([
      each.apiGroups,
      each.resources,
      each.verbs,
      each.resourceNames === undefined,
    ]);
    const known = byShape.get(shape);
    if (!known) byShape.set(shape, { ...each });
    else if (known.resourceNames && each.resourceNames) {
      known.resourceNames = [...new Set([...known.resourceNames, ...each.resourceNames])];
    }
  }
  return [...byShape.values()];
}

function objectsOf(
  account: NamespacedName,
  grants: Grants,
  names: { role: string; clusterRole: string },
  labels: Record<string, string>,
): RbacObject[] {
  const subjects = [{ kind: 'ServiceAccount' as const, name: account.name, namespace: account.namespace }];
  const objects: RbacObject[] = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { ...account, labels } },
  ];
  for (const [namespace, rules] of grants.namespaces()) {
    const metadata = { name: names.role, namespace, labels };
    objects.push(
      { apiVersion: RBAC_VERSION, kind: 'Role', metadata, rules },
      {
        apiVersion: RBAC_VERSION,
        kind: 'RoleBinding',
        metadata,
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: names.role },
        subjects,
      },
    );
  }
  const clusterRules = grants.cluster();
  if (clusterRules.length > 0) {
    const metadata = { name: names.clusterRole, labels };
    objects.push(
      { apiVersion: RBAC_VERSION, kind: 'ClusterRole', metadata, rules: clusterRules },
      {
        apiVersion: RBAC_VERSION,
        kind: 'ClusterRoleBinding',
        metadata,
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: metadata.name },
        subjects,
      },
    );
  }
  return objects;
}

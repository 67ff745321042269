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

export interface RbacRequest {
  /** The gateway's ServiceAccount, bound to every Role and ClusterRole made. */
  account: NamespacedName;
  /** The resources the handlers name: watched, read, patched, with their status. */
  watched: readonly RbacResource[];
  /** The kinds the services' scopes let their answers apply (`*`: every namespaced kind discovery knows). */
  children: readonly RbacResource[];
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

/** The ServiceAccount, Roles, ClusterRole and their bindings, in the order `kubectl apply` wants them. */
export function rbacFor(request: RbacRequest): RbacObject[] {
  const grants = new Grants();
  // Exact names only: a pattern makes the gateway serve namespaces as they come, so cluster-wide.
  const exact = request.namespaces?.every((pattern) => !/[*?!]/.test(pattern));
  const served = exact ? [...new Set(request.namespaces)] : undefined;
  if (request.namespaces && !exact) {
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

  return objectsOf(request.account, grants);
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

function objectsOf(account: NamespacedName, grants: Grants): RbacObject[] {
  const subjects = [{ kind: 'ServiceAccount' as const, name: account.name, namespace: account.namespace }];
  const objects: RbacObject[] = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { ...account, labels: LABELS } },
  ];
  for (const [namespace, rules] of grants.namespaces()) {
    const metadata = { name: account.name, namespace, labels: LABELS };
    objects.push(
      { apiVersion: RBAC_VERSION, kind: 'Role', metadata, rules },
      {
        apiVersion: RBAC_VERSION,
        kind: 'RoleBinding',
        metadata,
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: account.name },
        subjects,
      },
    );
  }
  const clusterRules = grants.cluster();
  if (clusterRules.length > 0) {
    // Cluster-scoped names are shared by every deployment: the account's namespace tells them apart.
    const metadata = { name: `${account.name}-${account.namespace}`, labels: LABELS };
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

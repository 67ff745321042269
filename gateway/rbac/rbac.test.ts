import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type PolicyRule, type RbacObject, type RbacRequest, rbacFor } from './rbac.ts';

const KOPFEXAMPLES = {
  group: 'kopf.dev',
  plural: 'kopfexamples',
  namespaced: true,
  subresources: ['status'],
};
const ACCOUNT = { namespace: 'operators', name: 'causeway-gateway' };

/** A gateway of examples/01-minimal as deploy/examples/01-minimal deploys it, in `operators`. */
const MINIMAL: RbacRequest = {
  account: ACCOUNT,
  watched: [KOPFEXAMPLES],
  children: [],
  namespaces: ['operators'],
  stateIn: 'auto',
  peeringNamespace: 'operators',
  signingKeys: { namespace: 'operators', name: 'causeway-signing-keys' },
  functionCertificates: { namespace: 'operators', name: 'causeway-function-ca' },
  functionTls: [{ namespace: 'operators', name: 'kopfexample-functions-tls' }],
};

function rulesOf(objects: RbacObject[], kind: 'Role' | 'ClusterRole', namespace?: string): PolicyRule[] {
  const found = objects.find(
    (object) => object.kind === kind && (namespace === undefined || object.metadata.namespace === namespace),
  );
  assert.ok(found && 'rules' in found, `no ${kind} ${namespace ?? ''}`);
  return found.rules;
}

describe('rbacFor', () => {
  it("gives examples/01-minimal's gateway the rules of deploy/examples/01-minimal/ (gateway/ and objects/rbac.yaml), in one namespace", () => {
    const objects = rbacFor(MINIMAL);
    assert.deepEqual(
      objects.map((object) => [object.kind, object.metadata.name, object.metadata.namespace]),
      [
        ['ServiceAccount', 'causeway-gateway', 'operators'],
        ['Role', 'causeway-gateway', 'operators'],
        ['RoleBinding', 'causeway-gateway', 'operators'],
        ['ClusterRole', 'causeway-gateway-operators', undefined],
        ['ClusterRoleBinding', 'causeway-gateway-operators', undefined],
      ],
    );
    assert.deepEqual(rulesOf(objects, 'Role'), [
      { apiGroups: ['kopf.dev'], resources: ['kopfexamples'], verbs: ['get', 'list', 'watch', 'patch'] },
      { apiGroups: ['kopf.dev'], resources: ['kopfexamples/status'], verbs: ['patch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create'] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['get', 'list', 'create', 'update', 'delete'],
      },
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: ['causeway-signing-keys', 'causeway-function-ca', 'kopfexample-functions-tls'],
        verbs: ['get', 'update'],
      },
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['causeway-signing-keys'],
        verbs: ['get', 'update'],
      },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] },
    ]);
    assert.deepEqual(rulesOf(objects, 'ClusterRole'), [
      {
        apiGroups: ['apiextensions.k8s.io'],
        resources: ['customresourcedefinitions'],
        resourceNames: ['kopfexamples.kopf.dev'],
        verbs: ['get'],
      },
    ]);
    const binding = objects.find((object) => object.kind === 'ClusterRoleBinding');
    assert.ok(binding && 'subjects' in binding);
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', ...ACCOUNT }]);
  });

  it('grants cluster-wide only what every namespace needs, with the namespaces watched for a pattern', () => {
    const everywhere = rbacFor({ ...MINIMAL, namespaces: undefined, peeringNamespace: undefined });
    assert.deepEqual(rulesOf(everywhere, 'ClusterRole').slice(0, 3), [
      { apiGroups: ['kopf.dev'], resources: ['kopfexamples'], verbs: ['get', 'list', 'watch', 'patch'] },
      { apiGroups: ['kopf.dev'], resources: ['kopfexamples/status'], verbs: ['patch'] },
      {
        apiGroups: ['apiextensions.k8s.io'],
        resources: ['customresourcedefinitions'],
        resourceNames: ['kopfexamples.kopf.dev'],
        verbs: ['get'],
      },
    ]);
    const patterned = rbacFor({ ...MINIMAL, namespaces: ['team-*'] });
    assert.deepEqual(rulesOf(patterned, 'ClusterRole')[0], {
      apiGroups: [''],
      resources: ['namespaces'],
      verbs: ['list', 'watch'],
    });
  });

  it('serves each namespace given with a Role of its own; none where nothing is done', () => {
    const objects = rbacFor({
      ...MINIMAL,
      namespaces: ['a', 'b'],
      peeringNamespace: undefined,
      signingKeys: undefined,
      functionCertificates: undefined,
      functionTls: [],
      stateIn: 'annotations',
    });
    assert.deepEqual(
      objects.map((object) => `${object.kind}/${object.metadata.namespace ?? ''}`),
      ['ServiceAccount/operators', 'Role/a', 'RoleBinding/a', 'Role/b', 'RoleBinding/b'],
    );
  });

  it('lets answers apply the children the scopes name, where the parents are; events of cluster-scoped objects in default', () => {
    const nodes = { group: '', plural: 'nodes', namespaced: false, subresources: ['status'] };
    const configMaps = { group: '', plural: 'configmaps', namespaced: true, subresources: [] };
    const objects = rbacFor({
      ...MINIMAL,
      watched: [KOPFEXAMPLES, nodes],
      children: [configMaps],
      signingKeys: undefined,
      functionCertificates: undefined,
      functionTls: [],
      peeringNamespace: undefined,
    });
    assert.deepEqual(rulesOf(objects, 'Role', 'operators').at(-1), {
      apiGroups: [''],
      resources: ['configmaps'],
      verbs: ['get', 'create', 'patch'],
    });
    assert.deepEqual(rulesOf(objects, 'Role', 'default'), [
      { apiGroups: [''], resources: ['events'], verbs: ['create'] },
    ]);
    assert.deepEqual(rulesOf(objects, 'ClusterRole').slice(1, 3), [
      { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'patch'] },
      { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
    ]);
  });

  it('gives admission and FunctionService objects the rules of deploy/examples/17-admission and function-services', () => {
    const objects = rbacFor({
      ...MINIMAL,
      functionTls: [],
      functionCertificates: undefined,
      signingKeys: undefined,
      functionServices: 'operators',
      admission: {
        configurationName: 'causeway.dev',
        certificates: { namespace: 'operators', name: 'causeway-gateway-webhooks-tls' },
      },
    });
    const role = rulesOf(objects, 'Role');
    assert.deepEqual(
      role.filter((each) => each.apiGroups[0] === 'causeway.dev'),
      [
        { apiGroups: ['causeway.dev'], resources: ['functionservices'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['causeway.dev'], resources: ['functionservices/status'], verbs: ['patch'] },
      ],
    );
    assert.ok(
      role.some(
        (each) =>
          each.resourceNames?.join() === 'causeway-gateway-webhooks-tls,causeway-gateway-webhooks-tls-ca',
      ),
    );
    const webhooks = ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations'];
    assert.deepEqual(rulesOf(objects, 'ClusterRole').slice(1), [
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: webhooks,
        resourceNames: ['causeway.dev'],
        verbs: ['patch', 'delete'],
      },
      { apiGroups: ['admissionregistration.k8s.io'], resources: webhooks, verbs: ['create'] },
    ]);
  });

  it('lets it list and watch the Leases of dev sessions where it is told, and nothing more there', () => {
    const objects = rbacFor({ ...MINIMAL, devSessions: 'dev-sessions' });
    assert.deepEqual(rulesOf(objects, 'Role', 'dev-sessions'), [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['list', 'watch'] },
    ]);
    // Where it also peers: the Leases of peering keep their verbs beside.
    const peering = rulesOf(rbacFor({ ...MINIMAL, devSessions: 'operators' }), 'Role', 'operators');
    assert.deepEqual(
      peering.filter((each) => each.resources.includes('leases')).map((each) => each.verbs),
      [
        ['get', 'list', 'create', 'update', 'delete'],
        ['list', 'watch'],
      ],
    );
  });

  it('lets it read, by name only, the shared secrets FunctionService objects name', () => {
    const objects = rbacFor({
      ...MINIMAL,
      functionServices: 'operators',
      readSecrets: [
        { namespace: 'operators', name: 'billing-secret' },
        { namespace: 'operators', name: 'shipping-secret' },
      ],
    });
    assert.deepEqual(rulesOf(objects, 'Role').at(-1), {
      apiGroups: [''],
      resources: ['secrets'],
      resourceNames: ['billing-secret', 'shipping-secret'],
      verbs: ['get'],
    });
  });
});

describe('rbacFor under --impersonate', () => {
  const CONFIGMAPS = { group: '', plural: 'configmaps', namespaced: true, subresources: [] };
  const DEPLOYMENTS = { group: 'apps', plural: 'deployments', namespaced: true, subresources: ['status'] };
  const NODES = { group: '', plural: 'nodes', namespaced: false, subresources: ['status'] };
  const billing = { namespace: 'operators', name: 'billing' };
  const shipper = { namespace: 'shop', name: 'shipper' };
  const request: RbacRequest = {
    ...MINIMAL,
    namespaces: ['operators', 'shop'],
    impersonated: [
      { account: billing, watched: [KOPFEXAMPLES], children: [CONFIGMAPS] },
      {
        account: shipper,
        watched: [KOPFEXAMPLES],
        children: [DEPLOYMENTS],
        namespaces: ['shop', 'elsewhere'],
      },
    ],
  };
  const objects = rbacFor(request);
  const named = (kind: string, name: string, namespace?: string) =>
    objects.find(
      (object) =>
        object.kind === kind && object.metadata.name === name && object.metadata.namespace === namespace,
    );

  it('makes each account, with Roles for its children (create, get, patch) and events where it and the gateway serve', () => {
    assert.deepEqual(
      objects.slice(7).map((object) => [object.kind, object.metadata.name, object.metadata.namespace]),
      [
        ['ServiceAccount', 'billing', 'operators'],
        ['Role', 'billing-operators', 'operators'],
        ['RoleBinding', 'billing-operators', 'operators'],
        ['Role', 'billing-operators', 'shop'],
        ['RoleBinding', 'billing-operators', 'shop'],
        ['ServiceAccount', 'shipper', 'shop'],
        ['Role', 'shipper-shop', 'shop'],
        ['RoleBinding', 'shipper-shop', 'shop'],
      ],
      "the shipper's scope narrows it to shop, where the gateway serves; elsewhere is not served",
    );
    const role = named('Role', 'shipper-shop', 'shop');
    assert.ok(role && 'rules' in role);
    assert.deepEqual(role.rules, [
      { apiGroups: ['apps'], resources: ['deployments'], verbs: ['create', 'get', 'patch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create'] },
    ]);
    const binding = named('RoleBinding', 'billing-operators', 'shop');
    assert.ok(binding && 'subjects' in binding);
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: 'billing', namespace: 'operators' }]);
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: 'billing-operators',
    });
    assert.equal(
      named('ServiceAccount', 'billing', 'operators')?.metadata.labels['app.kubernetes.io/component'],
      'function-service',
    );
  });

  it('lets the gateway impersonate exactly those accounts, by name in their namespace, and no group', () => {
    const impersonation = objects
      .filter((object) => 'rules' in object && object.metadata.name.startsWith('causeway-gateway'))
      .flatMap((object) =>
        'rules' in object
          ? object.rules
              .filter((each) => each.verbs.includes('impersonate'))
              .map((each) => [object.kind, object.metadata.namespace, each])
          : [],
      );
    assert.deepEqual(impersonation, [
      [
        'Role',
        'operators',
        {
          apiGroups: [''],
          resources: ['serviceaccounts'],
          verbs: ['impersonate'],
          resourceNames: ['billing'],
        },
      ],
      [
        'Role',
        'shop',
        {
          apiGroups: [''],
          resources: ['serviceaccounts'],
          verbs: ['impersonate'],
          resourceNames: ['shipper'],
        },
      ],
    ]);
  });

  it('gives an account serving every namespace a ClusterRole, with events of cluster-scoped objects', () => {
    const everywhere = rbacFor({
      ...MINIMAL,
      namespaces: ['team-*'],
      impersonated: [{ account: billing, watched: [NODES], children: [CONFIGMAPS] }],
    });
    const clusterRole = everywhere.find(
      (object) => object.kind === 'ClusterRole' && object.metadata.name === 'billing-operators',
    );
    assert.ok(clusterRole && 'rules' in clusterRole);
    assert.deepEqual(clusterRole.rules, [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'get', 'patch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create'] },
    ]);
    const narrowed = rbacFor({
      ...MINIMAL,
      namespaces: ['operators'],
      impersonated: [{ account: billing, watched: [NODES], children: [] }],
    });
    const inDefault = narrowed.find(
      (object) => object.kind === 'Role' && object.metadata.namespace === 'default',
    );
    assert.ok(inDefault && 'rules' in inDefault);
    assert.deepEqual(inDefault.rules, [{ apiGroups: [''], resources: ['events'], verbs: ['create'] }]);
  });

  it('merges the rules of services written as one account, skips one that writes nothing, and refuses to impersonate the gateway itself', () => {
    const shared = rbacFor({
      ...MINIMAL,
      impersonated: [
        { account: billing, watched: [KOPFEXAMPLES], children: [CONFIGMAPS] },
        { account: billing, watched: [KOPFEXAMPLES], children: [DEPLOYMENTS] },
      ],
    });
    const role = shared.find(
      (object) => object.kind === 'Role' && object.metadata.name === 'billing-operators',
    );
    assert.ok(role && 'rules' in role);
    assert.deepEqual(
      role.rules.map((each) => each.resources[0]),
      ['configmaps', 'events', 'deployments'],
    );
    assert.equal(shared.filter((object) => object.kind === 'ServiceAccount').length, 2);
    const reviewer = { namespace: 'operators', name: 'reviewer' };
    assert.deepEqual(
      rbacFor({ ...MINIMAL, impersonated: [{ account: reviewer, watched: [], children: [] }] }),
      rbacFor(MINIMAL),
      'a service that writes nothing (admission only) is impersonated never: no account, no right',
    );
    assert.throws(
      () =>
        rbacFor({ ...MINIMAL, impersonated: [{ account: ACCOUNT, watched: [KOPFEXAMPLES], children: [] }] }),
      /operators\/causeway-gateway, the gateway's own account: impersonating it would lend the service the gateway's rights/,
    );
  });
});

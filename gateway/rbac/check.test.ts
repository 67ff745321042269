import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compare, describePermission, grants, type Permission, permissionsOf } from './check.ts';
import { type PolicyRule, rbacFor } from './rbac.ts';

const KOPFEXAMPLES = {
  group: 'kopf.dev',
  plural: 'kopfexamples',
  namespaced: true,
  subresources: ['status'],
};
const ACCOUNT = { namespace: 'operators', name: 'causeway-gateway' };
const KEYS = { namespace: 'operators', name: 'causeway-signing-keys' };

/** The rules of a gateway serving kopfexamples in `operators`, peering there, keeping its keys there. */
const objects = rbacFor({
  account: ACCOUNT,
  watched: [KOPFEXAMPLES],
  children: [],
  namespaces: ['operators'],
  stateIn: 'auto',
  peeringNamespace: 'operators',
  signingKeys: KEYS,
  functionTls: [],
});
const wanted = permissionsOf(objects, ACCOUNT);
const roleRules = (() => {
  const role = objects.find((object) => object.kind === 'Role');
  assert.ok(role && 'rules' in role);
  return role.rules;
})();

const rule = (apiGroups: string[], resources: string[], verbs: string[], resourceNames?: string[]) => ({
  apiGroups,
  resources,
  verbs,
  ...(resourceNames ? { resourceNames } : {}),
});
const described = (permissions: Permission[]) => permissions.map(describePermission);

describe('permissionsOf', () => {
  it('splits the Role and ClusterRole into one permission per group, resource, verb and name, where each holds', () => {
    assert.ok(described(wanted).includes('patch kopfexamples.kopf.dev/status in operators'));
    assert.ok(described(wanted).includes('get secrets "causeway-signing-keys" in operators'));
    assert.ok(described(wanted).includes('update configmaps "causeway-signing-keys" in operators'));
    assert.ok(
      described(wanted).includes(
        'get customresourcedefinitions.apiextensions.k8s.io "kopfexamples.kopf.dev" cluster-wide',
      ),
    );
    assert.equal(wanted.filter(({ namespace }) => namespace === 'operators').length, 17);
  });

  it("counts only the rules bound to the account: the gateway's, not those of the services it impersonates", () => {
    const impersonating = rbacFor({
      account: ACCOUNT,
      watched: [KOPFEXAMPLES],
      children: [],
      namespaces: ['operators'],
      stateIn: 'annotations',
      functionTls: [],
      impersonated: [
        {
          account: { namespace: 'operators', name: 'billing' },
          watched: [KOPFEXAMPLES],
          children: [{ group: '', plural: 'configmaps', namespaced: true, subresources: [] }],
        },
      ],
    });
    assert.deepEqual(described(permissionsOf(impersonating, ACCOUNT)), [
      'get kopfexamples.kopf.dev in operators',
      'list kopfexamples.kopf.dev in operators',
      'watch kopfexamples.kopf.dev in operators',
      'patch kopfexamples.kopf.dev in operators',
      'patch kopfexamples.kopf.dev/status in operators',
      'create events in operators',
      'impersonate serviceaccounts "billing" in operators',
    ]);
    assert.deepEqual(described(permissionsOf(impersonating, { namespace: 'operators', name: 'billing' })), [
      'create configmaps in operators',
      'get configmaps in operators',
      'patch configmaps in operators',
      'create events in operators',
    ]);
  });
});

describe('grants', () => {
  const patchStatus = { group: 'kopf.dev', resource: 'kopfexamples/status', verb: 'patch' };
  const getKeys = { group: '', resource: 'secrets', verb: 'get', name: 'keys' };
  it('matches the group, the resource and the verb, `*` matching any', () => {
    assert.ok(grants(rule(['kopf.dev'], ['kopfexamples/status'], ['patch']), patchStatus));
    assert.ok(grants(rule(['*'], ['*'], ['*']), patchStatus));
    assert.ok(
      !grants(rule(['kopf.dev'], ['kopfexamples'], ['*']), patchStatus),
      'the resource is not its status',
    );
    assert.ok(!grants(rule(['example.com'], ['*'], ['*']), patchStatus));
    assert.ok(!grants(rule(['kopf.dev'], ['kopfexamples/status'], ['get', 'update']), patchStatus));
  });
  it('matches `*/status` to the status of any resource, and only that subresource', () => {
    assert.ok(grants(rule(['kopf.dev'], ['*/status'], ['patch']), patchStatus));
    assert.ok(!grants(rule(['kopf.dev'], ['*/scale'], ['patch']), patchStatus));
    assert.ok(
      !grants(rule(['kopf.dev'], ['*/status'], ['patch']), { ...patchStatus, resource: 'kopfexamples' }),
    );
  });
  it('limits to the resourceNames given: a named permission is granted by its name or by none, an unnamed one by none', () => {
    assert.ok(grants(rule([''], ['secrets'], ['get'], ['other', 'keys']), getKeys));
    assert.ok(grants(rule([''], ['secrets'], ['get']), getKeys));
    assert.ok(
      grants(rule([''], ['secrets'], ['get'], []), getKeys),
      'an empty list names none: every object',
    );
    assert.ok(!grants(rule([''], ['secrets'], ['get'], ['other']), getKeys));
    assert.ok(
      !grants(rule([''], ['secrets'], ['create'], ['keys']), { ...getKeys, verb: 'create', name: undefined }),
    );
  });
});

describe('compare', () => {
  it('finds nothing missing nor extra when the namespace grants exactly the generated Role', () => {
    const { missing, extra } = compare(wanted, new Map([['operators', roleRules]]));
    assert.deepEqual(missing, []);
    assert.deepEqual(extra, []);
  });

  it('names each permission of a rule not granted, in its namespace', () => {
    const withoutLeases = roleRules.filter((each) => !each.resources.includes('leases'));
    const { missing } = compare(wanted, new Map([['operators', withoutLeases]]));
    assert.deepEqual(described(missing), [
      'get leases.coordination.k8s.io in operators',
      'list leases.coordination.k8s.io in operators',
      'create leases.coordination.k8s.io in operators',
      'update leases.coordination.k8s.io in operators',
      'delete leases.coordination.k8s.io in operators',
    ]);
  });

  it('does not count a grant in another namespace', () => {
    const { missing } = compare(wanted, new Map([['elsewhere', roleRules]]));
    assert.equal(missing.length, 17);
  });

  it('leaves the cluster-wide permissions to another review', () => {
    const { missing } = compare(wanted, new Map([['operators', roleRules]]));
    assert.ok(wanted.some(({ namespace }) => namespace === undefined));
    assert.ok(missing.every(({ namespace }) => namespace !== undefined));
  });

  it('takes a wildcard grant as granting all, and reports what it gives beyond, on the same resources only', () => {
    const admin: PolicyRule[] = [rule(['*'], ['*'], ['*'])];
    const { missing, extra } = compare(wanted, new Map([['operators', admin]]));
    assert.deepEqual(missing, []);
    assert.ok(described(extra).includes('* kopfexamples.kopf.dev in operators'));
    assert.ok(described(extra).includes('* secrets in operators'));
    assert.ok(!described(extra).some((line) => line.includes('pods')), 'no resource the rules do not name');
  });

  it('reports a grant of every object where the rules name one, and a grant of another name', () => {
    const granted = [
      ...roleRules.filter((each) => !each.resources.includes('secrets')),
      rule([''], ['secrets'], ['get', 'update']),
      rule([''], ['secrets'], ['create']),
      rule([''], ['secrets'], ['delete'], ['causeway-signing-keys']),
      rule([''], ['configmaps'], ['get'], ['someone-elses']),
    ];
    const { missing, extra } = compare(wanted, new Map([['operators', granted]]));
    assert.deepEqual(missing, []);
    assert.deepEqual(described(extra), [
      'get secrets in operators',
      'update secrets in operators',
      'delete secrets "causeway-signing-keys" in operators',
      'get configmaps "someone-elses" in operators',
    ]);
  });
});

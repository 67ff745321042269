import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import type { KubernetesObject, ServiceScope } from '../../protocol/index.ts';
import { FunctionService } from '../dispatch/function-service.ts';
import { hmacSigner } from '../dispatch/signer.ts';
import { inProcessTransport } from '../dispatch/transport.ts';
import { type DiscoveredResource, Discovery } from '../kube/discovery.ts';
import { functionServiceSecrets, servedBy } from './served.ts';

const SECRET = new TextEncoder().encode('a secret of at least thirty-two bytes, for the test');

function resource(
  fields: Pick<DiscoveredResource, 'group' | 'plural' | 'kind'> & Partial<DiscoveredResource>,
) {
  return {
    version: 'v1',
    namespaced: true,
    singular: '',
    shortNames: [],
    categories: [],
    subresources: [],
    verbs: ['list', 'watch'],
    ...fields,
  };
}

const discovery = new Discovery([
  resource({ group: 'kopf.dev', plural: 'kopfexamples', kind: 'KopfExample', subresources: ['status'] }),
  resource({ group: '', plural: 'configmaps', kind: 'ConfigMap' }),
  resource({ group: 'apps', plural: 'deployments', kind: 'Deployment', subresources: ['status', 'scale'] }),
]);

/**
 * A service connected as the gateway connects it, `pinned` or by its declared scope; `impersonate`:
 * as with --impersonate, its account's namespace unless its scope names one.
 */
function serviceOf(
  op: ReturnType<typeof operator>,
  pinned?: ServiceScope,
  impersonate?: string,
): Promise<FunctionService> {
  return FunctionService.connect({
    transport: inProcessTransport(op),
    name: undefined,
    sign: hmacSigner(SECRET),
    scope: pinned ?? 'declared',
    ...(impersonate === undefined ? {} : { impersonate }),
  });
}

const KOPFEXAMPLES = {
  group: 'kopf.dev',
  plural: 'kopfexamples',
  namespaced: true,
  subresources: ['status'],
};
const CONFIGMAPS = { group: '', plural: 'configmaps', namespaced: true, subresources: [] };

describe('servedBy', () => {
  it('watches what resource handlers name, lets answers apply the declared children, and reviews for admission handlers', async () => {
    const op = operator({
      name: 'kopfexample',
      secret: SECRET,
      scope: {
        resources: ['kopfexamples.kopf.dev'],
        admission: ['deployments.apps'],
        children: ['configmaps'],
      },
    });
    op.on.create('kopfexamples', function created() {});
    op.on.update('kopfexamples', function updated() {});
    op.on.validate('deployments', function reviewed() {});
    const served = servedBy([await serviceOf(op)], discovery);
    assert.deepEqual(served, {
      watched: [KOPFEXAMPLES],
      children: [CONFIGMAPS],
      admission: true,
      unscoped: [],
      unserved: [],
      impersonated: [],
    });
  });

  it("takes the pin's children when the service declares no scope, and names a service with neither", async () => {
    const bare = () => {
      const op = operator({ name: 'bare', secret: SECRET });
      op.on.create('kopfexamples', function created() {});
      return op;
    };
    const pinned = servedBy(
      [await serviceOf(bare(), { resources: ['kopfexamples.kopf.dev'], children: ['*'] })],
      discovery,
    );
    assert.deepEqual(pinned, {
      watched: [KOPFEXAMPLES],
      children: [
        KOPFEXAMPLES,
        CONFIGMAPS,
        { group: 'apps', plural: 'deployments', namespaced: true, subresources: ['status', 'scale'] },
      ],
      admission: false,
      unscoped: [],
      unserved: [],
      impersonated: [],
    });
    // `*` is every namespaced kind: never a cluster-scoped one, which the gateway refuses as a child.
    const withClusterScoped = new Discovery([
      ...discovery.resources,
      resource({
        group: 'rbac.authorization.k8s.io',
        plural: 'clusterroles',
        kind: 'ClusterRole',
        namespaced: false,
      }),
    ]);
    const everything = servedBy(
      [await serviceOf(bare(), { resources: ['kopfexamples.kopf.dev'], children: ['*'] })],
      withClusterScoped,
    );
    assert.deepEqual(
      everything.children.map(({ plural }) => plural),
      ['kopfexamples', 'configmaps', 'deployments'],
    );
    const unscoped = servedBy([await serviceOf(bare())], discovery);
    assert.deepEqual(unscoped, {
      watched: [KOPFEXAMPLES],
      children: [],
      admission: false,
      unscoped: ['bare'],
      unserved: [],
      impersonated: [],
    });
  });

  it('under --impersonate, gives each service its account, what it watches and applies, and its namespaces', async () => {
    const service = (name: string) => {
      const op = operator({ name, secret: SECRET });
      op.on.create('kopfexamples', function created() {});
      return op;
    };
    const served = servedBy(
      [
        await serviceOf(
          service('billing'),
          { resources: ['kopfexamples.kopf.dev'], children: ['configmaps'] },
          'ops',
        ),
        await serviceOf(
          service('shipping'),
          {
            resources: ['kopfexamples.kopf.dev'],
            children: ['deployments.apps'],
            namespaces: ['shop'],
            impersonate: 'shop/shipper',
          },
          'ops',
        ),
      ],
      discovery,
    );
    const deployments = {
      group: 'apps',
      plural: 'deployments',
      namespaced: true,
      subresources: ['status', 'scale'],
    };
    assert.deepEqual(served.impersonated, [
      { account: { namespace: 'ops', name: 'billing' }, watched: [KOPFEXAMPLES], children: [CONFIGMAPS] },
      {
        account: { namespace: 'shop', name: 'shipper' },
        watched: [KOPFEXAMPLES],
        children: [deployments],
        namespaces: ['shop'],
      },
    ]);
    assert.deepEqual(
      served.children,
      [CONFIGMAPS, deployments],
      'the union stays, for a gateway that writes them itself',
    );
  });

  it('says which handler names a resource the cluster does not serve', async () => {
    const op = operator({ name: 'widgets', secret: SECRET });
    op.on.create('widgets.example.com', function make() {});
    const services = [await serviceOf(op)];
    assert.deepEqual(servedBy(services, discovery).unserved, ['handler "make" names widgets.example.com']);
  });
});

const functionService = (name: string, spec: Record<string, unknown>): KubernetesObject => ({
  apiVersion: 'causeway.dev/v1alpha1',
  kind: 'FunctionService',
  metadata: { name, namespace: 'operators', uid: name },
  spec: { url: `https://${name}.operators.svc:8080`, ...spec },
});

describe('functionServiceSecrets', () => {
  it('names the Secrets of their certificates and of their shared secrets, in their namespace', () => {
    assert.deepEqual(
      functionServiceSecrets([
        functionService('kopfexample', { tls: { secretName: 'kopfexample-functions-tls' } }),
        functionService('billing', { secretRef: { name: 'billing-secret', key: 'secret' } }),
        functionService('plain', {}),
      ]),
      {
        certificates: [{ namespace: 'operators', name: 'kopfexample-functions-tls' }],
        read: [{ namespace: 'operators', name: 'billing-secret' }],
      },
    );
  });
});

/**
 * A compromised function service pinned to Pods and Deployments, on the real apiserver: the children it
 * applies are its own. It cannot run a pod as the gateway's ServiceAccount, mount a Secret it was not
 * given, run a privileged container, merge into a Deployment the handled object does not own (one
 * standing for the gateway's own) or leave a child unowned; each is refused with its reason in the
 * log and on the object, and nothing changes. A legitimate Deployment child is made and updated.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type HandlerContext, operator } from '../../../functions/index.ts';
import { NO_OBJECT_VERSION } from '../../../gateway/dispatch/scope.ts';
import { applyObject } from '../../../gateway/kube/apply.ts';
import type { KubeClient } from '../../../gateway/kube/client.ts';
import { DiscoveryCache, kindSelector } from '../../../gateway/kube/discovery.ts';
import { ApiError } from '../../../gateway/kube/errors.ts';
import type { KubernetesObject, ServiceScope } from '../../../protocol/index.ts';
import { testNamespace } from '../../support/cluster.ts';
import { hostileService } from '../../support/hostile-service.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  memoryLogger,
  progressOf,
  runOperator,
  statusOnceThere,
  TEST_SECRET,
} from '../../support/operator.ts';

const CRD = new URL('../../../examples/01-minimal/crd.yaml', import.meta.url);
const PIN: ServiceScope = { resources: ['kopfexamples.kopf.dev'], children: ['pods', 'deployments.apps'] };

function pod(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec },
  };
}

function deployment(name: string, replicas: number, metadata: Record<string, unknown> = {}) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, ...metadata },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name, image: 'nginx' }] },
      },
    },
  };
}

/** What the hostile service's create handler applies, by the name of the object it handles. */
const ATTACKS: Record<string, Record<string, unknown>[]> = {
  'gateway-account': [pod('as-gateway', { serviceAccountName: 'causeway-gateway' })],
  'stolen-secret': [
    pod('with-keys', {
      volumes: [{ name: 'keys', secret: { secretName: 'causeway-signing-keys' } }],
      containers: [{ name: 'c', image: 'busybox', volumeMounts: [{ name: 'keys', mountPath: '/keys' }] }],
    }),
  ],
  privileged: [
    pod('root', { containers: [{ name: 'c', image: 'busybox', securityContext: { privileged: true } }] }),
  ],
  // A sidecar merged into the gateway's own Deployment, by server-side apply.
  sidecar: [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'causeway-gateway' },
      spec: { template: { spec: { containers: [{ name: 'sidecar', image: 'evil' }] } } },
    },
  ],
  unowned: [deployment('loose', 1, { ownerReferences: [] })],
};

const REFUSALS: Record<string, RegExp> = {
  'gateway-account':
    /apply\[0\]: Pod as-gateway: spec\.serviceAccountName is causeway-gateway; its scope allows default/,
  'stolen-secret':
    /apply\[0\]: Pod with-keys: spec\.volumes\[0\]\.secret\.secretName is causeway-signing-keys; its scope allows no Secrets/,
  privileged:
    /apply\[0\]: Pod root: spec\.containers\[0\]\.securityContext\.privileged is true; Pod Security baseline forbids privileged containers/,
  sidecar:
    /apply\[0\]: Deployment causeway-gateway exists and is not owned by the handled object: a service may make objects, and change its own children only/,
  unowned:
    /apply\[0\]: Deployment loose has ownerReferences: \[\], but every child is owned by the handled object/,
};

describe('a hostile function service and the children it applies', () => {
  let client: KubeClient;
  before(async () => {
    client = await kubeClient();
    await applyFile(CRD);
  });

  it('is refused every child that is not its own or runs beyond its scope, and makes and updates its own', async (t) => {
    const namespace = await testNamespace(t);
    const apps = `/apis/apps/v1/namespaces/${namespace}/deployments`;
    // What stands for the gateway's own, in the namespace it serves: its Deployment and signing keys.
    const gatewayDeployment = await client.request<KubernetesObject>(apps, {
      method: 'POST',
      body: deployment('causeway-gateway', 1),
    });
    await client.request(`/api/v1/namespaces/${namespace}/secrets`, {
      method: 'POST',
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'causeway-signing-keys' },
        stringData: { k: 'v' },
      },
    });

    const inner = operator({ name: 'hostile', secret: TEST_SECRET });
    const applyWeb = ({ spec, name, apply }: HandlerContext) => {
      if (name === 'web') apply(deployment('web', Number(spec.replicas)));
      return { done: true };
    };
    inner.on.create('kopfexamples', function create_fn(context) {
      return applyWeb(context);
    });
    inner.on.update('kopfexamples', function update_fn(context) {
      return applyWeb(context);
    });
    const hostile = hostileService(inner, {
      answer: ({ request, answer }) => {
        const attack = ATTACKS[(request.body as KubernetesObject).metadata.name];
        const outcomes = answer.outcomes as Record<string, Record<string, unknown>>;
        if (!attack || !outcomes.create_fn) return undefined;
        return { ...answer, outcomes: { create_fn: { ...outcomes.create_fn, apply: attack } } };
      },
    });
    const logger = memoryLogger();
    const running = await runOperator(hostile, { namespaces: [namespace], logger, scopes: { hostile: PIN } });
    t.after(() => running.stop());

    for (const name of [...Object.keys(ATTACKS), 'web']) {
      await createKopfExample(namespace, name, name === 'web' ? { replicas: 1 } : {});
    }

    for (const [name, reason] of Object.entries(REFUSALS)) {
      // On the object: the handler failed for that reason, no result; in the log: why.
      const message = await eventually(`the refusal on ${name}`, async () => {
        const object = await client.get<KubernetesObject>(
          `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/${name}`,
        );
        assert.equal(object.status?.create_fn, undefined, `${name}: no result recorded`);
        return progressOf(object, 'hostile')?.create_fn?.message;
      });
      assert.match(message, reason, name);
      assert.match(logger.lines.join(''), reason, `${name}: the log says why`);
    }

    // Nothing it asked for exists, and the gateway's Deployment is as it was.
    const missing = (path: string) =>
      client.get(path).then(
        () => false,
        (error: unknown) => error instanceof ApiError && error.status === 404,
      );
    for (const name of ['as-gateway', 'with-keys', 'root']) {
      assert.ok(await missing(`/api/v1/namespaces/${namespace}/pods/${name}`), `no pod ${name}`);
    }
    assert.ok(await missing(`${apps}/loose`), 'no unowned Deployment');
    const gatewayNow = await client.get<KubernetesObject>(`${apps}/causeway-gateway`);
    assert.deepEqual(gatewayNow.spec?.template, gatewayDeployment.spec?.template);
    assert.equal(gatewayNow.metadata.generation, gatewayDeployment.metadata.generation);
    assert.equal(gatewayNow.metadata.ownerReferences, undefined);

    // Its own child is made, owned by the object it handled, and updated when the object changes.
    const webPath = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/web`;
    assert.deepEqual(await statusOnceThere(webPath, 'create_fn'), { done: true });
    const parent = await client.get<KubernetesObject>(webPath);
    const made = await client.get<KubernetesObject>(`${apps}/web`);
    assert.deepEqual(
      (made.metadata.ownerReferences as Array<{ uid: string }>).map(({ uid }) => uid),
      [parent.metadata.uid],
    );
    assert.equal(made.spec?.replicas, 1);
    await client.patch(webPath, 'merge', { spec: { replicas: 2 } });
    assert.deepEqual(await statusOnceThere(webPath, 'update_fn'), { done: true });
    assert.equal((await client.get<KubernetesObject>(`${apps}/web`)).spec?.replicas, 2);
  });

  it('is applied over the version the gateway read: an object made or changed since fails with 409', async (t) => {
    const namespace = await testNamespace(t);
    const configMaps = await new DiscoveryCache(client).resolve(kindSelector('v1', 'ConfigMap'));
    const write = (resourceVersion: string, data: Record<string, string>) =>
      applyObject(
        client,
        configMaps,
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'child', resourceVersion }, data },
        'causeway-test',
        namespace,
      );
    const conflict = (error: unknown) => error instanceof ApiError && error.status === 409;

    // Read as absent: made, since none is there.
    const made = await write(NO_OBJECT_VERSION, { a: '1' });
    assert.deepEqual(made.data, { a: '1' });
    // Read as absent, but made in between: refused.
    await assert.rejects(write(NO_OBJECT_VERSION, { a: '2' }), conflict);
    // Read at a version: applied over it; changed in between: refused.
    const updated = await write(made.metadata.resourceVersion as string, { a: '3' });
    assert.deepEqual(updated.data, { a: '3' });
    await assert.rejects(write(made.metadata.resourceVersion as string, { a: '4' }), conflict);
    assert.deepEqual(
      (await client.get<KubernetesObject>(`/api/v1/namespaces/${namespace}/configmaps/child`)).data,
      { a: '3' },
    );
  });
});

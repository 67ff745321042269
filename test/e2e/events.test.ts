/**
 * Events about other objects than the one handled (Kopf's `kopf.event(objs, …)`): about a child the
 * handler applies, whose uid only the gateway learns, and about an object in another namespace.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { adopt, operator } from '../../functions/index.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  runOperator,
  statusOnceThere,
  TEST_SECRET,
} from '../support/operator.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

interface Event {
  type: string;
  reason: string;
  message: string;
  involvedObject: Record<string, unknown>;
}

describe('events about other objects on a real apiserver', () => {
  let client: KubeClient;
  before(async () => {
    await applyFile(CRD);
    client = await kubeClient();
  });

  /** The events of a namespace with this reason, once there are any. */
  const eventsFor = (namespace: string, reason: string, query: Record<string, string> = {}) =>
    eventually(`a ${reason} event in ${namespace}`, async () => {
      const { items } = await client.get<{ items: Event[] }>(`/api/v1/namespaces/${namespace}/events`, query);
      const found = items.filter((event) => event.reason === reason);
      return found.length > 0 ? found : undefined;
    });

  it('posts about a child the handler applied, with its uid, and about an object of another namespace', async (t) => {
    const namespace = await testNamespace(t);
    const elsewhere = await testNamespace(t);
    const neighbour = await client.request<KubernetesObject>(`/api/v1/namespaces/${elsewhere}/configmaps`, {
      method: 'POST',
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'neighbour' }, data: {} },
    });
    const op = operator({ name: 'events-about', secret: TEST_SECRET });
    op.on.create('kopfexamples', function create_fn({ body, apply, events }) {
      const child = adopt(
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `${body.metadata.name}-settings` },
          data: {},
        },
        body,
      );
      apply(child);
      events.normal('ChildApplied', `settings of ${body.metadata.name}`, { about: child });
      events.warning('NeighbourNoticed', `seen by ${body.metadata.name}`, { about: neighbour });
      events.normal('Handled', 'about the object itself');
      return { child: child.metadata.name };
    });
    const running = await runOperator(op, { namespaces: [namespace] });
    t.after(() => running.stop());

    const path = await createKopfExample(namespace, 'kex-events');
    assert.deepEqual(await statusOnceThere(path, 'create_fn'), { child: 'kex-events-settings' });
    const child = await client.get<KubernetesObject>(
      `/api/v1/namespaces/${namespace}/configmaps/kex-events-settings`,
    );

    // As `kubectl describe configmap` finds them: by the child's uid.
    const [about] = await eventsFor(namespace, 'ChildApplied', {
      fieldSelector: `involvedObject.uid=${child.metadata.uid}`,
    });
    assert.deepEqual(
      { type: about?.type, message: about?.message },
      { type: 'Normal', message: 'settings of kex-events' },
    );
    assert.deepEqual(about?.involvedObject, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: 'kex-events-settings',
      namespace,
      uid: child.metadata.uid,
    });

    const [noticed] = await eventsFor(elsewhere, 'NeighbourNoticed');
    assert.equal(noticed?.type, 'Warning');
    assert.deepEqual(noticed?.involvedObject, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: 'neighbour',
      namespace: elsewhere,
      uid: neighbour.metadata.uid,
    });

    const parent = await client.get<KubernetesObject>(path);
    const [handled] = await eventsFor(namespace, 'Handled');
    assert.equal(handled?.involvedObject.uid, parent.metadata.uid, 'without about, about the object handled');
    assert.equal(handled?.involvedObject.kind, 'KopfExample');
  });
});

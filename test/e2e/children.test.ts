/** examples/02-children: a child the function returns, created by the gateway, collected with its parent. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from 'causeway/protocol';
import { startExample } from '../support/examples.ts';
import { eventually, kubeClient } from '../support/operator.ts';

describe('examples/02-children', () => {
  it('creates a pod owned by the KopfExample, and Kubernetes deletes it with its parent', async (t) => {
    const { namespace } = await startExample(t, '02-children');
    const client = await kubeClient();
    const parent = await client.get<KubernetesObject>(
      `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/kopf-example-2`,
    );

    const pod = await eventually('the child pod', async () => {
      try {
        return await client.get<KubernetesObject>(`/api/v1/namespaces/${namespace}/pods/kopf-example-2-pod`);
      } catch {
        return undefined;
      }
    });
    assert.deepEqual(
      (pod.metadata.ownerReferences as Array<{ kind: string; name: string; uid: string }>).map(
        ({ kind, name, uid }) => ({ kind, name, uid }),
      ),
      [{ kind: 'KopfExample', name: 'kopf-example-2', uid: parent.metadata.uid }],
    );
    // The child is applied before the result is written (a failed apply must leave no success behind).
    const handled = await eventually('status.create_fn', async () => {
      const current = await client.get<KubernetesObject>(
        `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/kopf-example-2`,
      );
      return current.status?.create_fn === undefined ? undefined : current;
    });
    assert.deepEqual(handled.status?.create_fn, { 'pod-name': 'kopf-example-2-pod' });

    await client.request(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/kopf-example-2`, {
      method: 'DELETE',
    });
    await eventually(
      'the garbage collector to delete the pod',
      async () => {
        try {
          await client.get(`/api/v1/namespaces/${namespace}/pods/kopf-example-2-pod`);
          return undefined;
        } catch {
          return true;
        }
      },
      60_000,
    );
  });
});

/**
 * examples/02-children: a child the function returns, created by the gateway, collected with its
 * parent; and children given only a generateName (adopt() without a name), made once however often
 * the handler is retried.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from 'causeway/protocol';
import { adopt, operator, TemporaryError } from '../../functions/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { startExample } from '../support/examples.ts';
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

  it('names a child given only a generateName, and a retry updates it rather than making another', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const op = operator({ name: 'generated-children', secret: TEST_SECRET });
    op.on.create('kopfexamples', function create_fn({ body, retry, apply }) {
      // adopt() without a name gives the child `generateName: <owner's name>-`.
      apply(
        adopt({ apiVersion: 'v1', kind: 'ConfigMap', metadata: {}, data: { retry: String(retry) } }, body),
      );
      if (retry === 0) throw new TemporaryError('once more', { delay: 0.1 });
      return { made: true };
    });
    const running = await runOperator(op, { namespaces: [namespace] });
    t.after(() => running.stop());

    assert.deepEqual(await statusOnceThere(await createKopfExample(namespace, 'kex-gen', {}), 'create_fn'), {
      made: true,
    });
    const client = await kubeClient();
    const { items } = await client.get<{ items: KubernetesObject[] }>(
      `/api/v1/namespaces/${namespace}/configmaps`,
    );
    const children = items.filter((item) => item.metadata.name.startsWith('kex-gen-'));
    assert.equal(children.length, 1, `one child for two attempts: ${children.map((c) => c.metadata.name)}`);
    assert.match(children[0]?.metadata.name ?? '', /^kex-gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    assert.deepEqual(children[0]?.data, { retry: '1' }, 'the retry updated the child the first attempt made');
  });
});

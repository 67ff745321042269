/**
 * Generated objects on the real control plane: odd but valid names, labels, annotations of any
 * unicode, large and deeply nested specs, created among plain ones for a running gateway. Each is
 * handled, and what its handler saw is what the apiserver holds.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import fc from 'fast-check';
import { operator } from '../../functions/index.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { kubeObject } from '../support/arbitraries.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  applyFile,
  createResults,
  eventually,
  kubeClient,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

/** What the handler tells of the object it was called for: enough to compare with what the apiserver holds. */
function seen({
  labels,
  annotations,
  spec,
}: Pick<KubernetesObject['metadata'], 'labels' | 'annotations'> & { spec: unknown }) {
  return {
    labels: labels ?? {},
    annotations: annotations ?? {},
    specLength: JSON.stringify(spec ?? {}).length,
  };
}

describe('generated objects on a real apiserver', () => {
  let client: KubeClient;

  before(async () => {
    await applyFile(CRD);
    client = await kubeClient();
  });

  it('handles every odd but valid object among plain ones, and serves on', async (t) => {
    const namespace = await testNamespace(t);
    const op = operator({ name: 'kopfexample', secret: TEST_SECRET });
    op.on.create('kopfexamples', async function create_fn({ labels, annotations, spec }) {
      return seen({ labels, annotations, spec });
    });
    const running = await runOperator(op, { namespaces: [namespace] });
    t.after(() => running.stop());

    const seed = Date.now();
    const odd = fc.sample(
      fc.uniqueArray(kubeObject(), {
        minLength: 16,
        maxLength: 16,
        selector: (object) => object.metadata.name,
      }),
      { numRuns: 1, seed },
    )[0] as KubernetesObject[];
    const plain = (index: number) => ({
      apiVersion: 'kopf.dev/v1',
      kind: 'KopfExample',
      metadata: { name: `plain-${index}` },
      spec: { field: 'value' },
    });
    // And one that is sure to come in many chunks of the watch, of two-byte characters (half a MB).
    odd.push({
      ...(odd[0] as KubernetesObject),
      metadata: { name: 'long', uid: '' },
      spec: { long: 'é'.repeat(250_000) },
    });
    // Interleaved, four at a time: the odd ones among plain ones, as a cluster's objects come.
    const objects = odd.flatMap((object, index) => [
      {
        ...object,
        metadata: {
          ...object.metadata,
          name: `odd-${index}-${object.metadata.name}`.slice(0, 253).replace(/[-.]+$/, ''),
          namespace,
          uid: undefined,
          resourceVersion: undefined,
        },
      },
      plain(index),
    ]);
    for (let start = 0; start < objects.length; start += 4) {
      await Promise.all(
        objects.slice(start, start + 4).map((object) =>
          client.request(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`, {
            method: 'POST',
            body: object,
          }),
        ),
      );
    }

    const results = await eventually(
      `the results of all ${objects.length} objects (seed ${seed})`,
      async () => {
        const results = await createResults(namespace);
        return results.size === objects.length ? results : undefined;
      },
      25_000,
    );
    // What each handler saw is what the apiserver holds (which may have normalised a string it was sent).
    const stored = await client.get<{ items: KubernetesObject[] }>(
      `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`,
    );
    for (const object of stored.items) {
      assert.deepEqual(
        results.get(object.metadata.name),
        seen({ ...object.metadata, spec: object.spec }),
        `${object.metadata.name} (seed ${seed})`,
      );
    }

    // Serving on: a plain object created after them all is handled too.
    await client.request(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`, {
      method: 'POST',
      body: { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name: 'after' }, spec: {} },
    });
    await eventually('the result of the object created after them', async () =>
      (await createResults(namespace)).get('after'),
    );
  });
});

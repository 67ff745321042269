import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import { applyManifests } from '../../gateway/kube/apply.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { customResourceDefinition, uniqueGroup } from '../support/crds.ts';
import { eventually, kubeClient, memoryLogger, runOperator, TEST_SECRET } from '../support/operator.ts';

describe('resources that appear after the gateway started', () => {
  it('serves a CRD applied later, once discovery shows it', async (t) => {
    const namespace = await testNamespace(t);
    const group = uniqueGroup('late');
    const client = await kubeClient();
    const op = operator({ name: 'late', secret: TEST_SECRET });
    op.on.create(`latecomers.${group}`, async function create_fn({ name }) {
      return { seen: name };
    });
    const logger = memoryLogger();
    const running = await runOperator(op, { namespaces: [namespace], logger, transport: 'in-process' });
    t.after(() => running.stop());
    assert.ok(logger.lines.some((line) => line.includes(`no resource "latecomers.${group}"`)));

    const crd = customResourceDefinition({ group, kind: 'Latecomer', plural: 'latecomers' });
    const object = {
      apiVersion: `${group}/v1`,
      kind: 'Latecomer',
      metadata: { name: 'late-1', namespace },
    } as KubernetesObject;
    await applyManifests(client, [crd, object], { fieldManager: 'causeway-tests' });
    t.after(() =>
      client.request(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/latecomers.${group}`, {
        method: 'DELETE',
      }),
    );

    const handled = await eventually(
      'the late resource to be handled',
      async () => {
        const current = await client.get<KubernetesObject>(
          `/apis/${group}/v1/namespaces/${namespace}/latecomers/late-1`,
        );
        return current.status?.create_fn === undefined ? undefined : current;
      },
      30_000,
    );
    assert.deepEqual(handled.status?.create_fn, { seen: 'late-1' });
  });
});

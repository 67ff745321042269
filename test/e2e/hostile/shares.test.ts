/**
 * A resource's workers are shared (issue 39): a cycle waiting on a service keeps its worker, so a slow
 * service (hostile, or over its budget) with many objects could hold all 64 of a resource and leave a
 * well-behaved service's objects waiting. Here a service that answers nothing until the test ends has
 * 70 objects, and holds its share of the workers (ceil(64 / 2) = 32) only: the well-behaved service's
 * objects on the same resource are all handled while the slow one's calls are still open.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { operator } from '../../../functions/index.ts';
import type { KubeClient } from '../../../gateway/kube/client.ts';
import type { KubernetesObject } from '../../../protocol/index.ts';
import { testNamespace } from '../../support/cluster.ts';
import {
  applyFile,
  createKopfExamples,
  eventually,
  kubeClient,
  memoryLogger,
  objectNames,
  runOperator,
  TEST_SECRET,
} from '../../support/operator.ts';

const CRD = new URL('../../../examples/01-minimal/crd.yaml', import.meta.url);

describe("a resource's workers shared among its services", () => {
  let client: KubeClient;
  before(async () => {
    await applyFile(CRD);
    client = await kubeClient();
  });

  it("handles a well-behaved service's objects while a slow service holds its share of the workers", async (t) => {
    const namespace = await testNamespace(t);
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slowCalls = { started: 0, ended: 0 };
    const slow = operator({ name: 'slow', secret: TEST_SECRET });
    slow.on.create('kopfexamples', { id: 'slow_fn', labels: { side: 'slow' } }, async () => {
      slowCalls.started += 1;
      await released;
      slowCalls.ended += 1;
      return { late: true };
    });
    const well = operator({ name: 'well', secret: TEST_SECRET });
    well.on.create('kopfexamples', { id: 'well_fn', labels: { side: 'well' } }, async ({ name }) => ({
      hello: name,
    }));
    const logger = memoryLogger();
    const running = await runOperator([slow, well], { namespaces: [namespace], logger });
    t.after(async () => {
      release();
      await running.stop();
    });

    await createKopfExamples(namespace, objectNames('slow', 70), { side: 'slow' });
    await eventually('the slow service holding its share', async () =>
      slowCalls.started >= 32 ? true : undefined,
    );
    const names = objectNames('well', 10);
    await createKopfExamples(namespace, names, { side: 'well' });
    const results = await eventually("the well-behaved service's results on all its objects", async () => {
      const list = await client.get<{ items: KubernetesObject[] }>(
        `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples?labelSelector=side%3Dwell`,
      );
      const handled = list.items.filter((item) => item.status?.well_fn !== undefined);
      return handled.length === names.length ? handled : undefined;
    });
    assert.deepEqual(
      results
        .map((item) => item.status?.well_fn)
        .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
      names.map((name) => ({ hello: name })),
    );
    // Meanwhile the slow service's calls are open still, never more than its share of them.
    assert.deepEqual(slowCalls, { started: 32, ended: 0 });
    assert.equal(
      logger.lines.find((line) => /handler=slow_fn/.test(line) && /failed/.test(line)),
      undefined,
      'no call of the slow service has ended, not even by its timeout',
    );
  });
});

/**
 * Exactly once when the watch lags: the gateway's own writes reach it late (held back by a proxy in
 * front of the real apiserver, as under a large backlog), later than it waits for them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testCluster, testNamespace } from '../support/cluster.ts';
import { startLaggingProxy } from '../support/lagging-proxy.ts';
import {
  applyFile,
  createKopfExample,
  eventually,
  kubeClient,
  memoryLogger,
  runOperator,
  TEST_SECRET,
} from '../support/operator.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

describe("a watch that lags behind the gateway's own writes", () => {
  it('calls each handler once: past the wait for its write, the gateway reads the object afresh', async (t) => {
    await applyFile(CRD);
    const namespace = await testNamespace(t);
    const proxy = await startLaggingProxy(await testCluster());
    t.after(() => proxy.close());

    const calls: string[] = [];
    const op = operator({ name: 'lagging', secret: TEST_SECRET });
    op.on.create('kopfexamples', async function create_fn({ name }) {
      calls.push(`create ${name}`);
      return { created: true };
    });
    op.on.update('kopfexamples', async function update_fn({ name }) {
      calls.push(`update ${name}`);
      return { updated: true };
    });
    // A delete handler: the finalizer goes on first, so the creation is two writes of the gateway's.
    op.on.delete('kopfexamples', async function delete_fn({ name }) {
      calls.push(`delete ${name}`);
    });
    const logger = memoryLogger();
    const running = await runOperator(op, {
      namespaces: [namespace],
      kubeconfig: proxy.kubeConfig(),
      logger,
      transport: 'in-process',
    });
    t.after(() => running.stop());

    // The creation reaches the gateway; its own two writes (finalizer, results) do not, for now.
    proxy.holdAfterNextEvent();
    const client = await kubeClient();
    const path = await createKopfExample(namespace, 'kex-1', { field: 'a' });
    await eventually(
      'the gateway to give up waiting for the watch and read the object afresh',
      async () => logger.lines.find((line) => /kex-1.*reading the object afresh/.test(line)),
      20_000,
    );
    const created = await client.get<KubernetesObject>(path);
    assert.deepEqual(created.status?.create_fn, { created: true });

    // The held events arrive now, late; then a real change, which the watch delivers after them.
    proxy.release();
    await client.patch(path, 'merge', { spec: { field: 'b' } });
    await eventually('status.update_fn', async () => {
      const object = await client.get<KubernetesObject>(path);
      return object.status?.update_fn;
    });
    assert.deepEqual(calls, ['create kex-1', 'update kex-1']);
  });
});

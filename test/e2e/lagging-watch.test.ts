/**
 * Exactly once when the watch lags: the gateway's own writes reach it late (held back by a proxy in
 * front of the real apiserver, as under a large backlog), later than it waits for them; or they land
 * while every answer to them is lost.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { operator } from '../../functions/index.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
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

/**
 * A gateway whose connection to the apiserver goes through a lagging proxy, running create and update
 * handlers that record their calls (and a delete handler, with `finalizer`: it goes on first, so that
 * a creation is two writes of the gateway's).
 */
async function operatorBehindProxy(
  t: TestContext,
  operatorName: string,
  { finalizer }: { finalizer: boolean },
) {
  await applyFile(CRD);
  const namespace = await testNamespace(t);
  const proxy = await startLaggingProxy(await testCluster());
  t.after(() => proxy.close());

  const calls: string[] = [];
  const op = operator({ name: operatorName, secret: TEST_SECRET });
  op.on.create('kopfexamples', async function create_fn({ name }) {
    calls.push(`create ${name}`);
    return { created: true };
  });
  op.on.update('kopfexamples', async function update_fn({ name }) {
    calls.push(`update ${name}`);
    return { updated: true };
  });
  if (finalizer) {
    op.on.delete('kopfexamples', async function delete_fn({ name }) {
      calls.push(`delete ${name}`);
    });
  }
  const logger = memoryLogger();
  const running = await runOperator(op, {
    namespaces: [namespace],
    kubeconfig: proxy.kubeConfig(),
    logger,
    transport: 'in-process',
  });
  t.after(() => running.stop());
  return { namespace, proxy, calls, logger, client: await kubeClient() };
}

/** Changes the object's spec and waits for the update handler's result: every cycle before it is done. */
async function updated(client: KubeClient, path: string): Promise<void> {
  await client.patch(path, 'merge', { spec: { field: 'b' } });
  await eventually('status.update_fn', async () => {
    const object = await client.get<KubernetesObject>(path);
    return object.status?.update_fn;
  });
}

describe("a watch that lags behind the gateway's own writes", () => {
  it('calls each handler once: past the wait for its write, the gateway reads the object afresh', async (t) => {
    const { namespace, proxy, calls, logger, client } = await operatorBehindProxy(t, 'lagging', {
      finalizer: true,
    });

    // The creation reaches the gateway; its own two writes (finalizer, results) do not, for now.
    proxy.holdAfterNextEvent();
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
    await updated(client, path);
    assert.deepEqual(calls, ['create kex-1', 'update kex-1']);
  });

  it('calls a handler once when its result landed but every answer to the write was lost: the gateway reads the object afresh before it runs it again', async (t) => {
    const { namespace, proxy, calls, logger, client } = await operatorBehindProxy(t, 'lost-answers', {
      finalizer: false,
    });

    // The write of the result lands, each of its tries (the first and the client's six retries), but
    // every answer is a 504; and the watch does not show the gateway its write, for now.
    const object = '/kopfexamples/kex-1';
    const lost = proxy.loseAnswersOfWrites(object, 7);
    proxy.holdAfterNextEvent();
    const path = await createKopfExample(namespace, 'kex-1', { field: 'a' });
    await lost;
    assert.deepEqual((await client.get<KubernetesObject>(path)).status?.create_fn, { created: true });
    await eventually(
      'the cycle to fail, and then the gateway to read the object afresh or run it again',
      async () => (proxy.reads(object) > 0 || calls.length > 1 ? true : undefined),
      20_000,
    );
    assert.ok(
      logger.lines.some((line) => /kex-1.*processing failed.*504/.test(line)),
      logger.lines.join('\n'),
    );

    // A change after it: its handler is called once the object's cycles before it are done.
    proxy.release();
    await updated(client, path);
    assert.deepEqual(calls, ['create kex-1', 'update kex-1']);
  });
});

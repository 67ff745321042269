import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { applyFile, eventually, kubeClient, runOperator, TEST_SECRET } from '../support/operator.ts';

const CRD = new URL('../../examples/01-minimal/crd.yaml', import.meta.url);

function kopfExample(name: string) {
  return { apiVersion: 'kopf.dev/v1', kind: 'KopfExample', metadata: { name }, spec: { field: 'value' } };
}

/** An operator that records every call, so tests can tell how often each object was handled. */
function recordingOperator() {
  const calls: Array<{ name: string; idempotencyKey: string }> = [];
  const op = operator({ name: 'kopfexample', secret: TEST_SECRET });
  op.on.create('kopfexamples', async function create_fn({ name, idempotencyKey }) {
    calls.push({ name, idempotencyKey });
    return { message: `hello ${name}` };
  });
  return { op, calls };
}

describe('create handlers on a real apiserver', () => {
  let client: KubeClient;

  before(async () => {
    await applyFile(CRD);
    client = await kubeClient();
  });

  async function create(namespace: string, name: string): Promise<void> {
    await client.request(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples`, {
      method: 'POST',
      body: kopfExample(name),
    });
  }

  function resultOf(namespace: string, name: string) {
    return eventually(`status.create_fn of ${namespace}/${name}`, async () => {
      const object = await client.get<KubernetesObject>(
        `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/${name}`,
      );
      return object.status?.create_fn === undefined ? undefined : object;
    });
  }

  it('stores the result of the create handler in status.create_fn, with the handled-record, in one status write', async (t) => {
    const namespace = await testNamespace(t);
    const { op, calls } = recordingOperator();
    const running = await runOperator(op, { namespaces: [namespace] });
    t.after(() => running.stop());

    await create(namespace, 'kopf-example-1');
    const object = await resultOf(namespace, 'kopf-example-1');

    assert.deepEqual(object.status?.create_fn, { message: 'hello kopf-example-1' });
    assert.equal(typeof (object.status?.causeway as { essence?: unknown })?.essence, 'string');
    assert.equal(
      object.metadata.annotations?.['causeway.dev/last-handled'],
      undefined,
      'state is kept in the status',
    );
    const writers = (object.metadata.managedFields as Array<{ manager: string; subresource?: string }>)
      .filter((entry) => entry.manager === 'causeway')
      .map((entry) => entry.subresource ?? 'object');
    assert.deepEqual(writers, ['status'], 'the gateway wrote only the status');
    assert.deepEqual(
      calls.map((call) => call.name),
      ['kopf-example-1'],
    );
  });

  it('does not handle an object again after a gateway restart, and handles a new one', async (t) => {
    const namespace = await testNamespace(t);
    const first = recordingOperator();
    const running = await runOperator(first.op, { namespaces: [namespace] });
    await create(namespace, 'before-restart');
    await resultOf(namespace, 'before-restart');
    await running.stop();

    const second = recordingOperator();
    const restarted = await runOperator(second.op, { namespaces: [namespace] });
    t.after(() => restarted.stop());
    await create(namespace, 'after-restart');
    const object = await resultOf(namespace, 'after-restart');

    assert.deepEqual(object.status?.create_fn, { message: 'hello after-restart' });
    // The restarted gateway listed both objects; before-restart was queued first, so by now it has been seen.
    assert.deepEqual(
      second.calls.map((call) => call.name),
      ['after-restart'],
    );
    assert.deepEqual(
      first.calls.map((call) => call.name),
      ['before-restart'],
    );
  });
});

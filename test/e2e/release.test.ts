/** The escape hatch: `causeway release` frees an object stuck in deletion after its operator is gone. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { applyFile, createKopfExample, eventually, kubeClient } from '../support/operator.ts';
import { causeway } from '../support/processes.ts';

describe('causeway release', () => {
  it("removes only the gateway's finalizer, so the deletion completes", async (t) => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const stuck = await createKopfExample(
      namespace,
      'stuck',
      {},
      {
        finalizers: ['example.com/other', 'causeway.dev/finalizer'],
      },
    );
    await client.request(stuck, { method: 'DELETE' });

    const released = causeway(['release', 'kex', 'stuck', '--namespace', namespace], process.env);
    assert.equal(await released.exited(), 0, released.output());
    assert.match(
      released.output(),
      /released kopfexamples .*\/stuck: removed finalizer causeway.dev\/finalizer/,
    );
    const object = await client.get<KubernetesObject>(stuck);
    assert.deepEqual(object.metadata.finalizers, ['example.com/other'], "other controllers' finalizers stay");

    await client.patch(stuck, 'merge', { metadata: { finalizers: null } });
    await eventually('the deletion to complete', async () => {
      try {
        await client.get(stuck);
        return undefined;
      } catch {
        return true;
      }
    });
  });
});

/**
 * Guarded writes, as a peering gateway whose Lease renewal is overdue makes them: each merge patch
 * carries the resourceVersion it was computed from, and the real apiserver refuses it (409) once the
 * object has changed, so a late result never lands over a newer state.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DiscoveryCache } from '../../gateway/kube/discovery.ts';
import { ApiError } from '../../gateway/kube/errors.ts';
import { applyChanges } from '../../gateway/kube/patcher.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { applyFile, createKopfExample, kubeClient } from '../support/operator.ts';

describe('guarded writes', () => {
  it('are refused over a newer state, and land, status then object, over the state they come from', async (t) => {
    await applyFile(new URL('../../examples/01-minimal/crd.yaml', import.meta.url));
    const namespace = await testNamespace(t);
    const client = await kubeClient();
    const resource = (await new DiscoveryCache(client).reload()).resolve({
      name: 'kopfexamples',
      group: 'kopf.dev',
    });
    const path = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfexamples/kex`;
    await createKopfExample(namespace, 'kex');
    const read = await client.get<KubernetesObject>(path);
    await client.patch(path, 'merge', { spec: { field: 'changed by someone' } });

    const changes = {
      status: { create_fn: { message: 'late' } },
      object: { metadata: { labels: { handled: 'yes' } } },
    };
    await assert.rejects(
      applyChanges(client, resource, read, changes, 'causeway', true),
      (error: unknown) => {
        assert.ok(error instanceof ApiError && error.status === 409, String(error));
        return true;
      },
    );
    assert.equal(
      (await client.get<KubernetesObject>(path)).status?.create_fn,
      undefined,
      'nothing of it landed',
    );

    const fresh = await client.get<KubernetesObject>(path);
    const written = await applyChanges(client, resource, fresh, changes, 'causeway', true);
    assert.deepEqual(written?.status?.create_fn, { message: 'late' });
    assert.equal(written?.metadata.labels?.handled, 'yes');
  });
});

/**
 * Another controller's finalizer on an object: the gateway adds and removes only its own, and once its
 * delete handler has run and its finalizer is off, the object still held by the other is no concern
 * of its delete handlers any more, however it changes until it goes.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { operator } from '../../functions/index.ts';
import { applyManifests } from '../../gateway/kube/apply.ts';
import type { KubeClient } from '../../gateway/kube/client.ts';
import { ApiError } from '../../gateway/kube/errors.ts';
import type { KubernetesObject } from '../../protocol/index.ts';
import { testNamespace } from '../support/cluster.ts';
import { customResourceDefinition, uniqueGroup } from '../support/crds.ts';
import { everythingHandled } from '../support/metrics.ts';
import { eventually, kubeClient, memoryLogger, runOperator, TEST_SECRET } from '../support/operator.ts';

const group = uniqueGroup('foreign');
const kind = { group, kind: 'Held', plural: 'helds' };
const FOREIGN = 'example.com/other-controller';
const OURS = 'causeway.dev/finalizer';

describe('another controller’s finalizer', () => {
  let client: KubeClient;
  before(async () => {
    client = await kubeClient();
    await applyManifests(client, [customResourceDefinition(kind)], { fieldManager: 'causeway-tests' });
  });

  it('runs the delete handler once, though the object stays and changes after our finalizer is off', async (t) => {
    const namespace = await testNamespace(t);
    const calls: string[] = [];
    const op = operator({ name: 'foreign', secret: TEST_SECRET });
    op.on.delete(`${kind.plural}.${group}`, async function delete_fn({ name, idempotencyKey }) {
      calls.push(`delete ${name} ${idempotencyKey}`);
    });
    // Every watch event the gateway sees, as it sees it.
    const seen: KubernetesObject[] = [];
    op.on.event(`${kind.plural}.${group}`, async function witness_fn({ body }) {
      seen.push(body as KubernetesObject);
    });
    const logger = memoryLogger();
    const running = await runOperator(op, { namespaces: [namespace], logger, metrics: '127.0.0.1:0' });
    t.after(() => running.stop());
    const path = `/apis/${group}/v1/namespaces/${namespace}/${kind.plural}/held`;
    const read = () => client.get<KubernetesObject>(path);
    // Then theirs, so that the namespace can go (the object may not exist if the test failed early).
    t.after(() =>
      client.patch(path, 'json', [{ op: 'remove', path: '/metadata/finalizers' }]).catch((error: unknown) => {
        if (!(error instanceof ApiError && error.status === 404)) throw error;
      }),
    );

    await client.request(`/apis/${group}/v1/namespaces/${namespace}/${kind.plural}`, {
      method: 'POST',
      body: {
        apiVersion: `${group}/v1`,
        kind: kind.kind,
        metadata: { name: 'held', finalizers: [FOREIGN] },
      },
    });
    const held = await eventually('our finalizer, after theirs', async () => {
      const object = await read();
      return object.metadata.finalizers?.includes(OURS) ? object : undefined;
    });
    assert.deepEqual(held.metadata.finalizers, [FOREIGN, OURS]);

    await client.request(path, { method: 'DELETE' });
    const released = await eventually('our finalizer to come off', async () => {
      const object = await read();
      return object.metadata.finalizers?.includes(OURS) ? undefined : object;
    });
    assert.ok(released.metadata.deletionTimestamp);
    assert.deepEqual(released.metadata.finalizers, [FOREIGN], 'theirs is left alone');

    // The held object changes; each change is an event for the gateway about an object being deleted.
    await client.patch(path, 'merge', { metadata: { labels: { poked: 'once' } } });
    await client.patch(path, 'merge', { metadata: { labels: { poked: 'twice' } } });
    // A repeated call would come from the cycle of either change: so, both shown to the gateway and
    // their cycles over. Removing their finalizer now would end the watch's interest in the object and
    // hide a call still due, so the wait comes first.
    await eventually('the gateway shown the second change', async () =>
      seen.some((body) => body.metadata.labels?.poked === 'twice') ? true : undefined,
    );
    await everythingHandled(running.gateway);
    assert.equal(calls.length, 1, `the delete handler once:\n${calls.join('\n')}\n${logger.lines.join('')}`);
    assert.match(calls[0] as string, /^delete held /);
  });
});
